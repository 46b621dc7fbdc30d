// Package discardtest holds what the tests of the discard engine and of its
// users share: product code has no use for it. It does not import discard,
// so that the discard package's own tests can import it.
package discardtest

import (
	"time"

	"uraid/internal/clock"
)

// BlockingIssuer is a discard.Issuer over a function that trims
// synchronously (a simulated drive, a test double).
type BlockingIssuer struct {
	trim    func(off, n int64) error
	clk     clock.Clock
	results chan result
	wake    chan struct{}
}

type result struct {
	id  int
	err error
}

// Blocking adapts trim to a discard.Issuer: each TRIM runs on a goroutine of
// its own, so InFlight of them overlap, and Wait's timeout runs on clk (nil:
// the real clock).
func Blocking(trim func(off, n int64) error, clk clock.Clock) *BlockingIssuer {
	if clk == nil {
		clk = clock.Real{}
	}
	return &BlockingIssuer{trim: trim, clk: clk, results: make(chan result, 64), wake: make(chan struct{}, 1)}
}

// Start runs the TRIM.
func (b *BlockingIssuer) Start(id int, off, n int64) {
	go func() { b.results <- result{id, b.trim(off, n)} }()
}

// Wait reports finished TRIMs, as discard.Issuer says.
func (b *BlockingIssuer) Wait(timeout time.Duration, done func(int, error)) {
	var fire <-chan time.Time
	switch {
	case timeout == 0:
		for {
			select {
			case r := <-b.results:
				done(r.id, r.err)
			default:
				return
			}
		}
	case timeout > 0:
		tm := b.clk.NewTimer(timeout)
		defer tm.Stop()
		fire = tm.C()
	}
	select {
	case r := <-b.results:
		done(r.id, r.err)
	case <-b.wake:
	case <-fire:
	}
	for { // and whatever else has finished meanwhile
		select {
		case r := <-b.results:
			done(r.id, r.err)
		default:
			return
		}
	}
}

// Wake makes a Wait in progress, or the next one, return.
func (b *BlockingIssuer) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Close does nothing: the TRIMs own no resources.
func (b *BlockingIssuer) Close() error { return nil }
