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

// Read is one read request as the engine sees it: its pieces as mapping
// plans them (mapping.Map.Read), each the same bytes on every one of
// Copies[:N]. A caller leaves a copy out by setting its Length to 0: it is
// never picked. The engine reads only Copies[:N] (Member, Offset, Length)
// of each piece; Logical and the piece's own Length are the caller's.
type Read struct {
	Ticket
	Pieces []mapping.Piece
	picks  []int    // per piece, the copy being read; -1 before BeginRead, or with no copy left
	marks  []uint64 // per piece, its member's TRIMs when the read began (Engine.ioMark)
}

// Reset empties r for a new request, keeping its memory.
func (r *Read) Reset() { r.Pieces, r.picks = r.Pieces[:0], r.picks[:0] }

// Add appends a piece with the given copies, every one of the same length,
// and returns it.
func (r *Read) Add(copies ...mapping.Extent) *mapping.Piece {
	r.Pieces = append(r.Pieces, mapping.Piece{})
	p := &r.Pieces[len(r.Pieces)-1]
	p.N = copy(p.Copies[:], copies)
	if p.N > 0 {
		p.Logical, p.Length = copies[0].Logical, copies[0].Length
	}
	return p
}

// Pick is the copy piece i is being read from, valid after a BeginRead that
// returned true (or a Reread of the piece that did) and while HasPick(i).
func (r *Read) Pick(i int) mapping.Extent { return r.Pieces[i].Copies[r.picks[i]] }

// HasPick reports whether piece i has a copy to read from.
func (r *Read) HasPick(i int) bool { return i < len(r.picks) && r.picks[i] >= 0 }

// Write is one write request as the engine sees it: the member extent of
// every copy that will be written. An extent of Length 0 is left out: the
// caller writes nothing there, or nothing the engine must order.
type Write struct {
	Ticket
	Extents []mapping.Extent
	gated   []bool   // which extents raised their member's I/O gate
	marks   []uint64 // per extent, its member's TRIMs when the write began
}

// Reset empties w for a new request, keeping its memory.
func (w *Write) Reset() { w.Extents = w.Extents[:0] }

// Discard is one array discard: the per-member extents the planner produced
// (mapping.Map.Discard, already rounded inward to each member's
// granularity: the engine trims exactly what it is given), who hears of its
// completion, and who waits to hear whether it was trimmed.
type Discard struct {
	Extents []mapping.Extent
	// Done hears the outcome once: in Sync mode when every piece is
	// trimmed (with the first error), in Async mode once every piece is
	// queued and no member it touched holds more than MaxQueued pieces.
	Done Completer
	// Watch, when not 0, asks the engine to tell Config.OnTrimmed, once,
	// whether every piece of the discard was trimmed: see OnTrimmed for
	// when, and what true promises. The engine keeps Watch, not d: d may be
	// reused as soon as Done has been called.
	Watch uint64

	left atomic.Int64 // Sync: bytes not settled yet
	mark trimMark     // where its pieces stand in the engine's numbering
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
