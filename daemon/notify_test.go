package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// fakeNotify is a NOTIFY_SOCKET: a path in a temporary directory, or an abstract name.
func fakeNotify(t *testing.T, abstract bool) *net.UnixConn {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify")
	env := name
	if abstract {
		name = fmt.Sprintf("\x00uraid-test-notify-%d-%d", os.Getpid(), time.Now().UnixNano())
		env = "@" + name[1:]
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", env)
	return c
}

func notified(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := c.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// none says nothing more was sent.
func none(t *testing.T, c *net.UnixConn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	assert.Error(t, err, "unexpected notification %q", buf[:n])
}

func TestNotifyReadyStopping(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		t.Run(fmt.Sprint("abstract=", abstract), func(t *testing.T) {
			c := fakeNotify(t, abstract)
			n := &Notifier{}
			n.Ready("/dev/ublkb3")
			assert.Equal(t, "READY=1\nSTATUS=serving /dev/ublkb3", notified(t, c))
			n.Stopping()
			assert.Equal(t, "STOPPING=1", notified(t, c))
		})
	}
}

// TestNotifyStatus: the array's state changes reach systemd's STATUS= as they happen; a stop
// says STOPPING=1 and what it waits for.
func TestNotifyStatus(t *testing.T) {
	l := startLifecycle(t, newFakeDevice(true), Config{})
	c := fakeNotify(t, false)
	l.s.events.pump(l.s.a)
	defer l.s.events.stopPump()

	require.NoError(t, l.s.a.FailMember(l.members[0]))
	assert.Regexp(t, `^STATUS=member 0 \(.*m0\) failed`, notified(t, c))
	assert.Equal(t, "STATUS=degraded: running without member 0", notified(t, c))

	require.NoError(t, l.s.Stop())
	require.NoError(t, l.ended())
	assert.Equal(t, "STOPPING=1", notified(t, c))
	assert.Regexp(t, `^STATUS=stopping: waiting for the members' TRIMs`, notified(t, c))
	none(t, c) // array_stopped is no state systemd has to show: the unit stops
}

// TestNotifyProgressRate: a sync job's progress is sent at most every progressStatusEvery, its
// start and end always.
func TestNotifyProgressRate(t *testing.T) {
	c := fakeNotify(t, false)
	var n statusNotifier
	for i := 1; i <= 9; i++ {
		n.event(array.Event{Type: array.EventSyncProgress, Message: fmt.Sprintf("resync %d0%% done", i)})
	}
	assert.Equal(t, "STATUS=resync 10% done", notified(t, c))
	none(t, c)
	n.event(array.Event{Type: array.EventSyncFinished, Message: "resync done\nok"})
	assert.Equal(t, "STATUS=resync done ok", notified(t, c))
	n.lastProgress = time.Now().Add(-progressStatusEvery)
	n.event(array.Event{Type: array.EventSyncProgress, Message: "check 10% done"})
	assert.Equal(t, "STATUS=check 10% done", notified(t, c))
	n.event(array.Event{Type: EventStopped, Message: "stopped cleanly"})
	none(t, c)
}
