package discard

import (
	"time"

	"uraid/internal/clock"
)

// Issuer trims one member on behalf of the member's lane, the one goroutine
// that issues its TRIMs. Start and Wait are called only by the lane; Wake
// from any goroutine. The lane starts at most InFlight TRIMs before their
// results come back, so an Issuer needs room for that many.
type Issuer interface {
	// Start begins a TRIM of n bytes at member offset off, never empty.
	// Its result is reported by a later Wait with the same id, a number
	// below InFlight. Start may only queue the TRIM; Wait submits it.
	Start(id int, off, n int64)
	// Wait submits what Start queued and reports finished TRIMs to done.
	// It returns after reporting at least one, after Wake, or once timeout
	// has passed (timeout < 0: no limit; 0: report what is finished
	// without waiting).
	Wait(timeout time.Duration, done func(id int, err error))
	// Wake makes a Wait in progress, or the next one, return.
	Wake()
	// Close releases the issuer once the lane has stopped.
	Close() error
}

// Blocking adapts a function that trims synchronously (a simulated drive,
// a test double) to an Issuer: each TRIM runs on a goroutine of its own, so
// InFlight of them overlap, and Wait's timeout runs on clk. It is for
// tests and simulations; members on real devices use a RingIssuer.
func Blocking(trim func(off, n int64) error, clk clock.Clock) Issuer {
	if clk == nil {
		clk = clock.Real{}
	}
	return &blocking{trim: trim, clk: clk, results: make(chan result, 64), wake: make(chan struct{}, 1)}
}

type blocking struct {
	trim    func(off, n int64) error
	clk     clock.Clock
	results chan result
	wake    chan struct{}
}

type result struct {
	id  int
	err error
}

func (b *blocking) Start(id int, off, n int64) {
	go func() { b.results <- result{id, b.trim(off, n)} }()
}

func (b *blocking) Wait(timeout time.Duration, done func(int, error)) {
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

func (b *blocking) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *blocking) Close() error { return nil }
