package uapi

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sysInclude = "/usr/include/linux"

// TestLayoutAgainstSystemHeaders compiles a C program against the
// machine's kernel headers and compares every size and offset the headers
// know about with the Go layout. Headers older than 6.12 lack some members
// (owner_uid, dev_path_len, ublk_param_devt...): those are left to
// TestStructLayout, and a struct's size is only compared when all of its
// members were found.
func TestLayoutAgainstSystemHeaders(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler: install gcc to cross-check layouts against the kernel headers")
	}
	headers := map[string]string{}
	for _, h := range []string{"io_uring.h", "ublk_cmd.h"} {
		b, err := os.ReadFile(filepath.Join(sysInclude, h))
		if err != nil {
			t.Skipf("no %s/%s: install linux-libc-dev to cross-check layouts", sysInclude, h)
		}
		headers[h] = string(b)
	}
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

	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	require.NoError(t, os.WriteFile(cfile, []byte(src.String()), 0o600))
	if out, err := exec.Command(cc, "-o", bin, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compile layout probe: %v\n%s\n%s", err, out, src.String())
	}
	out, err := exec.Command(bin).Output()
	require.NoError(t, err)

	seen := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
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
