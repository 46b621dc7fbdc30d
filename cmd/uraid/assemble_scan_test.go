package main

import (
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
