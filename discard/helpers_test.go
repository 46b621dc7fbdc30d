package discard

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uraid/internal/clock"
	"uraid/internal/discardtest"
	"uraid/internal/testutil"
	"uraid/mapping"
)

// Test doubles for the engine's callers and members. Nothing here waits for
// time to pass: tests wait for state (a TRIM entering the drive, a request
// resumed), with a long deadline (testutil.Patience) that only turns a hang
// into a failure. It is not a timing assumption: a correct engine gets there
// in microseconds, however slow the machine.

// fakeDrive records TRIMs and can hold each one until released, so tests
// decide exactly what is in flight. Its TRIMs run through discardtest.Blocking.
type fakeDrive struct {
	clk clock.Clock

	mu       sync.Mutex
	calls    [][2]int64
	starts   []time.Time
	cur, max int

	entered chan [2]int64 // if set, each TRIM announces itself here
	hold    chan struct{} // if set, each TRIM waits for a token or close
	err     error
}

func newDrive(clk clock.Clock, held bool) *fakeDrive {
	if clk == nil {
		clk = clock.Real{}
	}
	f := &fakeDrive{clk: clk}
	if held {
		f.entered = make(chan [2]int64, 64)
		f.hold = make(chan struct{})
	}
	return f
}

func (f *fakeDrive) trim(off, n int64) error {
	f.mu.Lock()
	f.calls = append(f.calls, [2]int64{off, n})
	f.starts = append(f.starts, f.clk.Now())
	f.cur++
	f.max = max(f.max, f.cur)
	f.mu.Unlock()
	if f.entered != nil {
		f.entered <- [2]int64{off, n}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	f.cur--
	f.mu.Unlock()
	return f.err
}

// issuer is the drive as a member's Issuer.
func (f *fakeDrive) issuer() Issuer { return discardtest.Blocking(f.trim, f.clk) }

func (f *fakeDrive) Calls() [][2]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]int64(nil), f.calls...)
}

// next waits for the next TRIM to reach the drive.
func (f *fakeDrive) next(t *testing.T) [2]int64 {
	t.Helper()
	return testutil.Receive(t, f.entered, "a TRIM to reach the drive")
}

// release lets one held TRIM finish.
func (f *fakeDrive) release(t *testing.T) {
	t.Helper()
	select {
	case f.hold <- struct{}{}:
	case <-time.After(testutil.Patience):
		t.Fatal("no TRIM is held")
	}
}

// open stops holding TRIMs and swallows their announcements.
func (f *fakeDrive) open() {
	close(f.hold)
	go func() {
		for range f.entered {
		}
	}()
}

func newEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// waiter is a parked request's Waiter: Resume leaves a token.
type waiter chan struct{}

func newWaiter() waiter { return make(chan struct{}, 1) }

func (w waiter) Resume() {
	select {
	case w <- struct{}{}:
	default:
		panic("a request was resumed twice for one park")
	}
}

func (w waiter) wait(t *testing.T) {
	t.Helper()
	testutil.Receive(t, w, "the parked request to be resumed")
}

// resumed reports, without waiting, whether the request was resumed.
func (w waiter) resumed() bool {
	select {
	case <-w:
		return true
	default:
		return false
	}
}

// completer collects a discard's outcome.
type completer chan error

func (c completer) Done(err error) { c <- err }

func (c completer) wait(t *testing.T) error {
	t.Helper()
	return testutil.Receive(t, c, "the discard to be acknowledged")
}

// done reports, without waiting, whether the discard was acknowledged.
func (c completer) done() bool { return len(c) > 0 }

// discard starts a discard of ranges and returns its completer.
func discard(e *Engine, ranges ...mapping.Extent) completer {
	c := make(completer, 1)
	e.Discard(&Discard{Extents: ranges, Done: c})
	return c
}

// newWrite returns a write request of ranges with its waiter.
func newWrite(ranges ...mapping.Extent) (*Write, waiter) {
	w := newWaiter()
	return &Write{Ticket: Ticket{Waiter: w}, Extents: ranges}, w
}

// newRead returns a read request of one piece with the given copies.
func newRead(copies ...mapping.Extent) (*Read, waiter) {
	w := newWaiter()
	r := &Read{Ticket: Ticket{Waiter: w}}
	r.Add(copies...)
	return r, w
}

// write admits w, waiting while it is parked, and ends it at once.
func write(t *testing.T, e *Engine, w *Write, wk waiter) {
	t.Helper()
	for !e.BeginWrite(w) {
		wk.wait(t)
	}
	for i := range w.Extents {
		e.EndWrite(w, i)
	}
}

// read admits r, waiting while it is parked, and returns the member of its
// first piece's pick with the gate still open.
func read(t *testing.T, e *Engine, r *Read, wk waiter, turn uint32) int {
	t.Helper()
	for !e.BeginRead(r, turn) {
		wk.wait(t)
	}
	return r.Pick(0).Member
}

// instant is an Issuer that finishes every TRIM as soon as it is submitted
// and allocates nothing, for allocation tests.
type instant struct {
	ids  [64]int
	n    int
	wake chan struct{}
}

func newInstant() *instant { return &instant{wake: make(chan struct{}, 1)} }

func (s *instant) Start(id int, off, n int64) { s.ids[s.n] = id; s.n++ }

func (s *instant) Wait(timeout time.Duration, done func(int, error)) {
	if s.n == 0 && timeout != 0 {
		<-s.wake
	}
	for i := range s.n {
		done(s.ids[i], nil)
	}
	s.n = 0
}

func (s *instant) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *instant) Close() error { return nil }

// watcher hears what OnTrimmed tells, and panics on a second word for one
// watch.
type watcher struct {
	mu   sync.Mutex
	told map[uint64]bool
}

func newWatcher() *watcher { return &watcher{told: map[uint64]bool{}} }

func (w *watcher) tell(key uint64, trimmed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.told[key]; ok {
		panic(fmt.Sprintf("watch %d told twice", key))
	}
	w.told[key] = trimmed
}

// heard reports, without waiting, whether watch key was told.
func (w *watcher) heard(key uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.told[key]
	return ok
}

// wait waits until watch key is told and returns whether it was trimmed.
func (w *watcher) wait(t *testing.T, key uint64) bool {
	t.Helper()
	testutil.WaitFor(t, "the engine's word on a watched discard", func() bool { return w.heard(key) })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.told[key]
}

func (w *watcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.told)
}

// discard runs a discard of extents watched as key, and waits for its
// acknowledgement.
func (w *watcher) discard(t *testing.T, e *Engine, key uint64, extents ...mapping.Extent) {
	t.Helper()
	c := make(completer, 1)
	e.Discard(&Discard{Extents: extents, Done: c, Watch: key})
	require.NoError(t, c.wait(t))
}
