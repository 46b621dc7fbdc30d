package discard

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"uraid/internal/clock"
	"uraid/internal/verify"
	"uraid/mapping"
)

// Engine queues, merges, paces and issues the discards of one array, and
// admits the array's reads and writes around them. See the package
// documentation for the rules it keeps.
type Engine struct {
	mode    Mode
	members []*member
	onError func(mapping.Extent, error)
	clock   clock.Clock

	// heldMu guards the list of async discards whose acknowledgement waits
	// for a member to come back within MaxQueued; held counts them so that
	// lanes skip the lock when none waits. Never taken with a member lock.
	heldMu   sync.Mutex
	heldHead *Discard
	held     atomic.Int32
	// seq numbers pushed pieces across all members (TrimMark).
	seq atomic.Uint64
	// failed holds the order numbers failed TRIMs may have covered, as
	// intervals (at most maxFailed, merged beyond), for Trimmed.
	failedMu   sync.Mutex
	failed     [][2]uint64
	anyFail    atomic.Bool
	closed     atomic.Bool
	wg         sync.WaitGroup
	closeOnce  sync.Once
	closeError error
}

// New starts an engine: one lane goroutine per member that discards, owned
// by the engine and stopped by Close. The engine owns the members' Issuers
// from now on, and closes them, even when New fails.
func New(cfg Config) (*Engine, error) {
	if err := cfg.check(); err != nil {
		for _, m := range cfg.Members {
			if m.Issuer != nil {
				m.Issuer.Close()
			}
		}
		return nil, fmt.Errorf("discard engine: %w", err)
	}
	e := &Engine{mode: cfg.Mode, onError: cfg.OnError, clock: cfg.Clock}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	for i, mc := range cfg.Members {
		e.members = append(e.members, newMember(e, i, mc))
	}
	for _, m := range e.members {
		if l := m.lane.Load(); l.issuer != nil {
			e.wg.Add(1)
			go m.run(l)
		}
	}
	return e, nil
}

// Mode is the acknowledgement mode the engine was built with.
func (e *Engine) Mode() Mode { return e.mode }

// Members is the number of members the engine was built with.
func (e *Engine) Members() int { return len(e.members) }

// Discard queues d's extents, the per-member pieces of one array discard,
// on every member they name at once, and tells d.Done exactly once: in Sync
// mode when every piece is trimmed (with the first error), in Async mode
// as soon as every piece is queued and no member it touched holds more
// than MaxQueued pieces. It never blocks: a discard held back by a full
// member keeps its caller's request slot, and that is the backpressure.
// Done may run before Discard returns, or later on a lane goroutine (or on
// the goroutine of the BeginWrite or Fail that settled its last bytes).
//
// Extents of a member without an Issuer or that failed, and empty extents,
// are skipped. An invalid extent fails the whole discard before anything
// is queued. d belongs to the engine until Done is called.
func (e *Engine) Discard(d *Discard) {
	d.finished.Store(false)
	any := false
	for _, x := range d.Extents {
		if err := checkExtent(x, len(e.members)); err != nil {
			d.finish(err)
			return
		}
		any = any || (x.Length > 0 && e.members[x.Member].discards())
	}
	if !any || e.closed.Load() {
		d.finish(nil) // nothing to trim, or nothing will be: a discard is advisory
		return
	}
	var tag *Discard
	if e.mode == Sync {
		// The guard keeps pieces that finish while others are still being
		// queued from completing the discard early.
		d.left.Store(syncGuard)
		tag = d
	}
	over := false
	d.mark = TrimMark{}
	for _, x := range d.Extents {
		m := e.members[x.Member]
		if !m.discards() || x.Length == 0 {
			continue
		}
		if tag != nil {
			d.left.Add(x.Length)
		}
		seq, o, ok := m.push(x, tag)
		if !ok && tag != nil {
			d.left.Add(-x.Length) // the member failed or the engine closed: nothing to wait for
		}
		if ok {
			if d.mark.first == 0 {
				d.mark.first = seq
			}
			d.mark.last = seq
		}
		over = over || o
	}
	if tag != nil {
		d.settle(syncGuard, nil)
		return
	}
	if !over {
		d.finish(nil)
		return
	}
	e.hold(d)
}

// TrimMark says where a discard's pieces stand in the engine's numbering,
// so that whether they were all trimmed can be asked later, when the
// Discard itself has been reused (Async discards are acknowledged long
// before their TRIMs run). The zero TrimMark is a discard that queued
// nothing.
type TrimMark struct{ first, last uint64 }

// Mark is d's TrimMark; read it after Discard returns and before d is
// reused.
func (d *Discard) Mark() TrimMark { return d.mark }

