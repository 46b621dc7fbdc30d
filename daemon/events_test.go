package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/internal/testutil"
)

// subscribers counts h's watchers.
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func recv(t *testing.T, ch <-chan array.Event) array.Event {
	t.Helper()
	return testutil.Receive(t, ch, "an event")
}

// TestEventStreamOverSocket: GET /events streams every event published after the watcher came,
// in order, and the stream ends (without error) when the daemon closes its socket, after the
// events it holds are sent.
func TestEventStreamOverSocket(t *testing.T) {
	useRunDir(t)
	s, err := Listen("ev")
	require.NoError(t, err)
	a := &fakeArray{}
	s.Serve(a, prometheus.NewRegistry(), false)

	got := make(chan array.Event, 16)
	ended := make(chan error, 1)
	go func() {
		ended <- NewClient("ev").Events(context.Background(), func(e array.Event) error { got <- e; return nil })
	}()
	testutil.WaitFor(t, "the watcher subscribed", func() bool { return a.hub().subscribers() == 1 })
	zero := 0
	a.hub().publish(array.Event{Array: "ev", Type: array.EventMemberFailed, Member: &zero, Path: "/dev/x", Message: "member 0 failed"})
	a.hub().publish(array.Event{Array: "ev", Type: array.EventDegraded, Message: "degraded"})
	e := recv(t, got)
	assert.Equal(t, array.EventMemberFailed, e.Type)
	require.NotNil(t, e.Member)
	assert.Equal(t, 0, *e.Member, "slot 0 survives the encoding")
	assert.Equal(t, "/dev/x", e.Path)
	assert.Equal(t, array.EventDegraded, recv(t, got).Type)

	a.hub().publish(array.Event{Array: "ev", Type: EventStopped, Message: "stopped"})
	require.NoError(t, s.Close())
	assert.Equal(t, EventStopped, recv(t, got).Type)
	assert.NoError(t, testutil.Receive(t, ended, "the stream to end with the socket"))
	assert.Zero(t, a.hub().subscribers(), "the watcher is gone")
}

// TestHubSlowWatcher: a watcher that does not read loses the newest events, never blocks the
// publisher, and is told how many it lost.
func TestHubSlowWatcher(t *testing.T) {
	h := newHub(slog.New(slog.DiscardHandler))
	ch, cancel := h.Subscribe(nil)
	defer cancel()
	for i := range subscriberLen + 3 {
		h.publish(array.Event{Type: array.EventSyncProgress, DoneBytes: int64(i), Message: "p"})
	}
	for i := range subscriberLen {
		assert.EqualValues(t, i, recv(t, ch).DoneBytes)
	}
	h.publish(array.Event{Type: array.EventSyncFinished, Message: "done"})
	e := recv(t, ch)
	assert.Equal(t, EventDropped, e.Type)
	assert.Contains(t, e.Message, "3 events lost")
	assert.Equal(t, array.EventSyncFinished, recv(t, ch).Type)
}

// TestHubLogs: each event is logged with its fields as attributes, in JSON as in key=value.
func TestHubLogs(t *testing.T) {
	one := 1
	e := array.Event{Array: "a", Type: array.EventMemberFailed, Member: &one, Path: "/dev/sdb", Error: "EIO", Message: "member 1 failed"}
	var buf bytes.Buffer
	log, err := NewLogger(&buf, LogJSON)
	require.NoError(t, err)
	newHub(log).publish(e)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	assert.Equal(t, "WARN", rec["level"])
	assert.Equal(t, "member 1 failed", rec["msg"])
	assert.Equal(t, "member_failed", rec["event"])
	assert.EqualValues(t, 1, rec["member"])
	assert.Equal(t, "/dev/sdb", rec["path"])

	buf.Reset()
	log, err = NewLogger(&buf, LogText)
	require.NoError(t, err)
	newHub(log).publish(e)
	assert.Contains(t, buf.String(), `level=WARN msg="member 1 failed" array=a event=member_failed member=1 path=/dev/sdb error=EIO`)

	_, err = NewLogger(&buf, "xml")
	assert.ErrorContains(t, err, "use text or json")
}

// TestServedEvents: the daemon streams the array's events and its own: a member failing, then
// a stop that says what it waits for, then the stop.
func TestServedEvents(t *testing.T) {
	l := startLifecycle(t, newFakeDevice(true), Config{})
	ch, cancel := l.s.Subscribe()
	defer cancel()
	e := recv(t, ch)
	assert.Equal(t, EventWatching, e.Type)
	assert.Contains(t, e.Message, "watching /dev/ublkb5: ")
	l.s.events.pump(l.s.a)
	defer l.s.events.stopPump()

	require.NoError(t, l.s.a.FailMember(l.members[0]))
	e = recv(t, ch)
	assert.Equal(t, array.EventMemberFailed, e.Type)
	assert.Equal(t, "life", e.Array)
	assert.Equal(t, l.members[0], e.Path)
	assert.Equal(t, array.EventDegraded, recv(t, ch).Type)

	require.NoError(t, l.s.Stop())
	require.NoError(t, l.ended())
	e = recv(t, ch)
	assert.Equal(t, EventStopDraining, e.Type)
	assert.Contains(t, e.Message, fmt.Sprintf("%d queued", 0))
	assert.Equal(t, "/dev/ublkb5", e.Device)
	e = recv(t, ch)
	assert.Equal(t, EventStopped, e.Type)
	assert.Equal(t, "stopped cleanly", e.Message)
}

// TestServedHandoverEvent: a hand-over is heard once the array is drained and flushed.
func TestServedHandoverEvent(t *testing.T) {
	l := startLifecycle(t, newFakeDevice(true), Config{})
	ch, cancel := l.s.Subscribe()
	defer cancel()
	assert.Equal(t, EventWatching, recv(t, ch).Type)
	require.NoError(t, l.s.Handover())
	require.NoError(t, l.ended())
	e := recv(t, ch)
	assert.Equal(t, EventHandedOver, e.Type)
	assert.Contains(t, e.Message, "successor")
}
