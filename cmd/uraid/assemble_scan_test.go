package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
	"uraid/raid"
)

// TestAssembleScanUsage: the flags that go with --scan only, and --foreground without a name.
func TestAssembleScanUsage(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"assemble", "--scan", "--foreground"}, "name it"},
		{[]string{"assemble", "a", "/x", "--wait", "5s"}, "go with --scan"},
		{[]string{"assemble", "--scan", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"assemble", "--scan", "--log-format", "xml"}, "--log-format"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// TestAssembleScanRefusals: over member files a config names (and no block device), an
// incomplete array is not assembled and fails the scan, naming --degraded; two arrays of one
// name are refused; a scan that finds nothing exits 0.
func TestAssembleScanRefusals(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	old := sysBlock
	sysBlock = t.TempDir()
	t.Cleanup(func() { sysBlock = old })
	conf := filepath.Join(t.TempDir(), "uraid.conf")
	writeConf := func(paths ...string) {
		require.NoError(t, os.WriteFile(conf, []byte(strings.Join(paths, "\n")+"\n"), 0o644))
	}
	writeConf()
	code, out, errOut := runCLI(t, "assemble", "--scan", "--config", conf)
	assert.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no uraid member found")

	mk := func(name string) []string {
		ps := memberFiles(t, 2, 8<<20)
		ms, _, err := raid.Create(raid.CreateOptions{Name: name, Level: mapping.RAID1, Size: 4 << 20, Members: ps})
		require.NoError(t, err)
		for _, m := range ms {
			m.Close()
		}
		return ps
	}
	a := mk("half")
	writeConf(a[0])
	before := fileSums(t, a)
	code, out, errOut = runCLI(t, "assemble", "--scan", "--config", conf)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "array half: not assembled")
	assert.Contains(t, errOut, "--degraded")
	code, _, errOut = runCLI(t, "assemble", "--scan", "other", "--config", conf)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "array other: no member found")
	assert.Contains(t, errOut, "found arrays half")

	b := mk("half")
	writeConf(append(a, b...)...)
	code, _, errOut = runCLI(t, "assemble", "--scan", "--config", conf)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "two arrays are called half")
	assert.Equal(t, before, fileSums(t, a), "nothing written")
}

// TestAssembleScanConfig: a --config that does not exist is an error (the default's absence is
// not); with ARRAY lines only the arrays listed are assembled, which settles two arrays of one
// name; a bad line is refused with its line number, before anything is read or written.
func TestAssembleScanConfig(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	old := sysBlock
	sysBlock = t.TempDir()
	t.Cleanup(func() { sysBlock = old })
	code, _, errOut := runCLI(t, "assemble", "--scan", "--config", "/nonexistent/uraid.conf")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "config /nonexistent/uraid.conf: no such configuration file: name an existing file")

	mk := func(name string) ([]string, raid.UUID) {
		ps := memberFiles(t, 2, 8<<20)
		ms, sbs, err := raid.Create(raid.CreateOptions{Name: name, Level: mapping.RAID1, Size: 4 << 20, Members: ps})
		require.NoError(t, err)
		for _, m := range ms {
			m.Close()
		}
		return ps, sbs[0].ArrayUUID
	}
	a, ua := mk("half")
	b, ub := mk("half")
	before := fileSums(t, append(a, b...))
	conf := filepath.Join(t.TempDir(), "uraid.conf")
	write := func(lines ...string) {
		require.NoError(t, os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	// Only a's first member is there: listed, it is refused as incomplete, and b, not listed, is
	// left alone instead of making the name ambiguous.
	write("ARRAY half UUID="+ua.String()+" devices="+a[0], b[0], b[1])
	code, out, errOut := runCLI(t, "assemble", "--scan", "--config", conf)
	assert.Equal(t, exitError, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "array half ("+ub.String()+"): not in "+conf+"'s ARRAY lines, left alone")
	assert.Contains(t, errOut, "array half: not assembled")
	assert.NotContains(t, errOut, "two arrays are called half")
	// Named, an array no line lists is refused as such (as systemd's unit names it at boot).
	write("ARRAY other UUID="+ub.String(), a[0])
	code, _, errOut = runCLI(t, "assemble", "--scan", "half", "--config", conf)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "array half ("+ua.String()+"): not assembled: "+conf+" has ARRAY lines and none lists it")

	// Listed under another name: refused, with the line to write.
	write("ARRAY other UUID=" + ua.String() + " devices=" + a[0])
	code, _, errOut = runCLI(t, "assemble", "--scan", "--config", conf)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "config "+conf+":1 names it other, but its members call it half: uraid does not rename arrays: write ARRAY half UUID="+ua.String())

	write(a[0], "ARRAY half")
	code, _, errOut = runCLI(t, "assemble", "--scan", "--config", conf)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "config "+conf+":2: ARRAY half has no UUID=")
	assert.Equal(t, before, fileSums(t, append(a, b...)), "nothing written")
}

