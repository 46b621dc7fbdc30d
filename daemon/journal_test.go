package daemon

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/array"
)

// fakeJournal is a unixgram socket in a temporary directory that stands for journald's.
type fakeJournal struct {
	path string
	conn *net.UnixConn
	// memfd says the last datagram read carried its record in a memfd.
	memfd bool
}

func newFakeJournal(t *testing.T) *fakeJournal {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &fakeJournal{path: path, conn: conn}
}

// next reads one datagram (or the memfd it carries) and decodes its fields, in order.
func (j *fakeJournal) next(t *testing.T) [][2]string {
	t.Helper()
	buf, oob := make([]byte, 1<<20), make([]byte, 64)
	require.NoError(t, j.conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, oobn, _, _, err := j.conn.ReadMsgUnix(buf, oob)
	require.NoError(t, err)
	payload := buf[:n]
	j.memfd = oobn > 0
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		require.NoError(t, err)
		fds, err := unix.ParseUnixRights(&msgs[0])
		require.NoError(t, err)
		f := os.NewFile(uintptr(fds[0]), "memfd")
		defer f.Close()
		seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
		require.NoError(t, err)
		assert.NotZero(t, seals&unix.F_SEAL_WRITE, "journald takes only sealed memfds")
		_, err = f.Seek(0, 0)
		require.NoError(t, err)
		var b bytes.Buffer
		_, err = b.ReadFrom(f)
		require.NoError(t, err)
		payload = b.Bytes()
	}
	return decodeJournal(t, payload)
}

// decodeJournal parses the native protocol as journald does.
func decodeJournal(t *testing.T, p []byte) [][2]string {
	t.Helper()
	var out [][2]string
	for len(p) > 0 {
		nl := bytes.IndexByte(p, '\n')
		require.GreaterOrEqual(t, nl, 0, "field without a newline: %q", p)
		line := p[:nl]
		if eq := bytes.IndexByte(line, '='); eq >= 0 {
			out = append(out, [2]string{string(line[:eq]), string(line[eq+1:])})
			p = p[nl+1:]
			continue
		}
		p = p[nl+1:]
		require.GreaterOrEqual(t, len(p), 8)
		size := binary.LittleEndian.Uint64(p)
		p = p[8:]
		require.GreaterOrEqual(t, uint64(len(p)), size+1)
		out = append(out, [2]string{string(line), string(p[:size])})
		require.Equal(t, byte('\n'), p[size])
		p = p[size+1:]
	}
	return out
}

func journalLogger(t *testing.T, j *fakeJournal, level slog.Leveler) *slog.Logger {
	t.Helper()
	h, err := newJournalHandler(j.path, level)
	require.NoError(t, err)
	t.Cleanup(func() { h.conn.Close() })
	return slog.New(h)
}

func TestJournalFields(t *testing.T) {
	j := newFakeJournal(t)
	log := journalLogger(t, j, slog.LevelDebug)

	// A member_failed event as the hub logs it, through a logger tagged as served's is.
	member := 1
	h := newHub(log)
	h.publish(array.Event{Array: "data", Type: array.EventMemberFailed, Member: &member, Path: "/dev/sdb",
		Error: "read: input/output error", Message: "member 1 (/dev/sdb) failed: read: input/output error"})
	assert.Equal(t, [][2]string{
		{"PRIORITY", "4"}, // journalctl -p warning finds it
		{"MESSAGE", "member 1 (/dev/sdb) failed: read: input/output error"},
		{"SYSLOG_IDENTIFIER", "uraid"},
		{"URAID_ARRAY", "data"},
		{"EVENT", "member_failed"},
		{"MEMBER", "1"},
		{"PATH", "/dev/sdb"},
		{"ERROR", "read: input/output error"},
	}, j.next(t))

	// Levels, With, groups, keys journald would refuse, and a value with newlines.
	log = log.With("array", "data")
	log.Error("device failed", "reason", "queue 0\nstopped")
	assert.Equal(t, [][2]string{{"PRIORITY", "3"}, {"MESSAGE", "device failed"}, {"SYSLOG_IDENTIFIER", "uraid"},
		{"URAID_ARRAY", "data"}, {"REASON", "queue 0\nstopped"}}, j.next(t))
	log.Info("took over", "_private", 1, "9lives", true, "done-bytes", int64(5))
	assert.Equal(t, [][2]string{{"PRIORITY", "6"}, {"MESSAGE", "took over"}, {"SYSLOG_IDENTIFIER", "uraid"},
		{"URAID_ARRAY", "data"}, {"PRIVATE", "1"}, {"F_9LIVES", "true"}, {"DONE_BYTES", "5"}}, j.next(t))
	log.WithGroup("sync").Debug("line one\nline two", "rate", 3, slog.Group("last", "err", errors.New("boom")))
	assert.Equal(t, [][2]string{{"PRIORITY", "7"}, {"MESSAGE", "line one\nline two"}, {"SYSLOG_IDENTIFIER", "uraid"},
		{"URAID_ARRAY", "data"}, {"SYNC_RATE", "3"}, {"SYNC_LAST_ERR", "boom"}}, j.next(t))
}

func TestJournalLevel(t *testing.T) {
	j := newFakeJournal(t)
	log := journalLogger(t, j, nil) // info and up
	log.Debug("not sent")
	log.Warn("sent")
	f := j.next(t)
	assert.False(t, j.memfd)
	assert.Equal(t, [2]string{"MESSAGE", "sent"}, f[1])
}

// TestJournalLargeRecord: a record larger than a datagram may be goes as a sealed memfd.
func TestJournalLargeRecord(t *testing.T) {
	j := newFakeJournal(t)
	log := journalLogger(t, j, nil)
	big := strings.Repeat("x", 16<<20)
	log.Info("big", "blob", big)
	f := j.next(t)
	assert.True(t, j.memfd)
	require.Len(t, f, 4)
	assert.Equal(t, "BLOB", f[3][0])
	assert.Equal(t, len(big), len(f[3][1]))
}

func TestJournalField(t *testing.T) {
	for in, want := range map[string]string{"array": "ARRAY", "done_bytes": "DONE_BYTES", "a.b-c": "A_B_C",
		"__x": "X", "1st": "F_1ST", "": "F_", "é": "F_", strings.Repeat("k", 70): strings.Repeat("K", 64)} {
		assert.Equal(t, want, journalField(in), "%q", in)
	}
}
