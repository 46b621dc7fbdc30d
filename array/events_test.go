package array

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/clock"
	"uraid/internal/testutil"
)

// nextEvent waits for the array's next event, or fails the test.
func nextEvent(t *testing.T, a *Array) Event {
	t.Helper()
	e := testutil.Receive(t, a.Events(), "the array's next event")
	require.Equal(t, a.Name, e.Array)
	require.False(t, e.Time.IsZero())
	require.NotEmpty(t, e.Message)
	return e
}

// TestEventsMemberFailureWithSpare: a member failing with a hot spare at hand is heard as the
// failure, the array degraded, the spare activated, and the rebuild started, progressing through
// each tenth and ending well, in that order.
func TestEventsMemberFailureWithSpare(t *testing.T) {
	m := newMirrorWith(t, 1)
	m.fill(1, 4)
	spare := m.a.Status("", 0).Spares[0]
	require.NoError(t, m.a.FailMember(m.paths[0]))

	e := nextEvent(t, m.a)
	assert.Equal(t, EventMemberFailed, e.Type)
	require.NotNil(t, e.Member)
	assert.Equal(t, 0, *e.Member)
	assert.Equal(t, m.paths[0], e.Path)
	assert.Contains(t, e.Error, "administrator")
	assert.Equal(t, EventDegraded, nextEvent(t, m.a).Type)

	e = nextEvent(t, m.a)
	assert.Equal(t, EventSpareActivated, e.Type)
	assert.Equal(t, 0, *e.Member)
	assert.Equal(t, spare, e.Path)

	e = nextEvent(t, m.a)
	assert.Equal(t, EventSyncStarted, e.Type)
	assert.Equal(t, SyncRebuild, e.Action)
	assert.Equal(t, spare, e.Path)
	assert.Positive(t, e.TotalBytes)

	var progress []int64
	for {
		e = nextEvent(t, m.a)
		if e.Type != EventSyncProgress {
			break
		}
		assert.Equal(t, SyncRebuild, e.Action)
		progress = append(progress, e.DoneBytes*10/e.TotalBytes)
	}
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, progress, "one event per tenth, in order")
	assert.Equal(t, EventSyncFinished, e.Type)
	assert.Equal(t, SyncRebuild, e.Action)
	assert.Equal(t, OutcomeOK, e.Outcome)
	assert.Empty(t, e.Error)
	assert.Equal(t, e.TotalBytes, e.DoneBytes)
	assert.Zero(t, m.a.EventsDropped())
}

// TestEventsCancelledCheck: a cancelled check ends with the cancelled outcome.
func TestEventsCancelledCheck(t *testing.T) {
	m := newMirrorWith(t, 0)
	m.fill(2)
	m.a.syncer.clock = clock.NewManual(time.Unix(0, 0)) // the check cannot get past its first pace
	require.NoError(t, m.a.StartSync(SyncCheck, SyncOptions{MaxRate: 1}))
	e := nextEvent(t, m.a)
	assert.Equal(t, EventSyncStarted, e.Type)
	assert.Equal(t, SyncCheck, e.Action)
	require.True(t, m.a.CancelSync())
	for e.Type != EventSyncFinished {
		e = nextEvent(t, m.a)
	}
	assert.Equal(t, OutcomeCancelled, e.Outcome)
}

// TestEventsNeverBlock: with nobody reading, events past the queue's bound are dropped and
// counted, and the array carries on.
func TestEventsNeverBlock(t *testing.T) {
	m := newMirrorWith(t, 0)
	for range eventQueueLen + 5 {
		m.a.emit(Event{Type: EventDegraded, Message: "test"})
	}
	assert.Equal(t, uint64(5), m.a.EventsDropped())
	require.NoError(t, m.a.FailMember(m.paths[0]))
	assert.Equal(t, uint64(7), m.a.EventsDropped(), "the failure and the degraded array, dropped")
	assert.Equal(t, "failed", m.a.Status("", 0).Members[0].State)
}
