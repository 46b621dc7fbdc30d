package discard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	mode      Mode
	members   []*member
	onError   func(mapping.Extent, error)
	onTrimmed func(watch uint64, trimmed bool)
	onLearned func(member int, l Learned)
	clock     clock.Clock

	// heldMu guards the list of async discards whose acknowledgement waits
	// for a member to come back within MaxQueued; held counts them so that
	// lanes skip the lock when none waits. Never taken with a member lock.
	heldMu   sync.Mutex
	heldHead *Discard
	held     atomic.Int32
	// seq numbers pushed pieces across all members (trimMark).
	seq atomic.Uint64
	// failed holds the order numbers failed or dropped TRIMs may have
	// covered, as intervals (at most maxFailed, merged beyond): no discard
	// with a piece numbered in one counts as trimmed. failGen counts the
	// intervals recorded. failedMu is taken under a member lock or
	// watchMu, never the other way round.
	failedMu sync.Mutex
	failed   [][2]uint64
	anyFail  atomic.Bool
	failGen  atomic.Uint64

	// The discards OnTrimmed waits to hear of (Discard.Watch). watchMu
	// guards watches, sorted by mark.last and never longer than their
	// capacity (Config.MaxWatched), watchFail (failGen when they were last
	// checked against the failures) and watchShut (Close told the last:
	// none is kept any more); watched is len(watches) for lock-free
	// readers. Never taken with a member lock held, nor one taken under it.
	watchMu   sync.Mutex
	watches   []watch
	watchFail uint64
	watchShut bool
	watched   atomic.Int32
	// notifyMu makes the calls to OnTrimmed of lanes, Drain and Close one
	// batch at a time, so that Drain, taking it, waits for a batch under
	// way; out is the batch, guarded by it.
	notifyMu sync.Mutex
	out      []watch

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
	e := &Engine{mode: cfg.Mode, onError: cfg.OnError, onTrimmed: cfg.OnTrimmed, onLearned: cfg.OnLearned, clock: cfg.Clock}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	if e.onTrimmed != nil {
		n := cfg.MaxWatched
		if n == 0 {
			n = DefaultMaxWatched
		}
		// Allocated up front: watching a discard allocates nothing.
		e.watches = make([]watch, 0, n)
		e.out = make([]watch, 0, n)
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
// A non-zero d.Watch is told to Config.OnTrimmed once, in the same ways.
//
// Extents of a member without an Issuer or that failed, and empty extents,
// are skipped. An invalid extent fails the whole discard before anything
// is queued. d belongs to the engine until Done is called.
func (e *Engine) Discard(d *Discard) {
	d.finished.Store(false)
	any := false
	for _, x := range d.Extents {
		if err := checkExtent(x, len(e.members)); err != nil {
			e.tell(d.Watch, false)
			d.finish(err)
			return
		}
		any = any || (x.Length > 0 && e.members[x.Member].discards())
	}
	if !any || e.closed.Load() {
		// Nothing to trim, or nothing will be: a discard is advisory.
		e.tell(d.Watch, !any)
		d.finish(nil)
		return
	}
	var tag *Discard
	if e.mode == Sync {
		// The guard keeps pieces that finish while others are still being
		// queued from completing the discard early.
		d.left.Store(syncGuard)
		tag = d
	}
	over, lost := false, false
	d.mark = trimMark{}
	for _, x := range d.Extents {
		m := e.members[x.Member]
		if !m.discards() || x.Length == 0 {
			continue
		}
		if tag != nil {
			d.left.Add(x.Length)
		}
		seq, o, ok := m.push(x, tag)
		if !ok {
			lost = true // the member failed or the engine closed: its piece is not trimmed
			if tag != nil {
				d.left.Add(-x.Length) // nothing to wait for
			}
		}
		if ok {
			if d.mark.first == 0 {
				d.mark.first = seq
			}
			d.mark.last = seq
		}
		over = over || o
	}
	// Before Done: a Sync discard's watcher hears first when its TRIMs
	// ran before it was on the list.
	e.watch(d, lost)
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

// trimMark says where a discard's pieces stand in the engine's numbering,
// so that whether they were all trimmed can be decided later, when the
// Discard itself has been reused (Async discards are acknowledged long
// before their TRIMs run). The zero trimMark is a discard that queued
// nothing.
type trimMark struct{ first, last uint64 }

// watch is a discard whose trimming OnTrimmed waits to hear of.
type watch struct {
	mark    trimMark
	key     uint64 // Discard.Watch
	trimmed bool   // the verdict, once it is taken off the list
}

// Whether a discard was trimmed is decided by order numbers. Every piece
// pushed gets the next number of the engine (under its member's lock);
// merging gives a piece the lowest number of what it merged, cutting and
// issuing keep it, so the bytes of a discard are, until settled, always in
// a piece or TRIM numbered at most its mark's last. Each member publishes
// the lowest number it has queued or in flight (member.low) whenever its
// queue changes. So once below(), the lowest over the members, is past a
// mark's last, every piece of that discard is settled: trimmed, taken away
// by a write, or dropped. A TRIM that fails, and a Fail or Close that drops
// queued pieces, records the numbers it may have covered (failedTrim)
// before its member publishes, so whoever sees the member past a mark sees
// the failure too.
//
// A mark read after its Discard returned (and a watch, put on the list
// then) sees every piece of it published; a member's low read afterwards is
// at most the number of any of them still unsettled. Numbers of other
// discards being queued meanwhile do not matter: they are not its pieces.

// below returns the lowest order number queued or in flight on any member,
// math.MaxUint64 when nothing is.
func (e *Engine) below() uint64 {
	b := uint64(math.MaxUint64)
	for _, m := range e.members {
		b = min(b, m.low.Load())
	}
	return b
}

// verdict decides t against below, read before: done once every piece is
// settled, or once one can no longer be trimmed; trimmed when every piece
// was. failed is e.failed with failedMu held, or nil when no TRIM failed
// (anyFail read after below: a failure that concerns a piece below has
// passed was recorded before it was published).
func verdict(t trimMark, below uint64, failed [][2]uint64) (done, trimmed bool) {
	for _, f := range failed {
		if f[0] <= t.last && t.first <= f[1] {
			return true, false
		}
	}
	return t.last < below, true
}

// lockFailed returns the failed intervals for verdict, with failedMu held
// when locked (then unlock it), or none when no TRIM ever failed.
func (e *Engine) lockFailed() (failed [][2]uint64, locked bool) {
	if !e.anyFail.Load() {
		return nil, false
	}
	e.failedMu.Lock()
	return e.failed, true
}

// trimmed reports whether every piece t numbers has been trimmed without
// error: never true for one that was not, and false for one a failure or
// a drop may have touched.
func (e *Engine) trimmed(t trimMark) bool {
	if t.last == 0 {
		return true
	}
	below := e.below() // before the failures: see the note above below
	failed, locked := e.lockFailed()
	done, ok := verdict(t, below, failed)
	if locked {
		e.failedMu.Unlock()
	}
	return done && ok
}

// tell calls OnTrimmed for watch key, if any.
func (e *Engine) tell(key uint64, trimmed bool) {
	if key != 0 && e.onTrimmed != nil {
		e.onTrimmed(key, trimmed)
	}
}

// watch puts d's Watch on the list until its pieces are settled. It tells
// at once, on the caller's goroutine, what is known already: a piece was
// dropped (lost), the list is full or closed, or every piece was settled
// before the watch was on the list.
func (e *Engine) watch(d *Discard, lost bool) {
	if d.Watch == 0 || e.onTrimmed == nil {
		return
	}
	if lost || d.mark.last == 0 {
		e.tell(d.Watch, false)
		return
	}
	w := watch{mark: d.mark, key: d.Watch}
	e.watchMu.Lock()
	if e.watchShut || len(e.watches) == cap(e.watches) {
		e.watchMu.Unlock()
		e.tell(w.key, false)
		return
	}
	// Marks come nearly in order: the place is found from the end.
	i := len(e.watches)
	for i > 0 && e.watches[i-1].mark.last > w.mark.last {
		i--
	}
	e.watches = slices.Insert(e.watches, i, w)
	// Counted before looking: a member that settles a piece publishes its
	// low, then looks at watched (notify, BeginWrite), so either it sees
	// this watch or this look sees its change.
	e.watched.Store(int32(len(e.watches)))
	below := e.below()
	failed, locked := e.lockFailed()
	done, ok := verdict(w.mark, below, failed)
	if locked {
		e.failedMu.Unlock()
	}
	if done {
		e.watches = slices.Delete(e.watches, i, i+1)
		e.watched.Store(int32(len(e.watches)))
	}
	e.watchMu.Unlock()
	if done {
		e.tell(w.key, ok)
	}
}

// notify tells OnTrimmed of the watched discards settled since it last
// looked. Lanes call it after every change that can settle one.
func (e *Engine) notify() {
	if e.onTrimmed != nil && e.watched.Load() > 0 {
		e.deliver(false)
	}
}

// deliver takes the settled watches off the list, every one with final
// (Close: what is left is not trimmed, and no watch is kept any more), and
// tells OnTrimmed of them, one batch at a time.
func (e *Engine) deliver(final bool) {
	if e.onTrimmed == nil {
		return
	}
	e.notifyMu.Lock()
	defer e.notifyMu.Unlock()
	e.out = e.collect(e.out[:0], final)
	for _, w := range e.out {
		e.onTrimmed(w.key, w.trimmed)
	}
}

// collect appends to out, with their verdicts, the watches that are
// settled, and takes them off the list.
func (e *Engine) collect(out []watch, final bool) []watch {
	e.watchMu.Lock()
	defer e.watchMu.Unlock()
	if final {
		e.watchShut = true
	}
	if len(e.watches) == 0 {
		return out
	}
	below := e.below()
	gen := e.failGen.Load()
	failed, locked := e.lockFailed()
	if locked {
		defer e.failedMu.Unlock()
	}
	// The list is sorted by last: the marks below is past are its head.
	n := 0
	for n < len(e.watches) && e.watches[n].mark.last < below {
		n++
	}
	for _, w := range e.watches[:n] {
		_, w.trimmed = verdict(w.mark, below, failed)
		out = append(out, w)
	}
	rest := e.watches[n:]
	if gen != e.watchFail || final {
		// A failure since the last look dooms the marks it overlaps now.
		e.watchFail = gen
		k := 0
		for _, w := range rest {
			if done, _ := verdict(w.mark, below, failed); done || final {
				w.trimmed = false
				out = append(out, w)
				continue
			}
			rest[k] = w
			k++
		}
		rest = rest[:k]
	}
	k := copy(e.watches, rest)
	clear(e.watches[k:])
	e.watches = e.watches[:k]
	e.watched.Store(int32(k))
	if verify.On {
		verify.Check(slices.IsSortedFunc(e.watches, func(a, b watch) int { return cmp.Compare(a.mark.last, b.mark.last) }),
			"discard engine: watched discards out of order")
	}
	return out
}

// maxFailed bounds the failed intervals kept; beyond it the closest two are
// merged, which can only make more discards look untrimmed.
const maxFailed = 64

// failedTrim records that a TRIM covering pieces numbered within seqs
// failed, or that pieces numbered within them were dropped. Call it before
// the member publishes the change.
func (e *Engine) failedTrim(seqs [2]uint64) {
	e.failedMu.Lock()
	defer e.failedMu.Unlock()
	defer e.failGen.Add(1)
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
// (or dropped by Close or Fail), and OnTrimmed has been told of those
// watched. It lifts the I/O gate on every member
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
	// What was drained is settled: its watchers hear before Drain returns,
	// from here or from the lane telling them now.
	e.deliver(false)
}

// Fail takes member i out of service after an I/O error: its queued
// discards are dropped (a failed member's contents no longer matter; no
// discard with a piece dropped counts as trimmed), no TRIM starts there
// any more, and reads are no longer steered to it. TRIMs in flight finish.
// Requests parked on the member are resumed.
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
	m.configure(l) // a new device is learned afresh
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
// call admits at once from now on), every watch left is told (trimmed only
// if it was), and the lanes exit and the Issuers are closed before Close
// returns. Call Drain first to trim everything instead.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		for _, m := range e.members {
			m.shut(&m.closed, ErrClosed)
		}
		e.releaseHeld()
		e.wg.Wait()
		e.deliver(true)
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
	// InFlight is how many TRIMs the member has outstanding at most, as
	// configured or learned.
	InFlight int
	// Exclusive means the member's TRIMs yield to its reads and writes
	// (YieldToIO, or learned), for drives whose TRIM stalls other commands.
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
	m := e.members[i]
	l := m.lane.Load()
	s := MemberSettings{
		Discards:  l.issuer != nil,
		InFlight:  int(m.limit.Load()),
		Exclusive: m.yield.Load(),
		MaxLen:    l.cfg.MaxLen,
		MinGap:    time.Duration(m.gap.Load()),
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
