package simssd

import (
	"sync"
	"time"
)

// Clock is where the device reads the time and spends its latencies.
type Clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

// RealClock is the wall clock: latencies are really waited for, as the
// benchmarks need.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep calls time.Sleep.
func (RealClock) Sleep(d time.Duration) { time.Sleep(d) }

// VirtualClock is a clock that only moves when slept on: Sleep advances it
// at once and returns, so tests pay no latency and see the same timings on
// every run. Concurrent sleeps add up rather than overlap, so it suits
// correctness tests, not throughput figures.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

// NewVirtualClock returns a clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep advances the virtual time by d without waiting.
func (c *VirtualClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
