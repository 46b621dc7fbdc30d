package discard

import (
	"sync"
	"sync/atomic"

	"uraid/internal/verify"
	"uraid/mapping"
)

// The engine admits three kinds of request, each through one typed way in
// (BeginRead, BeginWrite, Discard), so that the rules of docs/discard.md
// hold whatever the caller does. A caller such as a ublk queue owns one
// Read, Write or Discard per request slot (per tag) and reuses it: nothing
// is allocated per request.
//
// A Begin call that cannot admit its request now parks it and returns
// false; once what it waited for has happened the engine calls the
// request's Waiter (from an engine goroutine, no lock held) and the caller
// calls Begin again. The caller never blocks and never sequences the
// engine's rules itself.

// Waiter is told that a parked request may try again. Resume must not
// block; a ublk request's Resume hands it back to its queue goroutine.
type Waiter interface {
	Resume()
}

// Completer is told the outcome of a Discard, once. It must not block.
type Completer interface {
	Done(err error)
}

// Ticket is a request's place in a member's wait list while it is parked.
// The engine owns it from the Begin call that parks the request until it
// calls Waiter.Resume.
type Ticket struct {
	// Waiter is resumed when the parked request may try again. Set it once.
	Waiter Waiter

	next     *Ticket
	off, end int64
	parked   atomic.Bool // checked in verify mode: a ticket is parked once at a time
}

// ReadPiece is one piece of a read: the same bytes on up to
// mapping.MaxCopies members, Copies[:N], every Range of the same length. A
// caller leaves a copy out by setting its Len to 0: it is never picked.
// Copies is sized by mapping's bound, not one of its own, so that every
// piece mapping plans fits with no copy cut off.
type ReadPiece struct {
	Copies [mapping.MaxCopies]Range
	N      int
	pick   int // the copy being read, -1 before BeginRead
}

// Pick is the copy the piece is being read from, valid after a BeginRead
// that returned true (or a Reread that did).
func (p *ReadPiece) Pick() Range { return p.Copies[p.pick] }

// Read is one read request as the engine sees it.
type Read struct {
	Ticket
	Pieces []ReadPiece
}

// Reset empties r for a new request, keeping its memory.
func (r *Read) Reset() { r.Pieces = r.Pieces[:0] }

// Add appends a piece with the given copies and returns it.
func (r *Read) Add(copies ...Range) *ReadPiece {
	r.Pieces = append(r.Pieces, ReadPiece{pick: -1})
	p := &r.Pieces[len(r.Pieces)-1]
	p.N = copy(p.Copies[:], copies)
	return p
}

// AddPiece appends an empty piece for the caller to fill (Copies, N), which
// avoids building a copies slice.
func (r *Read) AddPiece() *ReadPiece {
	r.Pieces = append(r.Pieces, ReadPiece{pick: -1})
	return &r.Pieces[len(r.Pieces)-1]
}

// Write is one write request as the engine sees it: the member range of
// every copy that will be written.
type Write struct {
	Ticket
	Ranges []Range
	gated  []bool // which ranges raised their member's I/O gate
}

// Reset empties w for a new request, keeping its memory.
func (w *Write) Reset() { w.Ranges = w.Ranges[:0] }

// Discard is one array discard: the per-member pieces the planner produced,
// and who hears of its completion.
type Discard struct {
	Ranges []Range
	// Done hears the outcome once: in Sync mode when every piece is
	// trimmed (with the first error), in Async mode once every piece is
	// queued and no member it touched holds more than MaxQueued pieces.
	Done Completer

	left atomic.Int64 // Sync: bytes not settled yet
	mark TrimMark     // where its pieces stand in the engine's numbering
	mu   sync.Mutex
	err  error // Sync: first error, guarded by mu

	// Async backpressure: the discard is on the engine's held list while a
	// member it touched is over its queue bound.
	nextHeld *Discard
	finished atomic.Bool // verify mode: Done is called once per use
}

// settle counts n bytes of a Sync discard as done, with err if they failed,
// and completes the discard when the last byte is. The first error wins, as
// for a bio split into several.
func (d *Discard) settle(n int64, err error) {
	if err != nil {
		d.mu.Lock()
		if d.err == nil {
			d.err = err
		}
		d.mu.Unlock()
	}
	if d.left.Add(-n) != 0 {
		return
	}
	d.mu.Lock()
	err = d.err
	d.err = nil
	d.mu.Unlock()
	d.finish(err)
}

func (d *Discard) finish(err error) {
	if d.finished.Swap(true) {
		// An engine bug; a second completion would finish whatever request
		// the slot holds next.
		if verify.On {
			panic("discard: a discard completed twice")
		}
		return
	}
	d.Done.Done(err)
}