// Trimmed reports whether every piece the discard marked queued has been
// trimmed without error: nothing numbered up to it is queued or in flight on
// any member, and no TRIM failed since it was queued. It can report false
// for a discard that was trimmed (a failure elsewhere, a piece dropped by
// Fail or Close), never true for one that was not; a write that cut the
// discard is the caller's to account for.
func (e *Engine) Trimmed(t TrimMark) bool {
	if t.last == 0 {
		return true
	}
	for _, m := range e.members {
		if m.outstanding.Load() == 0 {
			continue
		}
		m.mu.Lock()
		s, ok := m.q.Oldest()
		m.mu.Unlock()
		if ok && s <= t.last {
			return false
		}
	}
	// Every piece is done (finish records a failure before it lets its
	// TRIM go), so the failures that concern it are known.
	if !e.anyFail.Load() {
		return true
	}
	e.failedMu.Lock()
	defer e.failedMu.Unlock()
	for _, f := range e.failed {
		if f[0] <= t.last && t.first <= f[1] {
			return false
		}
	}
	return true
}

// maxFailed bounds the failed intervals kept; beyond it the closest two are
// merged, which can only make more discards look untrimmed.
const maxFailed = 64

// failedTrim records that a TRIM covering pieces numbered within seqs
// failed.
func (e *Engine) failedTrim(seqs [2]uint64) {
	e.failedMu.Lock()
	defer e.failedMu.Unlock()
	e.anyFail.Store(true)
	e.failed = append(e.failed, seqs)
	if len(e.failed) <= maxFailed {
		return
	}
	sort.Slice(e.failed, func(i, j int) bool { return e.failed[i][0] < e.failed[j][0] })
	gap := func(i int) int64 { return int64(e.failed[i+1][0]) - int64(e.failed[i][1]) }
	best := 0
	for i := 1; i+1 < len(e.failed); i++ {
		if gap(i) < gap(best) {
			best = i
		}
	}
	e.failed[best][1] = max(e.failed[best][1], e.failed[best+1][1])
	e.failed = append(e.failed[:best+1], e.failed[best+2:]...)
}

// syncGuard is added to a Sync discard's byte count while it is being
// queued.
const syncGuard = 1 << 62

// hold puts an async discard on the held list until every member it touched
// is within its bound again.
func (e *Engine) hold(d *Discard) {
	e.heldMu.Lock()
	d.nextHeld = e.heldHead
	e.heldHead = d
	e.held.Add(1)
	e.heldMu.Unlock()
	// A lane that emptied its queue before d was on the list did not see
	// it: look once more, or d could wait for a TRIM that never comes.
	e.releaseHeld()
}

// fits reports whether every member d touched is within its bound.
func (e *Engine) fits(d *Discard) bool {
	if e.closed.Load() {
		return true
	}
	for _, x := range d.Extents {
		m := e.members[x.Member]
		if l := m.lane.Load(); l.issuer != nil && x.Length > 0 && !m.isDown.Load() && m.queued.Load() > int64(l.cfg.MaxQueued) {
			return false
		}
	}
	return true
}

// releaseHeld acknowledges every held discard whose members are within their
// bounds. No member lock may be held.
func (e *Engine) releaseHeld() {
	var out *Discard
	e.heldMu.Lock()
	for p := &e.heldHead; *p != nil; {
		d := *p
		if e.fits(d) {
			*p = d.nextHeld
			d.nextHeld = out
			out = d
			e.held.Add(-1)
			continue
		}
		p = &d.nextHeld
	}
	if verify.On {
		n := int32(0)
		for d := e.heldHead; d != nil; d = d.nextHeld {
			n++
		}
		verify.Check(n == e.held.Load(), "discard engine: %d discards held, count says %d", n, e.held.Load())
	}
	e.heldMu.Unlock()
	for out != nil {
		next := out.nextHeld
		out.nextHeld = nil
		out.finish(nil)
		out = next
	}
}

// Drain waits until every discard queued before the call has been trimmed
// (or dropped by Close or Fail). It lifts the I/O gate on every member
// while it waits, but keeps MinGap: a stop or a consistency check must not
// be held back by I/O, and the device's penalty would only make it slower.
func (e *Engine) Drain() {
	marks := make([]uint64, len(e.members))
	for i, m := range e.members {
		m.mu.Lock()
		marks[i] = m.q.LastSeq()
		m.urgent++
		m.mu.Unlock()
		m.wake()
	}
	for i, m := range e.members {
		m.mu.Lock()
		for !m.closed {
			s, ok := m.q.Oldest()
			if !ok || s > marks[i] {
				break
			}
			m.cond.Wait()
		}
		m.urgent--
		m.mu.Unlock()
	}
}

// Fail takes member i out of service after an I/O error: its queued
// discards are dropped (a failed member's contents no longer matter), no
// TRIM starts there any more, and reads are no longer steered to it. TRIMs
// in flight finish. Requests parked on the member are resumed.
func (e *Engine) Fail(i int) {
	if i < 0 || i >= len(e.members) {
		return
	}
	m := e.members[i]
	m.isDown.Store(true)
	m.shut(&m.down, nil)
	if e.held.Load() > 0 {
		e.releaseHeld()
	}
}

