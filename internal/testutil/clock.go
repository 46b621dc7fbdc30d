package testutil

import (
	"time"

	"uraid/internal/clock"
)

// PausingClock is a virtual clock whose Sleep blocks until the test lets it go, so that a TRIM
// in its latency holds a simulated drive for as long as the test needs. Sleeps of zero (instant
// reads and writes) do not stop.
type PausingClock struct {
	*clock.Virtual
	Slept chan time.Duration // a Sleep has started
	Wake  chan struct{}      // lets one Sleep finish
}

// NewPausingClock returns a PausingClock at the Unix epoch.
func NewPausingClock() *PausingClock {
	return &PausingClock{Virtual: clock.NewVirtual(time.Unix(0, 0)), Slept: make(chan time.Duration),
		Wake: make(chan struct{})}
}

// Sleep announces d on Slept, waits for Wake, then sleeps d of virtual time.
func (c *PausingClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	c.Slept <- d
	<-c.Wake
	c.Virtual.Sleep(d)
}
