package daemon

// logsink.go chooses where a daemon logs: the journal when there is one (native protocol,
// journal.go), else the log file a detached daemon was given, rotated at a size, else stderr.

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Where journald and systemd are; variables so that tests can put fakes in their place.
var (
	journalSocket = JournalSocket
	// journalStdout takes log streams (a unit's stdout and stderr), as systemd-journald.service
	// listens for them.
	journalStdout = "/run/systemd/journal/stdout"
	// systemdRunning exists while systemd is the init (sd_booted).
	systemdRunning = "/run/systemd/system"
)

// logFileEnv names the log file a detached daemon's stderr is (Spawn sets it), which the daemon
// rotates at logFileLimit, keeping one previous file, NAME.log.1.
const logFileEnv = "URAID_LOG_FILE"

// logFileLimit is the size at which a detached daemon's log file is rotated.
const logFileLimit = 8 << 20

// journalPresent says journald listens and systemd is the init: a detached daemon logs there.
func journalPresent() bool {
	_, err1 := os.Stat(journalSocket)
	_, err2 := os.Stat(systemdRunning)
	return err1 == nil && err2 == nil
}

// stderrIsJournal says fd 2 is the stream JOURNAL_STREAM names ("DEVICE:INODE"), as systemd
// sets it for a unit whose output goes to the journal, and Spawn for a detached daemon.
func stderrIsJournal() bool {
	dev, ino, ok := strings.Cut(os.Getenv("JOURNAL_STREAM"), ":")
	if !ok {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(2, &st); err != nil {
		return false
	}
	return dev == strconv.FormatUint(st.Dev, 10) && ino == strconv.FormatUint(st.Ino, 10)
}

// NewDaemonLogger is the logger of the daemon this process is about to become, in format
// (LogText or LogJSON) where it writes text:
//   - the journal, through its native protocol (priorities and fields; format does not apply),
//     when stderr is the journal or systemd runs this process (INVOCATION_ID) and journald
//     listens;
//   - the log file Spawn gave a detached daemon as its stderr, rotated at logFileLimit;
//   - stderr.
func NewDaemonLogger(format string) (*slog.Logger, error) {
	if _, err := NewLogger(io.Discard, format); err != nil {
		return nil, err
	}
	path := os.Getenv(logFileEnv)
	os.Unsetenv(logFileEnv) // not for the daemon's own children
	if stderrIsJournal() || (os.Getenv("INVOCATION_ID") != "" && journalPresent()) {
		if h, err := newJournalHandler(journalSocket, nil); err == nil {
			return slog.New(h), nil
		}
	}
	if path != "" {
		if w, err := newRotatingLog(path, os.Stderr, logFileLimit); err == nil {
			return NewLogger(w, format)
		}
	}
	return NewLogger(os.Stderr, format)
}

// daemonOutput is what Spawn gives a detached daemon as stdout and stderr, the environment that
// says what it is, and where to look for what the daemon said: a stream to the journal where
// there is one (the daemon sees JOURNAL_STREAM match its stderr and logs natively), else the
// array's log file in RunDir.
func daemonOutput(name string) (f *os.File, env []string, where string, err error) {
	if journalPresent() {
		if f, env, err := journalStream(journalStdout); err == nil {
			// Not URAID_ARRAY=: what a daemon says before its logger is up (a panic) has no fields.
			return f, env, "journalctl -t " + journalIdentifier, nil
		}
	}
	f, err = os.OpenFile(LogPath(name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, "", err
	}
	return f, []string{logFileEnv + "=" + LogPath(name)}, LogPath(name), nil
}

// journalStream connects to journald's stream socket at path as a unit's stderr is: what the
// daemon writes there unstructured (a Go panic) lands in the journal at priority error.
func journalStream(path string) (*os.File, []string, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	// identifier, unit, priority, level prefix, forward to syslog, kmsg, console.
	if _, err := io.WriteString(c, journalIdentifier+"\n\n3\n0\n0\n0\n0\n"); err != nil {
		return nil, nil, err
	}
	if err := c.CloseRead(); err != nil {
		return nil, nil, err
	}
	f, err := c.File()
	if err != nil {
		return nil, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, nil, os.NewSyscallError("fstat", err)
	}
	return f, []string{fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino)}, nil
}

// rotatingLog writes to f, which holds path open for appending, and once path would grow past
// limit renames it to path.1 (replacing the previous one) and puts a new path in f's descriptor,
// so that whatever else writes there (to stderr: a panic) follows. Safe for concurrent use.
type rotatingLog struct {
	path  string
	limit int64

	f    *os.File
	mu   sync.Mutex // guards size and the rotation
	size int64
}

// newRotatingLog rotates path, which f must be open on.
func newRotatingLog(path string, f *os.File, limit int64) (*rotatingLog, error) {
	// Made absolute now: the daemon moves to / (leaveWorkingDir) before it logs much.
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var st, pst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, os.NewSyscallError("fstat", err)
	}
	if err := unix.Stat(path, &pst); err != nil {
		return nil, os.NewSyscallError("stat", err)
	}
	if st.Dev != pst.Dev || st.Ino != pst.Ino {
		return nil, fmt.Errorf("log file %s is not %s", path, f.Name())
	}
	return &rotatingLog{path: path, limit: limit, f: f, size: st.Size}, nil
}

func (r *rotatingLog) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.size > 0 && r.size+int64(len(p)) > r.limit {
		// A rotation that fails leaves the log growing rather than losing it.
		if err := r.rotate(); err == nil {
			r.size = 0
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingLog) rotate() error {
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return err
	}
	nf, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer nf.Close()
	return os.NewSyscallError("dup3", unix.Dup3(int(nf.Fd()), int(r.f.Fd()), 0))
}
