package simssd

import (
	"context"
	"fmt"
)

// The gate lets a test hold TRIMs for as long as it needs to look at what
// happens meanwhile, instead of racing a TRIM latency against the machine's
// speed. A TRIM stops at the gate after Discard has counted it in progress
// (Counters.MaxConcurrentTrims, and the caller sees it issued) but before it
// takes the drive: a held TRIM keeps no other TRIM, read or write waiting,
// even on an Exclusive drive, and its latency starts once it passes.
//
// Whoever holds TRIMs must release them before stopping anything that waits
// for them: a ublk device's Stop waits for its requests, an array's stop for
// its discards.

// Hold shuts the gate: every TRIM that starts from now on waits at it until
// Release or ReleaseN lets it through. TRIMs already past the gate go on.
func (d *Device) Hold() {
	d.gateMu.Lock()
	defer d.gateMu.Unlock()
	if !d.holding {
		d.holding = true
		d.gateMoved()
	}
}

// Release opens the gate: the held TRIMs go on, later ones no longer stop,
// and what ReleaseN admitted beyond them is forgotten, so a later Hold starts
// afresh. It may be called when nothing is held.
func (d *Device) Release() {
	d.gateMu.Lock()
	defer d.gateMu.Unlock()
	d.holding = false
	d.admitted = d.tickets
	d.gateMoved()
}

// ReleaseN lets n more TRIMs through the shut gate, in the order they
// reached it: those held now first, then, if fewer than n are held, the next
// ones to arrive, which then do not stop. The gate stays shut for the rest.
func (d *Device) ReleaseN(n int) {
	if n <= 0 {
		return
	}
	d.gateMu.Lock()
	defer d.gateMu.Unlock()
	d.admitted += uint64(n)
	d.gateMoved()
}

// WaitHeld waits until at least k TRIMs are held at the gate, and fails
// with ctx's error, saying how many are, if ctx ends first.
func (d *Device) WaitHeld(ctx context.Context, k int) error {
	for {
		d.gateMu.Lock()
		held, moved := d.heldLocked(), d.moved
		d.gateMu.Unlock()
		if held >= k {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return fmt.Errorf("simssd: %d TRIMs held at the gate, waiting for %d: %w", held, k, ctx.Err())
		}
	}
}

// passGate returns once the gate lets the calling TRIM through.
func (d *Device) passGate() {
	d.gateMu.Lock()
	defer d.gateMu.Unlock()
	if !d.holding {
		return
	}
	ticket := d.tickets
	d.tickets++
	d.gateMoved()
	for d.holding && ticket >= d.admitted {
		moved := d.moved
		d.gateMu.Unlock()
		<-moved
		d.gateMu.Lock()
	}
}

// heldLocked is how many TRIMs the gate holds now; gateMu held.
func (d *Device) heldLocked() int {
	if d.admitted >= d.tickets {
		return 0
	}
	return int(d.tickets - d.admitted)
}

func (d *Device) heldNow() int {
	d.gateMu.Lock()
	defer d.gateMu.Unlock()
	return d.heldLocked()
}

// gateMoved wakes everyone waiting on the gate; gateMu held.
func (d *Device) gateMoved() {
	close(d.moved)
	d.moved = make(chan struct{})
}
