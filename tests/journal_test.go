package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// journaldBin is systemd's journal daemon, which the guest runs the host's copy of.
const journaldBin = "/lib/systemd/systemd-journald"

// startJournald runs a real systemd-journald in the guest, which has no systemd of its own, and
// makes the guest look like a systemd host to uraid (/run/systemd/system) until the test ends,
// so that the daemons it starts meanwhile log to that journal. Everything is undone at cleanup:
// later tests' daemons log to their files again.
func startJournald(t *testing.T) {
	t.Helper()
	needGuest(t)
	if _, err := os.Stat(journaldBin); err != nil {
		t.Fatalf("%s: %v (install systemd on the host: the guest runs the host's binaries)", journaldBin, err)
	}
	_, err := os.Stat("/run/systemd/system")
	require.ErrorIs(t, err, os.ErrNotExist, "the guest already looks like a systemd host")
	// journald places its clients by cgroup: it needs the cgroup2 hierarchy the guest's init
	// does not mount.
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		sh(t, "mount", "-t", "cgroup2", "none", "/sys/fs/cgroup")
		t.Cleanup(func() { cleanupUnmount("/sys/fs/cgroup") })
	}
	require.NoError(t, os.MkdirAll("/run/systemd/system", 0o755))
	t.Cleanup(func() { os.RemoveAll("/run/systemd/system") })
	cmd := exec.Command(journaldBin)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll("/run/systemd/journal")
		if t.Failed() {
			t.Logf("systemd-journald said: %s", out.String())
		}
	})
	require.Eventually(t, func() bool {
		_, err1 := os.Stat("/run/systemd/journal/socket")
		_, err2 := os.Stat("/run/systemd/journal/stdout")
		return err1 == nil && err2 == nil
	}, slow*30*time.Second, 10*time.Millisecond, "journald did not open its sockets: %s", &out)
}

// journalEntries are journalctl's records that match (FIELD=value terms, -p ...), as JSON maps.
func journalEntries(t *testing.T, match ...string) []map[string]any {
	t.Helper()
	out, err := exec.Command("journalctl", append([]string{"--no-pager", "-o", "json"}, match...)...).Output()
	require.NoError(t, err, "journalctl %v", match)
	var entries []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		entries = append(entries, e)
	}
	return entries
}

// TestE2EDaemonLogsToJournald: on a systemd host, a daemon started by `uraid create` logs to the
// journal through its native protocol: `journalctl -p warning` finds the member failure at
// priority warning or worse, with the array, the event and the member as fields of their own, and
// `journalctl URAID_ARRAY=NAME` finds that array's records and no other's.
func TestE2EDaemonLogsToJournald(t *testing.T) {
	uraidBin(t)
	startJournald(t)
	name := "e2e-journal"
	ms := errorableMembers(t, 2, 64<<20)
	dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "1"}, ms.paths...)...))
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })

	ms.erroring(1)
	sh(t, "dd", "if=/dev/urandom", "of="+dev, "bs=64k", "count=16", "oflag=direct", "status=none")
	var failed map[string]any
	require.Eventually(t, func() bool {
		for _, e := range journalEntries(t, "-p", "warning", "URAID_ARRAY="+name) {
			if e["EVENT"] == array.EventMemberFailed {
				failed = e
				return true
			}
		}
		return false
	}, slow*time.Minute, 50*time.Millisecond, "no member_failed record at priority warning or worse for %s", name)
	t.Logf("member_failed in the journal: %v", failed)
	assert.Equal(t, "uraid", failed["SYSLOG_IDENTIFIER"])
	assert.Equal(t, "journal", failed["_TRANSPORT"], "sent over the native protocol, not as a stream of text")
	assert.Contains(t, []any{"0", "1", "2", "3", "4"}, failed["PRIORITY"])
	assert.Contains(t, failed["MESSAGE"], "member")
	assert.Equal(t, ms.paths[1], failed["PATH"], "the member's path is a field of its own")
	assert.Equal(t, "1", failed["MEMBER"])

	all := journalEntries(t, "URAID_ARRAY="+name)
	require.NotEmpty(t, all)
	for _, e := range all {
		assert.Equal(t, name, e["URAID_ARRAY"])
	}
	uraid(t, "stop", name)
	require.Eventually(t, func() bool {
		for _, e := range journalEntries(t, "URAID_ARRAY="+name) {
			if e["EVENT"] == "array_stopped" {
				return true
			}
		}
		return false
	}, slow*time.Minute, 50*time.Millisecond, "the stop is not in the journal")
}
