package array

import (
	"sync/atomic"
	"time"
)

// Events are what an operator watches an array for: a member failing, the array running
// degraded, a spare taking a failed member's place, sync jobs starting, progressing and ending.
// The array never waits for whoever listens: events go into a bounded queue (Events), and when
// it is full they are dropped and counted (EventsDropped). A member fails on the queue goroutine
// of the I/O that found the error, which must never block.

// Event types. The daemon adds its own (daemon.Event*) to the same stream.
const (
	EventMemberFailed   = "member_failed"
	EventDegraded       = "array_degraded"
	EventArrayFailed    = "array_failed" // some data has no working copy left
	EventSpareActivated = "spare_activated"
	EventMemberReplaced = "member_replaced"
	EventSyncStarted    = "sync_started"
	EventSyncProgress   = "sync_progress"
	EventSyncFinished   = "sync_finished"
	// EventReshaped: the reshape is done; the array has its new members and size.
	EventReshaped = "reshape_finished"
	// EventReshapePaused: the reshape stopped before its end (a member failed, an I/O error);
	// the array serves meanwhile.
	EventReshapePaused = "reshape_paused"
	// EventTrimLearned (trimlearned.go): a member's TRIM pacing changed by measurement.
)

// Outcomes of a sync job, in EventSyncFinished.
const (
	OutcomeOK        = "ok"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// eventQueueLen bounds the events waiting for a listener; a listener that falls this far behind
// loses the newest.
const eventQueueLen = 256

// progressStep is how often a job reports its progress: every tenth of its total.
const progressStep = 10

// Event is one thing that happened to an array.
type Event struct {
	Time  time.Time `json:"time"`
	Array string    `json:"array"`
	Type  string    `json:"type"`
	// Member is the slot concerned (a failed member, the slot a spare or rebuild fills).
	Member *int   `json:"member,omitempty"`
	Path   string `json:"path,omitempty"`
	// Action is the sync job's (resync, check, repair, rebuild).
	Action     string `json:"action,omitempty"`
	DoneBytes  int64  `json:"done_bytes,omitempty"`
	TotalBytes int64  `json:"total_bytes,omitempty"`
	// MismatchBytes and RepairedBytes are a finished check's or repair's findings.
	MismatchBytes int64  `json:"mismatch_bytes,omitempty"`
	RepairedBytes int64  `json:"repaired_bytes,omitempty"`
	Outcome       string `json:"outcome,omitempty"`
	Error         string `json:"error,omitempty"`
	Device        string `json:"device,omitempty"`
	// TrimLearned is a member lane's new decision and its figures (EventTrimLearned).
	TrimLearned *TrimLearned `json:"trim_learned,omitempty"`
	// Message says it in words.
	Message string `json:"message"`
}

// eventQueue is the array's outgoing events.
type eventQueue struct {
	ch      chan Event
	dropped atomic.Uint64
}

func newEventQueue() *eventQueue { return &eventQueue{ch: make(chan Event, eventQueueLen)} }

// emit queues e without ever waiting.
func (q *eventQueue) emit(e Event) {
	select {
	case q.ch <- e:
	default:
		q.dropped.Add(1)
	}
}

// Events is the array's event stream, for one reader (the daemon, which fans it out). It is
// never closed: the reader stops reading when it is done with the array.
func (a *Array) Events() <-chan Event { return a.events.ch }

// EventsDropped counts the events lost because the reader fell behind.
func (a *Array) EventsDropped() uint64 { return a.events.dropped.Load() }

// emit stamps e with the array and the time and queues it.
func (a *Array) emit(e Event) {
	e.Array = a.Name
	e.Time = time.Now()
	a.events.emit(e)
}

// slotPtr is a slot number for Event.Member.
func slotPtr(i int) *int { return &i }

// PendingDiscards reports the TRIMs the members still have to do: pieces queued (and their
// bytes) and TRIMs running. A clean stop waits for them (DrainDiscards).
func (a *Array) PendingDiscards() (queued int, queuedBytes int64, inflight int) {
	for _, s := range a.engine.Stats() {
		queued += s.Queued
		queuedBytes += s.QueuedBytes
		inflight += s.InFlight
	}
	return queued, queuedBytes, inflight
}
