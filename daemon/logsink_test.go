package daemon

import (
	"bufio"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSystemd puts a fake journal (both its sockets) and a fake systemd in place for this test.
func fakeSystemd(t *testing.T) (*fakeJournal, *net.UnixListener) {
	t.Helper()
	j := newFakeJournal(t)
	dir := t.TempDir()
	stream, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "stdout"), Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { stream.Close() })
	oldSocket, oldStdout, oldSystemd := journalSocket, journalStdout, systemdRunning
	journalSocket, journalStdout, systemdRunning = j.path, filepath.Join(dir, "stdout"), dir
	t.Cleanup(func() { journalSocket, journalStdout, systemdRunning = oldSocket, oldStdout, oldSystemd })
	return j, stream
}

// noJournal makes this test's daemons see no systemd, wherever the tests run.
func noJournal(t *testing.T, dir string) {
	old := systemdRunning
	systemdRunning = filepath.Join(dir, "no-systemd")
	t.Cleanup(func() { systemdRunning = old })
}

// TestDaemonLoggerUnderSystemd: a daemon systemd runs (INVOCATION_ID) logs to the journal even
// when its stderr is not the journal; without systemd, or without the variable, to stderr.
func TestDaemonLoggerUnderSystemd(t *testing.T) {
	j, _ := fakeSystemd(t)
	t.Setenv("JOURNAL_STREAM", "")
	t.Setenv(logFileEnv, "")
	t.Setenv("INVOCATION_ID", "0123")
	log, err := NewDaemonLogger(LogJSON)
	require.NoError(t, err)
	_, ok := log.Handler().(*journalHandler)
	require.True(t, ok, "journal handler")
	log.Error("device failed", "array", "data")
	f := j.next(t)
	assert.Contains(t, f, [2]string{"PRIORITY", "3"})
	assert.Contains(t, f, [2]string{"URAID_ARRAY", "data"})

	t.Setenv("INVOCATION_ID", "")
	log, err = NewDaemonLogger(LogText)
	require.NoError(t, err)
	_, ok = log.Handler().(*slog.TextHandler)
	assert.True(t, ok, "stderr, as text")
	_, err = NewDaemonLogger("xml")
	assert.Error(t, err)
}

// TestSpawnLogsToJournal: where journald runs, a detached daemon's stderr is a journal stream
// (with uraid's header) and the daemon, seeing JOURNAL_STREAM match it, logs natively; no log
// file is made.
func TestSpawnLogsToJournal(t *testing.T) {
	dir := useRunDir(t)
	j, stream := fakeSystemd(t)
	t.Setenv("DAEMON_TEST_CHILD", "log")
	t.Setenv("DAEMON_TEST_JOURNAL", j.path)
	header := make(chan string, 1)
	go func() {
		c, err := stream.Accept()
		if err != nil {
			header <- err.Error()
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		var lines []string
		for range 7 {
			l, _ := r.ReadString('\n')
			lines = append(lines, l)
		}
		header <- strings.Join(lines, "")
	}()
	exe, err := os.Executable()
	require.NoError(t, err)
	dev, err := Spawn("sp", exe, []string{"-test.run=^$"}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "/dev/ublkb7", dev)
	assert.Equal(t, "uraid\n\n3\n0\n0\n0\n0\n", <-header)
	f := j.next(t)
	assert.Contains(t, f, [2]string{"PRIORITY", "4"})
	assert.Contains(t, f, [2]string{"URAID_ARRAY", "sp"})
	assert.Contains(t, f, [2]string{"ENV", ""}, "URAID_LOG_FILE is not set with the journal")
	_, err = os.Stat(filepath.Join(dir, "sp.log"))
	assert.True(t, os.IsNotExist(err), "no log file beside the journal")
}

// TestSpawnLogsToFile: without a journal the daemon logs text to RunDir/NAME.log, which it knows
// to rotate.
func TestSpawnLogsToFile(t *testing.T) {
	dir := useRunDir(t)
	noJournal(t, dir)
	t.Setenv("DAEMON_TEST_CHILD", "log")
	exe, err := os.Executable()
	require.NoError(t, err)
	_, err = Spawn("sp", exe, []string{"-test.run=^$"}, 10*time.Second)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "sp.log"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `level=WARN msg="member failed" array=sp env=""`)
}

func TestRotatingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("0123456789\n") // from an earlier daemon: counted
	require.NoError(t, err)
	w, err := newRotatingLog(path, f, 32)
	require.NoError(t, err)
	write := func(s string) {
		_, err := w.Write([]byte(s))
		require.NoError(t, err)
	}
	write("aaaaaaaaaa\n")
	write("bbbbbbbbbb\n") // 33 bytes: rotates first
	read := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "0123456789\naaaaaaaaaa\n", read(path+".1"))
	assert.Equal(t, "bbbbbbbbbb\n", read(path))
	// The descriptor itself now holds the new file: other writers to it (a panic on stderr)
	// follow the rotation.
	_, err = f.WriteString("panic\n")
	require.NoError(t, err)
	assert.Equal(t, "bbbbbbbbbb\npanic\n", read(path))
	write("cccccccccc\n")
	write("dddddddddd\n") // one previous file is kept
	assert.Equal(t, "bbbbbbbbbb\npanic\ncccccccccc\n", read(path+".1"))
	assert.Equal(t, "dddddddddd\n", read(path))
	_, err = os.Stat(path + ".2")
	assert.True(t, os.IsNotExist(err))

	// A record larger than the limit is written whole.
	write(strings.Repeat("e", 40) + "\n")
	assert.Equal(t, 41, len(read(path)))

	_, err = newRotatingLog(filepath.Join(t.TempDir(), "other"), f, 32)
	assert.Error(t, err, "a path the descriptor is not open on")
}
