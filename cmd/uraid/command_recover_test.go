package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
)

// deadRecord leaves the record of an array whose daemon has died, as a kill -9 would.
func deadRecord(t *testing.T, dir, name string, members []string) {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	b, err := json.Marshal(daemon.Record{Version: daemon.RecordVersion, Name: name, PID: cmd.Process.Pid,
		DeviceID: 7, Device: "/dev/ublkb7", Members: members, Options: daemon.RecordedOptions{Queues: 1, Depth: 8, DiscardMode: "sync"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), b, 0o600))
}

// TestRecoveryCommandsRefuse: recover, restart, stop and assemble --recover refuse what they
// cannot do with exit 1 or 2, a message that says why, and no change to any member.
func TestRecoveryCommandsRefuse(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("URAID_RUN_DIR", dir)
	ms := memberFiles(t, 3, 8<<20)
	cms, _, err := createOnly(ms[:2])
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	deadRecord(t, dir, "arr", ms[:2])
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"recover without a record", []string{"recover", "nosuch"}, exitError, "no record of the array"},
		{"recover a bad name", []string{"recover", "a/b"}, exitUsage, "name"},
		{"recover without a name", []string{"recover"}, exitUsage, "accepts 1 arg"},
		{"restart what does not run", []string{"restart", "nosuch"}, exitError, "not running"},
		{"stop a path that is no ublk device", []string{"stop", "/dev/sda"}, exitError, "not a ublk block device"},
		{"assemble --recover from other members", []string{"assemble", "arr", "--recover", "--foreground", ms[0], ms[2]}, exitError,
			ms[1] + " is not among those given"},
		{"create over a dead array's name", []string{"create", "arr", "--level", "1", "--force", ms[0], ms[2]}, exitError,
			"cannot say whether its device /dev/ublkb7 is still there"},
		{"assemble over a dead array's name", []string{"assemble", "arr", ms[0], ms[1]}, exitError,
			"cannot say whether its device /dev/ublkb7 is still there"},
		{"serve --recover with members", []string{"serve", "--recover", "arr", ms[0]}, exitUsage, "name only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fileSums(t, ms)
			code, out, errOut := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.msg)
			assert.Equal(t, before, fileSums(t, ms), "members changed")
		})
	}
	_, err = os.Stat(filepath.Join(dir, "arr.json"))
	assert.NoError(t, err, "a record whose device cannot be checked is kept")
}

// status and list show an array whose daemon died, from its record; status exits 0 as it reports,
// and 2 with --test (not answering: unusable until recovered).
func TestStatusShowsDeadDaemon(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("URAID_RUN_DIR", dir)
	deadRecord(t, dir, "gone", []string{"/x/m0", "/x/m1"})
	for _, args := range [][]string{{"status"}, {"status", "gone"}} {
		code, out, _ := runCLI(t, args...)
		assert.Equal(t, exitOK, code, "%v", args)
		assert.Contains(t, out, "gone : not answering: daemon ")
		assert.Contains(t, out, "/dev/ublkb7")
		code, _, _ = runCLI(t, append(args, "--test")...)
		assert.Equal(t, exitTestFailed, code, "%v --test", args)
	}
	code, out, _ := runCLI(t, "list")
	assert.Equal(t, exitOK, code)
	assert.Regexp(t, `gone\s+/dev/ublkb7\s+-\s+not answering: daemon \d+ died`, out)
	code, _, errOut := runCLI(t, "detail", "gone")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "array gone is not running: not answering: daemon")
	code, _, _ = runCLI(t, "detail", "--test", "gone")
	assert.Equal(t, exitTestFailed, code, "detail --test: an array whose daemon died is unusable")
}
