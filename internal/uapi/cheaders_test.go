package uapi

import (
	"bufio"
	"fmt"
	"go/constant"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil/gosrc"
)

// sysInclude holds the headers the cross-checks compile against: the
// machine's own, or those of another linux-libc-dev when
// URAID_UAPI_INCLUDE names its usr/include (unpacked with dpkg-deb -x), to
// check constants newer than the machine's headers.
var sysInclude = filepath.Join(includeRoot(), "linux")

func includeRoot() string {
	if dir := os.Getenv("URAID_UAPI_INCLUDE"); dir != "" {
		return dir
	}
	return "/usr/include"
}

// cProbe compiles src with the system headers and returns its output
// lines split into fields, skipping the test when there is no compiler or
// no headers.
func cProbe(t *testing.T, src string) [][]string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler: install gcc to cross-check against the kernel headers")
	}
	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "probe.c"), filepath.Join(dir, "probe")
	require.NoError(t, os.WriteFile(cfile, []byte(src), 0o600))
	args := []string{"-o", bin, cfile}
	if root := includeRoot(); root != "/usr/include" {
		// linux-libc-dev keeps asm/ under the multiarch directory.
		args = append(args, "-I", root, "-I", filepath.Join(root, "x86_64-linux-gnu"))
	}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("compile probe: %v\n%s\n%s", err, out, src)
	}
	out, err := exec.Command(bin).Output()
	require.NoError(t, err)
	var lines [][]string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		lines = append(lines, strings.Fields(sc.Text()))
	}
	return lines
}

func readHeaders(t *testing.T) map[string]string {
	t.Helper()
	headers := map[string]string{}
	for _, h := range []string{"io_uring.h", "ublk_cmd.h"} {
		b, err := os.ReadFile(filepath.Join(sysInclude, h))
		if err != nil {
			t.Skipf("no %s/%s: install linux-libc-dev to cross-check against the kernel headers", sysInclude, h)
		}
		headers[h] = string(b)
	}
	return headers
}

// TestConstantsAgainstSystemHeaders evaluates every kernel-named constant
// of this package with go/types and compares it with the value the C
// compiler gives the same name in the machine's headers. Names the headers
// do not have (newer than them) are left to the literal tests.
func TestConstantsAgainstSystemHeaders(t *testing.T) {
	headers := readHeaders(t)
	all := headers["io_uring.h"] + headers["ublk_cmd.h"]

	pkg := gosrc.Check(t, ".", "uapi")

	// Names the headers define: a #define, or an enum member on a line of
	// its own.
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)(?:#define\s+([A-Z][A-Z0-9_]+))|(?:^\s*([A-Z][A-Z0-9_]+)\s*(?:,|=|$))`).FindAllStringSubmatch(all, -1) {
		defined[m[1]+m[2]] = true
	}
	kernelName := regexp.MustCompile(`^(UBLK|UBLKSRV|IORING|IOSQE|BLOCK)_[A-Z0-9_]+$`)
	want := map[string]string{}
	var newer []string
	var src strings.Builder
	src.WriteString("#include <errno.h>\n#include <stdio.h>\n#include <linux/io_uring.h>\n#include <linux/ublk_cmd.h>\nint main(void) {\n")
	for _, name := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(name).(*types.Const)
		// The *_LAST enum sentinels grow with every kernel.
		if !ok || !kernelName.MatchString(name) || strings.HasSuffix(name, "_LAST") {
			continue
		}
		if !defined[name] {
			newer = append(newer, name)
			continue
		}
		want[name] = c.Val().ExactString()
		if constant.Sign(c.Val()) < 0 {
			fmt.Fprintf(&src, "\tprintf(\"%s %%lld\\n\", (long long)(%s));\n", name, name)
		} else {
			fmt.Fprintf(&src, "\tprintf(\"%s %%llu\\n\", (unsigned long long)(%s));\n", name, name)
		}
	}
	src.WriteString("\treturn 0;\n}\n")
	require.Greater(t, len(want), 100, "too few constants matched the headers: the probe patterns are broken")

	lines := cProbe(t, src.String())
	require.Len(t, lines, len(want))
	for _, l := range lines {
		require.Len(t, l, 2)
		assert.Equal(t, l[1], want[l[0]], "%s: C %s, Go %s", l[0], l[1], want[l[0]])
	}
	t.Logf("checked %d constants against %s", len(want), sysInclude)
	if len(newer) > 0 {
		// Not a pass for them: these values were checked by no compiler here.
		t.Logf("NOT checked: %d names that io_uring.h and ublk_cmd.h in %s lack (newer than them, or from "+
			"another header); set URAID_UAPI_INCLUDE to the usr/include of a newer linux-libc-dev to check "+
			"them: %s", len(newer), sysInclude, strings.Join(newer, " "))
	}
}

// TestLayoutAgainstSystemHeaders compiles a C program against the
// machine's kernel headers and compares every size and offset the headers
// know about with the Go layout. Headers older than 6.12 lack some members
// (owner_uid, dev_path_len, ublk_param_devt...): those are left to
// TestStructLayout, and a struct's size is only compared when all of its
// members were found.
func TestLayoutAgainstSystemHeaders(t *testing.T) {
	headers := readHeaders(t)
	headerOf := func(cstruct string) string {
		if strings.HasPrefix(cstruct, "ublk") {
			return "ublk_cmd.h"
		}
		return "io_uring.h"
	}

	type probe struct{ cstruct, member string }
	var (
		src      strings.Builder
		want     = map[probe]uintptr{}
		probed   int
		complete = map[string]bool{}
	)
	src.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include <linux/io_uring.h>\n#include <linux/ublk_cmd.h>\nint main(void) {\n")
	for _, l := range layouts() {
		h := headers[headerOf(l.cstruct)]
		if strings.Contains(l.cstruct, "(") || !regexp.MustCompile(`struct\s+`+l.cstruct+`\s*\{`).MatchString(h) {
			continue
		}
		all := true
		for _, f := range l.fields {
			member := regexp.MustCompile(`\b` + regexp.QuoteMeta(f.name) + `\s*(\[[^]]*\])?\s*;`)
			if strings.Contains(f.name, "(") || !member.MatchString(h) {
				all = false
				continue
			}
			fmt.Fprintf(&src, "\tprintf(\"%s %s %%zu\\n\", offsetof(struct %s, %s));\n", l.cstruct, f.name, l.cstruct, f.name)
			want[probe{l.cstruct, f.name}] = f.got
			probed++
		}
		if all {
			complete[l.cstruct] = true
			fmt.Fprintf(&src, "\tprintf(\"%s sizeof %%zu\\n\", sizeof(struct %s));\n", l.cstruct, l.cstruct)
			want[probe{l.cstruct, "sizeof"}] = l.size
		}
	}
	src.WriteString("\treturn 0;\n}\n")
	require.NotZero(t, probed, "the headers matched no struct: the probe patterns are broken")

	seen := 0
	for _, parts := range cProbe(t, src.String()) {
		require.Len(t, parts, 3)
		c, err := strconv.ParseUint(parts[2], 10, 64)
		require.NoError(t, err)
		p := probe{parts[0], parts[1]}
		assert.Equal(t, want[p], uintptr(c), "%s.%s: Go %d, C %d", p.cstruct, p.member, want[p], c)
		seen++
	}
	assert.Equal(t, len(want), seen)
	t.Logf("checked %d members and %d sizes against %s", probed, len(complete), sysInclude)
}
