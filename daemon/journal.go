package daemon

// journal.go is a slog.Handler that writes to systemd's journal over its native protocol, so
// that a daemon's records keep their priority and their attributes as fields: `journalctl -p
// warning` finds a member_failed event, `journalctl URAID_ARRAY=data` one array's records.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// JournalSocket is where journald takes native-protocol datagrams.
const JournalSocket = "/run/systemd/journal/socket"

// journalIdentifier is every record's SYSLOG_IDENTIFIER.
const journalIdentifier = "uraid"

// journalHandler sends each record as one datagram of KEY=value fields (journald's native
// protocol, systemd.journal-fields(7)). It is safe for concurrent use: a datagram is one write.
type journalHandler struct {
	conn  *net.UnixConn
	addr  *net.UnixAddr
	level slog.Leveler
	// fields are the encoded attributes of WithAttrs, prefix the groups of WithGroup (GROUP_).
	fields []byte
	prefix string
	// failed is set once a send failed, so that a journal gone away is reported once, on stderr.
	failed *sync.Once
}

// newJournalHandler logs to the journal at socket (JournalSocket but in tests) from level up.
func newJournalHandler(socket string, level slog.Leveler) (*journalHandler, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram"})
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	// journald reads datagrams of up to 8 MiB; ours are bounded by the socket's send buffer, which
	// Handle falls back from with a memfd.
	_ = conn.SetWriteBuffer(8 << 20)
	return &journalHandler{conn: conn, addr: &net.UnixAddr{Name: socket, Net: "unixgram"}, level: level, failed: &sync.Once{}}, nil
}

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool {
	least := slog.LevelInfo
	if h.level != nil {
		least = h.level.Level()
	}
	return l >= least
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	b := bytes.NewBuffer(append([]byte(nil), h.fields...))
	for _, a := range attrs {
		appendAttr(b, h.prefix, a)
	}
	h2.fields = b.Bytes()
	return &h2
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + journalField(name) + "_"
	return &h2
}

// journalPriority is syslog's priority for a slog level: error 3, warning 4, info 6, debug 7.
func journalPriority(l slog.Level) byte {
	switch {
	case l >= slog.LevelError:
		return '3'
	case l >= slog.LevelWarn:
		return '4'
	case l >= slog.LevelInfo:
		return '6'
	}
	return '7'
}

func (h *journalHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString("PRIORITY=")
	b.WriteByte(journalPriority(r.Level))
	b.WriteByte('\n')
	appendField(&b, "MESSAGE", r.Message)
	appendField(&b, "SYSLOG_IDENTIFIER", journalIdentifier)
	b.Write(h.fields)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	err := h.send(b.Bytes())
	if err != nil {
		h.failed.Do(func() {
			// The journal is the log: with it gone there is nowhere else to say so.
			os.Stderr.WriteString("uraid: journal: " + err.Error() + "; further records are lost\n")
		})
	}
	return err
}

// send writes one datagram; one too large for the socket goes as a sealed memfd, as
// sd_journal_send does.
func (h *journalHandler) send(p []byte) error {
	_, err := h.conn.WriteToUnix(p, h.addr)
	if !errors.Is(err, unix.EMSGSIZE) && !errors.Is(err, unix.ENOBUFS) {
		return err
	}
	fd, err := unix.MemfdCreate("uraid-journal", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "uraid-journal")
	defer f.Close()
	if _, err := f.Write(p); err != nil {
		return err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	_, _, err = h.conn.WriteMsgUnix(nil, unix.UnixRights(int(f.Fd())), h.addr)
	return err
}

// appendAttr encodes a as a field named after its key (in groups: GROUP_KEY); "array" is
// URAID_ARRAY, the field every record about an array carries.
func appendAttr(b *bytes.Buffer, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += journalField(a.Key) + "_"
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	name := prefix + journalField(a.Key)
	if prefix == "" && a.Key == "array" {
		name = "URAID_ARRAY"
	}
	var v string
	if a.Value.Kind() == slog.KindTime {
		v = a.Value.Time().Format("2006-01-02T15:04:05.999999999Z07:00")
	} else {
		v = a.Value.String()
	}
	appendField(b, name, v)
}

// appendField writes NAME=value, or, for a value with a newline, NAME, a newline, the value's
// length as 64-bit little endian, the value, and a newline (the protocol's binary-safe form).
func appendField(b *bytes.Buffer, name, value string) {
	b.WriteString(name)
	if !strings.Contains(value, "\n") {
		b.WriteByte('=')
		b.WriteString(value)
		b.WriteByte('\n')
		return
	}
	b.WriteByte('\n')
	_ = binary.Write(b, binary.LittleEndian, uint64(len(value)))
	b.WriteString(value)
	b.WriteByte('\n')
}

// journalField turns key into a field name journald accepts: upper case, only A-Z, 0-9 and _,
// not starting with _ (reserved for journald's own fields) or a digit, at most 64 bytes.
func journalField(key string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(key) {
		if (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "F_" + s
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}