// TestExamineScan: examine --scan prints an ARRAY line per array found, with its member files,
// that assemble --scan reads back; pinned in testdata/examine_scan.txt.
func TestExamineScan(t *testing.T) {
	old := sysBlock
	sysBlock = t.TempDir()
	t.Cleanup(func() { sysBlock = old })
	dir := t.TempDir()
	var uuids []string
	for _, name := range []string{"alpha", "beta"} {
		var ps []string
		for i := range 2 {
			p := filepath.Join(dir, fmt.Sprintf("%s%d", name, i))
			require.NoError(t, os.WriteFile(p, nil, 0o600))
			require.NoError(t, os.Truncate(p, 8<<20))
			ps = append(ps, p)
		}
		ms, sbs, err := raid.Create(raid.CreateOptions{Name: name, Level: mapping.RAID1, Size: 4 << 20, Members: ps})
		require.NoError(t, err)
		for _, m := range ms {
			m.Close()
		}
		uuids = append(uuids, sbs[0].ArrayUUID.String())
	}
	conf := filepath.Join(dir, "uraid.conf")
	require.NoError(t, os.WriteFile(conf, []byte(dir+"/*[01]\n"), 0o644))
	code, out, errOut := runCLI(t, "examine", "--scan", "--config", conf)
	require.Equal(t, exitOK, code, errOut)
	golden := strings.NewReplacer(dir, "$DIR", uuids[0], "$UUID_ALPHA", uuids[1], "$UUID_BETA").Replace(out)
	goldenFile(t, "examine_scan.txt", []byte(golden))

	// Appended to the configuration (twice, as a careless operator would), it parses.
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(out + out)
	require.NoError(t, err)
	f.Close()
	c, err := raid.ReadConfig(conf, true)
	require.NoError(t, err)
	assert.Len(t, c.Arrays, 2)

	for _, args := range [][]string{{"examine", "--scan", "x"}, {"examine", "--scan", "--json"}, {"examine", "--config", conf, "x"}} {
		code, _, errOut := runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	code, _, errOut = runCLI(t, "examine", "--scan", "--config", "/nonexistent.conf")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no such configuration file")
}

// TestAssembleMemberNamedTwice: a member named twice, also under another name of the same file,
// is refused as such (not blamed on another process holding it), and nothing is written.
func TestAssembleMemberNamedTwice(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	ps := memberFiles(t, 2, 8<<20)
	ms, _, err := raid.Create(raid.CreateOptions{Name: "twice", Level: mapping.RAID1, Size: 4 << 20, Members: ps})
	require.NoError(t, err)
	for _, m := range ms {
		m.Close()
	}
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(ps[0], link))
	before := fileSums(t, ps)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{ps[0], ps[0], ps[1]}, "member " + ps[0] + " is named twice: name each member once"},
		{[]string{ps[0], ps[1], link}, "member " + link + " is named twice (also as " + ps[0] + ", the same file): name each member once"},
	} {
		code, _, errOut := runCLI(t, append([]string{"assemble", "twice", "--foreground"}, tt.args...)...)
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, tt.want)
		assert.NotContains(t, errOut, "another uraid process")
	}
	assert.Equal(t, before, fileSums(t, ps), "nothing written")
}

// TestDegradedHintOnce: an incomplete mirror's refusal says once how to run it anyway, whether its
// members were named or scanned; a raid0's, which cannot run degraded, does not suggest it.
func TestDegradedHintOnce(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	old := sysBlock
	sysBlock = t.TempDir()
	t.Cleanup(func() { sysBlock = old })
	mk := func(name string, level mapping.Level) []string {
		ps := memberFiles(t, 2, 8<<20)
		ms, _, err := raid.Create(raid.CreateOptions{Name: name, Level: level, Size: 4 << 20, Members: ps})
		require.NoError(t, err)
		for _, m := range ms {
			m.Close()
		}
		return ps
	}
	mirror, stripe := mk("mirror", mapping.RAID1), mk("stripe", mapping.RAID0)
	conf := filepath.Join(t.TempDir(), "uraid.conf")
	require.NoError(t, os.WriteFile(conf, []byte(mirror[0]+"\n"), 0o644))
	for _, tt := range []struct {
		args []string
		hint string
	}{
		{[]string{"assemble", "mirror", "--foreground", mirror[0]}, "name every member, or assemble with --degraded"},
		{[]string{"assemble", "--scan", "--config", conf}, "it starts once every member is there, or assemble with --degraded"},
	} {
		code, _, errOut := runCLI(t, tt.args...)
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, tt.hint, "%v", tt.args)
		assert.Equal(t, 1, strings.Count(errOut, "degraded"), "%v: %s", tt.args, errOut)
	}
	code, _, errOut := runCLI(t, "assemble", "stripe", "--foreground", stripe[0])
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "level 0 has no redundancy")
	assert.NotContains(t, errOut, "degraded")
}
