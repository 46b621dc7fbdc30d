package discard

import (
	"math"
	"time"

	"uraid/internal/verify"
	"uraid/mapping"
)

// BeginRead admits a read: for each piece it checks that no copy has a
// discard queued or in flight over the bytes (else the copies could
// disagree: see the package documentation), then picks the copy to read
// from and opens that member's I/O gate.
//
// The copy is the one whose TRIMs would delay the read least (a member with
// TRIMs to do is left to do them), among members that have not failed, and
// then the one with the fewest reads and writes in progress; among equals
// the search starts at copy turn+i of piece i, so that a caller that counts
// turn up spreads reads over the mirrors. If a TRIM
// starts on the picked member before the gate closes, the read goes to
// another copy when one is better.
//
// It returns false when a discard is pending over some copy: the read is
// parked, the TRIMs over its bytes go first, and r.Waiter is resumed once
// they are done; call BeginRead again then. On true every piece has a Pick
// (a piece with no working copy left has none: Pick panics, check HasPick),
// and EndRead must be called for each piece with a Pick.
func (e *Engine) BeginRead(r *Read, turn uint32) bool {
	r.picks = r.picks[:0]
	for i := range r.Pieces {
		r.picks = append(r.picks, -1)
		p := &r.Pieces[i]
		for _, c := range p.Copies[:p.N] {
			m := e.members[c.Member]
			if c.Length <= 0 || m.outstanding.Load() == 0 || m.isDown.Load() {
				continue
			}
			m.mu.Lock()
			if !m.closed && !m.down && m.q.Overlaps(c.Offset, c.Length) {
				m.park(&m.readers, &r.Ticket, c.Offset, c.Length)
				m.mu.Unlock()
				m.wake() // the gate lifts for a waiting reader
				return false
			}
			m.mu.Unlock()
		}
	}
	r.marks = r.marks[:0]
	for i := range r.Pieces {
		r.picks[i] = e.pickCopy(&r.Pieces[i], int(turn)+i, -1)
		r.marks = append(r.marks, 0)
		if r.picks[i] >= 0 {
			r.marks[i] = e.ioMark(r.Pick(i).Member)
		}
	}
	return true
}

// EndRead closes the I/O gate BeginRead or Reread opened for piece i.
func (e *Engine) EndRead(r *Read, i int) { e.EndReadTook(r, i, -1) }

// EndReadTook is EndRead for a piece whose read succeeded and took took
// (negative: not timed): a learning member (Member.Learn) records it,
// overlapped by a TRIM or not, if it can without waiting.
func (e *Engine) EndReadTook(r *Read, i int, took time.Duration) {
	if !r.HasPick(i) {
		return
	}
	m := r.Pick(i).Member
	if i < len(r.marks) {
		e.observeIO(m, r.marks[i], took)
	}
	e.endIO(m)
}

// Reread picks another copy for piece i after its read failed and the
// caller failed that member (Fail), ending the old pick's gate first. It
// reports false when no working copy is left.
func (e *Engine) Reread(r *Read, i int) bool {
	prev := r.picks[i]
	if prev >= 0 {
		e.endIO(r.Pieces[i].Copies[prev].Member)
		r.picks[i] = -1
	}
	r.picks[i] = e.pickCopy(&r.Pieces[i], prev+1, prev)
	if r.picks[i] >= 0 && i < len(r.marks) {
		r.marks[i] = e.ioMark(r.Pick(i).Member)
	}
	return r.picks[i] >= 0
}

// pickCopy returns the up copy of p of least stall, searching from start
// (mod N) and never choosing skip, with its gate opened; -1 when no copy
// works.
func (e *Engine) pickCopy(p *mapping.Piece, start, skip int) int {
	pick := e.leastStall(p, start, skip)
	if pick < 0 {
		return -1
	}
	if e.startIO(p.Copies[pick].Member) {
		// A TRIM started since leastStall looked: choose again with it
		// counted, and move if another copy is now better.
		if again := e.leastStall(p, pick+1, skip); again >= 0 && again != pick {
			e.endIO(p.Copies[pick].Member)
			pick = again
			e.startIO(p.Copies[pick].Member)
		}
	}
	return pick
}

// leastStall returns the working copy of p that would serve a read soonest:
// the least expected wait (member.wait: the reads and writes in progress at
// their measured latency, as md balances by queue depth, so that a member
// that runs one command at a time is not sent as many reads as its idle
// mirror, plus the member's TRIMs at their measured cost to a read), then
// the first from start. -1 when no copy works.
func (e *Engine) leastStall(p *mapping.Piece, start, skip int) int {
	pick, least := -1, int64(math.MaxInt64)
	for k := range p.N {
		c := (start + k) % p.N
		if c < 0 {
			c += p.N
		}
		if c == skip || p.Copies[c].Length <= 0 {
			continue // a copy the caller left out
		}
		m := e.members[p.Copies[c].Member]
		if m.isDown.Load() {
			continue
		}
		if s := m.wait(); s < least {
			pick, least = c, s
			if s == 0 {
				break
			}
		}
	}
	return pick
}

