package discard

import (
	"fmt"
	"slices"
)

// member returns member i, or an error naming the bad index.
func (e *Engine) member(i int, op string) (*member, error) {
	if i < 0 || i >= len(e.members) {
		return nil, fmt.Errorf("discard %s: %w: member %d of %d", op, ErrRange, i, len(e.members))
	}
	return e.members[i], nil
}

// WaitWrite must be called before a write or write-zeroes of n bytes at off
// goes to member i. It removes that range from the member's queued
// discards, because a TRIM issued after the write would destroy it, and then
// waits for any TRIM in flight over the range, because the device may apply
// it after the write. When it returns the write may go ahead; a discard
// queued later is a later request and may trim the write, as it should.
//
// Queued bytes removed this way count as trimmed for a Sync discard: once
// the write lands the discard's purpose for them is moot.
func (e *Engine) WaitWrite(i int, off, n int64) error {
	m, err := e.member(i, "wait for write")
	if err != nil || n <= 0 || m.outstanding.Load() == 0 {
		return err
	}
	m.mu.Lock()
	parts, cut := m.q.Cancel(off, n, nil)
	if cut > 0 {
		m.publish()
		m.cond.Broadcast() // queue space
	}
	for m.q.OverlapsInFlight(off, n) {
		m.cond.Wait()
	}
	m.mu.Unlock()
	for _, p := range parts {
		p.Tag.settle(p.Bytes, nil)
	}
	return nil
}

// WaitRead must be called before a read of n bytes at off from member i,
// once for every copy of the bytes read (all mirrors, not just the one read
// from). It waits until no queued or in-flight discard on member i touches
// the range, and hurries the member meanwhile: the TRIMs over the range go
// next, ahead of older ones, and the I/O gate is lifted.
//
// Why: a discarded range reads back as zeros or as old data depending on
// the device and on whether the TRIM ran yet, so two mirrors can disagree
// until both have trimmed. Waiting is the simplest rule that makes every
// copy return the same bytes, and it costs nothing in practice: filesystems
// do not read what they just discarded, so only tools reading raw free
// space ever wait. Call it before StartIO, since a waiting read must not
// hold back the TRIM it waits for.
func (e *Engine) WaitRead(i int, off, n int64) error {
	m, err := e.member(i, "wait for read")
	if err != nil || n <= 0 || m.outstanding.Load() == 0 {
		return err
	}
	m.mu.Lock()
	if m.q.Overlaps(off, n) {
		w := [2]int64{off, n}
		m.readers = append(m.readers, w)
		m.wake()
		for m.q.Overlaps(off, n) {
			m.cond.Wait()
		}
		i := slices.Index(m.readers, w)
		m.readers = slices.Delete(m.readers, i, i+1)
	}
	m.mu.Unlock()
	return nil
}

// StartIO tells the engine that a read or write to member i is starting and
// reports whether a TRIM is in flight there, in which case a mirrored read
// would do better on another copy (call EndIO and pick one). On a member
// with YieldToIO no TRIM starts until the matching EndIO, up to MaxDefer.
func (e *Engine) StartIO(i int) (busy bool) {
	if i < 0 || i >= len(e.members) {
		return false
	}
	m := e.members[i]
	m.io.Add(1)
	return m.busy.Load() > 0
}

// EndIO ends what StartIO started.
func (e *Engine) EndIO(i int) {
	if i < 0 || i >= len(e.members) {
		return
	}
	m := e.members[i]
	if m.io.Add(-1) == 0 && m.cfg.YieldToIO && m.outstanding.Load() > 0 {
		m.wake()
	}
}

// Busy reports whether member i has a TRIM in flight: a read steered to
// another copy avoids queueing behind it.
func (e *Engine) Busy(i int) bool {
	if i < 0 || i >= len(e.members) {
		return false
	}
	return e.members[i].busy.Load() > 0
}

// Pending reports whether member i has a TRIM queued or in flight. A read
// steered away from such a member lets its TRIMs run without holding them
// back or queueing behind them.
func (e *Engine) Pending(i int) bool {
	if i < 0 || i >= len(e.members) {
		return false
	}
	return e.members[i].outstanding.Load() > 0
}

// Steer returns which of copies, the members holding the bytes of a read,
// the read should go to: the one of least Stall, starting the search at
// copies[first%len] so that the caller's own balancing holds among equals.
// The choice is a hint that can be stale by the time the read starts:
// StartIO closes the race, reporting busy if a TRIM got in first. No copies
// gives -1.
func (e *Engine) Steer(copies []int, first int) int {
	if len(copies) == 0 {
		return -1
	}
	best, bestScore := 0, MaxStall+1
	for k := range copies {
		i := (first + k) % len(copies)
		if s := e.Stall(copies[i]); s < bestScore {
			best, bestScore = i, s
		}
	}
	return copies[best]
}

// MaxStall is the highest Stall score.
const MaxStall = 4

// Stall scores how much member i's TRIMs would delay a read sent there now,
// from 0 to MaxStall: 0 no TRIM pending; 1 TRIMs queued on a member whose
// TRIMs do not stall I/O (no YieldToIO); 2 one in flight there; 3 TRIMs
// queued on a member that stalls I/O while it trims, which the read would
// hold back; 4 a TRIM in flight there, which the read would wait for.
// Reads go to the copy of least score, so a member with TRIMs to do is
// left to do them.
func (e *Engine) Stall(i int) int {
	if i < 0 || i >= len(e.members) {
		return MaxStall
	}
	m := e.members[i]
	busy := 0
	if m.busy.Load() > 0 {
		busy = 1
	}
	switch {
	case m.outstanding.Load() == 0:
		return 0
	case !m.cfg.YieldToIO:
		return 1 + busy
	}
	return 3 + busy
}
