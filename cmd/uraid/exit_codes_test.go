package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExitCodes pins the exit status of every kind of call docs/cli.md names (Exit codes), and
// the first line each writes to stderr, in testdata/exit_codes.txt (-update rewrites it). --test's
// 1 and 2 for a degraded or failed array need a running one: TestDetailStatusExitCodes serves
// one; exit 75 needs a supervisor: the guest suite has it (tests/recovery_test.go).
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("URAID_RUN_DIR", filepath.Join(dir, "run"))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "run"), 0o700))
	files := map[string]int64{"M0": 8 << 20, "M1": 8 << 20, "LARGE": 10 << 20}
	for name, size := range files {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		f.Close()
	}
	// The JSON of a record whose daemon is gone: status must say so with its exit code.
	dead := `{"version":1,"name":"dead","pid":1073741824,"device_id":9,"device":"/dev/ublkb9","members":["/m0"]}`

	create := []string{"create", "x", "--foreground", "--level"}
	cases := []struct {
		args []string
		want int
		// dead: the run directory has the dead array's record.
		dead bool
	}{
		{[]string{}, exitUsage, false},
		{[]string{"--version"}, exitOK, false},
		{[]string{"version"}, exitOK, false},
		{[]string{"help"}, exitOK, false},
		{[]string{"completion", "bash"}, exitOK, false},
		{[]string{"frobnicate"}, exitUsage, false},
		{[]string{"version", "--bogus"}, exitUsage, false},
		{[]string{"version", "x"}, exitUsage, false},
		{[]string{"list", "x"}, exitUsage, false},
		{[]string{"list"}, exitOK, false},
		{[]string{"status"}, exitOK, false},
		{[]string{"status", "--json"}, exitOK, false},
		{[]string{"status"}, exitOK, true},
		{[]string{"status", "--json"}, exitOK, true},
		{[]string{"status", "dead"}, exitOK, true},
		{[]string{"status", "--test"}, exitOK, false},
		{[]string{"status", "--test"}, exitTestFailed, true},
		{[]string{"status", "--test", "dead"}, exitTestFailed, true},
		{[]string{"status", "nosuch"}, exitError, false},
		{[]string{"status", "--test", "nosuch"}, exitTestError, false},
		{[]string{"status", "a", "b"}, exitUsage, false},
		{[]string{"monitor", "--oneshot"}, exitOK, true},
		{[]string{"monitor", "--scan", "x"}, exitUsage, false},
		{[]string{"monitor", "--oneshot", "--program", "/nonexistent"}, exitError, false},
		{[]string{"status", "bad/name"}, exitUsage, false},
		{[]string{"detail"}, exitUsage, false},
		{[]string{"detail", "bad/name"}, exitUsage, false},
		{[]string{"detail", ".hidden"}, exitUsage, false},
		{[]string{"detail", "nosuch"}, exitError, false},
		{[]string{"detail", "--test", "nosuch"}, exitTestError, false},
		{[]string{"detail", "--test", "bad/name"}, exitUsage, false},
		{[]string{"detail", "dead"}, exitError, true},
		{[]string{"detail", "--test", "dead"}, exitTestFailed, true},
		{[]string{"stop", "nosuch"}, exitError, false},
		{[]string{"stop", "bad/name"}, exitUsage, false},
		{[]string{"stop", "/dev/sda"}, exitError, false},
		{[]string{"restart", "nosuch"}, exitError, false},
		{[]string{"restart", "bad/name"}, exitUsage, false},
		{[]string{"recover", "nosuch"}, exitError, false},
		{[]string{"recover", "bad/name"}, exitUsage, false},
		{[]string{"metrics"}, exitUsage, false},
		{[]string{"metrics", "--listen", "9105"}, exitUsage, false},
		{[]string{"examine"}, exitUsage, false},
		{[]string{"examine", "M0"}, exitError, false},
		{[]string{"examine", "/no/such/member"}, exitError, false},
		{[]string{"examine", "--scan", "--config", "/no/such/uraid.conf"}, exitError, false},
		{[]string{"examine", "--scan", "M0"}, exitUsage, false},
		{[]string{"assemble", "--scan", "--config", "/no/such/uraid.conf"}, exitError, false},
		{[]string{"assemble", "x", "--foreground", "M0", "M0"}, exitError, false},
		{[]string{"assemble", "x"}, exitUsage, false},
		{[]string{"assemble", "bad/name", "M0", "M1"}, exitUsage, false},
		{[]string{"assemble", "x", "--foreground", "M0", "M1"}, exitError, false},
		{[]string{"create", "x", "M0", "M1"}, exitUsage, false},
		{append(create, "5", "M0", "M1"), exitUsage, false},
		{append(create, "1", "M0"), exitUsage, false},
		{append(create, "1", "--chunk", "64K", "M0", "M1"), exitUsage, false},
		{append(create, "linear", "--chunk", "64K", "M0", "M1"), exitUsage, false},
		{append(create, "0", "--chunk", "3K", "M0", "M1"), exitUsage, false},
		{append(create, "0", "--chunk", "lots", "M0", "M1"), exitUsage, false},
		{append(create, "0", "--layout", "f2", "M0", "M1"), exitUsage, false},
		{append(create, "10", "--layout", "x9", "M0", "M1"), exitUsage, false},
		{append(create, "1", "--discard", "maybe", "M0", "M1"), exitUsage, false},
		{append(create, "1", "--trim-inflight", "65", "M0", "M1"), exitUsage, false},
		{append(create, "1", "--depth", "0", "M0", "M1"), exitUsage, false},
		{append(create, "1", "--metrics-listen", "9105", "M0", "M1"), exitUsage, false},
		{[]string{"create", "bad/name", "--level", "1", "M0", "M1"}, exitUsage, false},
		{append(create, "1", "M0", "LARGE"), exitError, false},
		{append(create, "1", "M0", "M0"), exitError, false},
		{append(create, "1", "--trim-exclusive", "/dev/sdz", "M0", "M1"), exitError, false},
		{append(create, "0", "--chunk", "0", "M0", "M1"), exitUsage, false},
		{append(create, "1", "--metrics-listen", ":99999", "M0", "M1"), exitUsage, false},
		{append(create, "0", "M0", "missing"), exitUsage, false},
		{append(create, "1", "missing", "missing"), exitUsage, false},
		{[]string{"grow", "x", "M0", "M1"}, exitUsage, false},
		{[]string{"grow", "bad/name", "--size", "max"}, exitUsage, false},
		{[]string{"grow", "x", "--size", "lots", "M0", "M1"}, exitUsage, false},
		{[]string{"grow", "x", "--size", "max", "M0", "M1"}, exitError, false},
		{[]string{"zero-superblock"}, exitUsage, false},
		{[]string{"zero-superblock", "M0", "M1"}, exitError, false},
		{[]string{"zero-superblock", "/no/such/member"}, exitError, false},
	}
	var golden strings.Builder
	for _, c := range cases {
		run := filepath.Join(dir, "run")
		if c.dead {
			require.NoError(t, os.WriteFile(filepath.Join(run, "dead.json"), []byte(dead), 0o600))
		} else {
			os.Remove(filepath.Join(run, "dead.json"))
		}
		args := make([]string, len(c.args))
		for i, a := range c.args {
			if _, ok := files[a]; ok {
				a = filepath.Join(dir, a)
			}
			args[i] = a
		}
		before := fileSums(t, []string{filepath.Join(dir, "M0"), filepath.Join(dir, "M1"), filepath.Join(dir, "LARGE")})
		code, _, errOut := runCLI(t, args...)
		assert.Equal(t, c.want, code, "uraid %s: %s", strings.Join(c.args, " "), errOut)
		assert.Equal(t, before, fileSums(t, []string{filepath.Join(dir, "M0"), filepath.Join(dir, "M1"), filepath.Join(dir, "LARGE")}),
			"uraid %s changed a member", strings.Join(c.args, " "))
		first, _, _ := strings.Cut(strings.ReplaceAll(errOut, dir, "$DIR"), "\n")
		if c.dead {
			first = "(depends on whether this kernel has ublk)"
		}
		fmt.Fprintf(&golden, "%d\turaid %s\n\t%s\n", code, strings.Join(c.args, " "), first)
	}
	goldenFile(t, "exit_codes.txt", []byte(golden.String()))
}