// BeginWrite admits a write of every extent in w, one per copy. Queued
// discards over the extents are removed first, because a TRIM issued after
// the write would destroy it (for a Sync discard those bytes count as
// trimmed: once the write lands, discarding them is moot). If a TRIM in
// flight overlaps an extent, the device might apply it after the write: the
// write is parked and w.Waiter resumed when that TRIM has finished; call
// BeginWrite again then. On true the write may be issued, the I/O gates of
// its members are open, and EndWrite must be called for every extent.
//
// A discard queued after BeginWrite returned is a later request and may
// trim the write, as it should.
func (e *Engine) BeginWrite(w *Write) bool {
	for _, x := range w.Extents {
		m := e.members[x.Member]
		if x.Length <= 0 || m.outstanding.Load() == 0 {
			continue
		}
		m.mu.Lock()
		low := m.low.Load()
		parts, cut := m.q.Cancel(x.Offset, x.Length, nil)
		var resume *Ticket
		if cut > 0 {
			m.publish()
			resume = m.unpark() // reads that waited only for the cancelled bytes
			m.cond.Broadcast()  // a Drain whose oldest piece the write took away
		}
		blocked := !m.closed && m.q.OverlapsInFlight(x.Offset, x.Length)
		if blocked {
			m.park(&m.writers, &w.Ticket, x.Offset, x.Length)
		}
		release := cut > 0 && m.q.Len() <= m.lane.Load().cfg.MaxQueued && e.held.Load() > 0
		// The cut may have settled watched discards: the lane tells them,
		// not this goroutine (a ublk queue's).
		recheck := m.low.Load() != low && e.watched.Load() > 0
		m.mu.Unlock()
		for _, p := range parts {
			p.Tag.settle(p.Bytes, nil)
		}
		resumeAll(resume)
		if release {
			e.releaseHeld()
		}
		if recheck {
			m.recheck.Store(true)
			m.wake()
		}
		if blocked {
			return false
		}
	}
	w.gated = w.gated[:0]
	w.marks = w.marks[:0]
	for _, x := range w.Extents {
		w.gated = append(w.gated, x.Length > 0)
		w.marks = append(w.marks, 0)
		if x.Length > 0 {
			e.startIO(x.Member)
			w.marks[len(w.marks)-1] = e.ioMark(x.Member)
		}
	}
	return true
}

// EndWrite closes the I/O gate BeginWrite opened for extent i of w.
func (e *Engine) EndWrite(w *Write, i int) { e.EndWriteTook(w, i, -1) }

// EndWriteTook is EndWrite for an extent whose write succeeded and took
// took (negative: not timed), which a learning member records as
// EndReadTook does.
func (e *Engine) EndWriteTook(w *Write, i int, took time.Duration) {
	if i < len(w.gated) && w.gated[i] {
		w.gated[i] = false
		e.observeIO(w.Extents[i].Member, w.marks[i], took)
		e.endIO(w.Extents[i].Member)
	}
}

// startIO opens member i's I/O gate and reports whether a TRIM is in flight
// there. On a member that yields (YieldToIO, or learned exclusive) no TRIM
// starts until the gate closes, for at most MaxDefer.
func (e *Engine) startIO(i int) (busy bool) {
	m := e.members[i]
	m.io.Add(1)
	return m.busy.Load() > 0
}

func (e *Engine) endIO(i int) {
	m := e.members[i]
	n := m.io.Add(-1)
	if verify.On {
		verify.Check(n >= 0, "discard member %d: I/O gate closed more often than opened", i)
	}
	if n == 0 && m.yield.Load() && m.outstanding.Load() > 0 {
		m.wake()
	}
}

// maxStall is the highest stall score.
const maxStall = 4

// stall scores how much the member's TRIMs would delay a read sent there
// now, from 0 to maxStall: 0 no TRIM pending; 1 TRIMs queued on a member
// whose TRIMs do not stall I/O (it does not yield); 2 one in flight there; 3
// TRIMs queued on a member that stalls I/O while it trims, which the read
// would hold back; 4 a TRIM in flight there, which the read would wait for.
func (m *member) stall() int {
	busy := 0
	if m.busy.Load() > 0 {
		busy = 1
	}
	switch {
	case m.outstanding.Load() == 0:
		return 0
	case !m.yield.Load():
		return 1 + busy
	}
	return 3 + busy
}
