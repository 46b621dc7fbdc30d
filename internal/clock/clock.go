// Package clock is the time source of uraid's pacing code. Production code
// uses Real; tests inject Manual, whose time moves only when the test says,
// or Virtual, whose time jumps forward whenever someone waits on it, so
// that timing rules are tested without waiting for wall time and without
// depending on how fast the machine is.
//
// Every Clock is safe for concurrent use.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and lets a goroutine wait for some of it to pass.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once d has passed (d <= 0: at
	// once). Stop it when it is no longer wanted.
	NewTimer(d time.Duration) Timer
	// Sleep returns once d has passed.
	Sleep(d time.Duration)
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C receives the time once the timer fires.
	C() <-chan time.Time
	// Stop keeps the timer from firing; it reports whether it stopped it.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Sleep is time.Sleep.
func (Real) Sleep(d time.Duration) { time.Sleep(d) }

// SleepCtx waits d of wall time and returns nil, or returns ctx.Err() if
// ctx is done first. It paces polls of the kernel (a device node to appear,
// a device to leave a state, a process to exit), which moves in real time
// whatever clock a test injects; the caller's context bounds the polling.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Manual is a clock that moves only when Advance is called. Timers and
// sleepers are released when the time reaches their deadline, in deadline
// order. Waiting reports how many are armed, so a test can wait until the
// code under test has armed its timer before moving the time past it.
type Manual struct {
	mu      sync.Mutex
	cond    sync.Cond
	now     time.Time
	waiters []*manualTimer // guarded by mu, unsorted
}

type manualTimer struct {
	c    *Manual
	at   time.Time
	ch   chan time.Time
	live bool // guarded by c.mu
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if !t.live {
		return false
	}
	t.live = false
	for i, w := range t.c.waiters {
		if w == t {
			t.c.waiters = append(t.c.waiters[:i], t.c.waiters[i+1:]...)
			break
		}
	}
	t.c.cond.Broadcast()
	return true
}

// NewManual returns a manual clock reading start.
func NewManual(start time.Time) *Manual {
	c := &Manual{now: start}
	c.cond.L = &c.mu
	return c
}

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires once Advance has moved the time d
// past now.
func (c *Manual) NewTimer(d time.Duration) Timer {
	t := &manualTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	t.at, t.live = c.now.Add(d), true
	c.waiters = append(c.waiters, t)
	c.cond.Broadcast()
	return t
}

// Sleep blocks until Advance has moved the time d past now.
func (c *Manual) Sleep(d time.Duration) { <-c.NewTimer(d).C() }

// Advance moves the time forward by d, releasing every waiter whose deadline
// it reaches.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	sort.Slice(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	n := 0
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			c.waiters[n] = w
			n++
			continue
		}
		w.live = false
		w.ch <- w.at
	}
	clear(c.waiters[n:])
	c.waiters = c.waiters[:n]
	c.cond.Broadcast()
}

// Waiting is how many timers and sleepers are armed and have not fired.
func (c *Manual) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Next is the earliest deadline of a waiter, and false when none waits.
func (c *Manual) Next() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return 0, false
	}
	at := c.waiters[0].at
	for _, w := range c.waiters[1:] {
		if w.at.Before(at) {
			at = w.at
		}
	}
	return at.Sub(c.now), true
}

// WaitFor blocks until at least n timers or sleepers are armed, that is
// until the code under test has armed its timers.
func (c *Manual) WaitFor(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.waiters) < n {
		c.cond.Wait()
	}
}

// Virtual is a clock whose time jumps forward whenever it is waited on:
// NewTimer and Sleep advance it by d at once. Tests pay no latency and see the
// same timings on every run; concurrent waits add up rather than overlap,
// so it suits correctness tests, not throughput figures.
type Virtual struct {
	mu  sync.Mutex
	now time.Time
}

// NewVirtual returns a virtual clock reading start.
func NewVirtual(start time.Time) *Virtual { return &Virtual{now: start} }

// Now returns the virtual time.
func (c *Virtual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer advances the time by d and returns a timer that has fired.
func (c *Virtual) NewTimer(d time.Duration) Timer {
	t := firedTimer(make(chan time.Time, 1))
	t <- c.advance(d)
	return t
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }

// Sleep advances the time by d without waiting.
func (c *Virtual) Sleep(d time.Duration) { c.advance(d) }

func (c *Virtual) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return c.now
}