// Revive puts member i, failed (Fail) or missing, back in service with a
// new configuration: a new device in its slot, or the old one back. Its old
// lane stops once its TRIMs in flight have finished, and its issuer is
// closed; from now on discards queue on the member again, reads may be
// steered to it, and cfg.Issuer (owned by the engine from here, even on
// error) trims it. It refuses a member that is in service.
func (e *Engine) Revive(i int, cfg Member) error {
	closeNew := func() {
		if cfg.Issuer != nil {
			cfg.Issuer.Close()
		}
	}
	if i < 0 || i >= len(e.members) {
		closeNew()
		return fmt.Errorf("discard revive: %w: member %d of %d", ErrRange, i, len(e.members))
	}
	if err := (&Config{Mode: e.mode, Members: []Member{cfg}}).check(); err != nil {
		closeNew()
		return fmt.Errorf("discard revive member %d: %w", i, err)
	}
	m := e.members[i]
	m.mu.Lock()
	if m.closed || !m.down {
		m.mu.Unlock()
		closeNew()
		if m.closed {
			return fmt.Errorf("discard revive member %d: %w", i, ErrClosed)
		}
		return fmt.Errorf("discard revive member %d: it is in service; fail it first", i)
	}
	old := m.lane.Load()
	old.exit = true
	m.mu.Unlock()
	m.wake()
	var err error
	if old.issuer != nil {
		<-old.finished
		err = old.issuer.Close()
	}
	l := newLane(m, cfg)
	m.mu.Lock()
	// A down member's queue is empty: Fail dropped it and nothing was pushed since.
	m.q = NewQueue[*Discard](l.cfg.MaxLen, l.cfg.Granularity)
	m.lane.Store(l)
	m.lastEnd, m.heldSince = time.Time{}, time.Time{}
	m.down = false
	m.isDown.Store(false)
	m.publish()
	m.mu.Unlock()
	if l.issuer != nil {
		e.wg.Add(1)
		go m.run(l)
	}
	if err != nil {
		return fmt.Errorf("discard revive member %d: close the old issuer: %w", i, err)
	}
	return nil
}

// Close stops the engine: queued discards are dropped (Sync callers get
// ErrClosed; Async ones were acknowledged and simply lose an advisory
// TRIM), TRIMs in flight finish, parked requests are resumed (every Begin
// call admits at once from now on), and the lanes exit and the Issuers are
// closed before Close returns. Call Drain first to trim everything instead.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		for _, m := range e.members {
			m.shut(&m.closed, ErrClosed)
		}
		e.releaseHeld()
		e.wg.Wait()
		var errs []error
		for _, m := range e.members {
			if l := m.lane.Load(); l.issuer != nil {
				if err := l.issuer.Close(); err != nil {
					errs = append(errs, fmt.Errorf("discard member %d: %w", m.idx, err))
				}
			}
		}
		if len(errs) > 0 {
			e.closeError = fmt.Errorf("discard engine close: %v", errs)
		}
	})
	return e.closeError
}

// Stats returns a snapshot of every member's queue.
func (e *Engine) Stats() []MemberStats {
	out := make([]MemberStats, len(e.members))
	for i, m := range e.members {
		m.mu.Lock()
		out[i] = m.snapshot()
		m.mu.Unlock()
	}
	return out
}

// MemberSettings are the TRIM settings the engine applies to one member, as
// status reports them.
type MemberSettings struct {
	// Discards is false for a member without an Issuer: its share of every
	// discard is skipped.
	Discards bool
	// InFlight is how many TRIMs the member has outstanding at most.
	InFlight int
	// Exclusive means the member's TRIMs yield to its reads and writes
	// (YieldToIO), for drives whose TRIM stalls other commands.
	Exclusive bool
	MaxLen    int64
	MinGap    time.Duration
	MaxDefer  time.Duration
	// Async is false when the member's TRIMs fell back to a blocking call
	// (BLKDISCARD on a kernel without asynchronous discard).
	Async bool
}

// Settings returns the settings member i runs with.
func (e *Engine) Settings(i int) MemberSettings {
	l := e.members[i].lane.Load()
	s := MemberSettings{
		Discards:  l.issuer != nil,
		InFlight:  l.cfg.InFlight,
		Exclusive: l.cfg.YieldToIO,
		MaxLen:    l.cfg.MaxLen,
		MinGap:    l.cfg.MinGap,
		MaxDefer:  l.cfg.MaxDefer,
		Async:     l.issuer != nil,
	}
	if a, ok := l.issuer.(interface{ Async() bool }); ok {
		s.Async = a.Async()
	}
	if !s.Discards {
		s.InFlight = 0
	}
	return s
}
