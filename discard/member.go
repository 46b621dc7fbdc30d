package discard

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"uraid/discard/learn"
	"uraid/internal/verify"
	"uraid/mapping"
)

// member is one member's queue and its lane: the one goroutine that issues
// the member's TRIMs through its Issuer, at most InFlight outstanding.
//
// Lock order: a goroutine holds at most one member lock (and never the
// engine's held lock with it), and never calls an Issuer, a Waiter, a
// Completer or OnError while holding it.
type member struct {
	idx int
	e   *Engine
	// lane is the member's configuration and issuer and, when it discards, the goroutine that
	// drives them. It is replaced whole when a failed member is revived with a new device
	// (Engine.Revive), so lock-free readers load it once and see one consistent configuration.
	lane atomic.Pointer[lane]

	mu   sync.Mutex
	cond sync.Cond // on mu; broadcast when a TRIM finishes or the queue empties, for Drain

	// Guarded by mu.
	q         *Queue[*Discard]
	closed    bool
	down      bool      // the member failed: no more TRIMs, no reads steered here
	urgent    int       // Drain callers: they override the I/O gate
	readers   *Ticket   // parked reads waiting for discards over their range: served first, and override the gate
	writers   *Ticket   // parked writes waiting for a TRIM in flight over their range
	lastEnd   time.Time // when the last TRIM finished, for MinGap
	heldSince time.Time // when the I/O gate first held back the next TRIM
	stats     counters
	learner   *learn.Learner // nil: the member does not learn (Member.Learn)

	// The pacing the lane runs by, configured or learned (learned.go):
	// written under mu, read without it by the I/O path and steering.
	yield    atomic.Bool  // TRIMs yield to reads and writes (exclusive)
	limit    atomic.Int32 // TRIMs in flight at most
	gap      atomic.Int64 // least time between TRIMs, ns
	costIO   atomic.Int64 // measured clean read/write latency, ns (0: unknown)
	costTrim atomic.Int64 // measured cost of a TRIM in flight to a read, ns (0: unknown)
	learns   atomic.Bool  // learner != nil
	// trimStarts counts TRIMs started, so that a read or write can tell
	// whether one started while it ran.
	trimStarts atomic.Uint64

	// work and sleeping form the lane's wake handshake (as the ublk queue's):
	// a waker sets work, then wakes the issuer only if it finds the lane
	// asleep (sleeping 1 -> 2); the lane sets sleeping, then looks at work
	// once more before waiting. Sequentially consistent atomics make sure
	// one side sees the other, so no wake is lost and most cost no syscall.
	work     atomic.Bool
	sleeping atomic.Int32

	// busy counts TRIMs in flight, plus transiently one the lane is about
	// to issue. With io it forms the gate handshake: the lane raises busy
	// then reads io; an admitted read or write raises io then reads busy.
	// Both are sequentially consistent atomics, so at least one side sees
	// the other, and a read never starts unnoticed under a starting TRIM.
	busy atomic.Int32
	io   atomic.Int32 // admitted member reads and writes not yet ended

	// outstanding is queued pieces plus in-flight TRIMs, and queued the
	// queued pieces alone, written under mu and read without it, so that
	// reads and writes skip the lock when no discard is pending on the
	// member, the common case, and the held list checks bounds lock-free.
	outstanding atomic.Int64
	queued      atomic.Int64
	isDown      atomic.Bool
	// low is the lowest order number queued or in flight (math.MaxUint64:
	// none), published with outstanding, for the engine's below. recheck
	// asks the lane to tell the watched discards a change outside it may
	// have settled (a write's cut, a Fail's drop).
	low     atomic.Uint64
	recheck atomic.Bool
}

// lane is one configuration of a member and the state of the goroutine that issues its TRIMs.
type lane struct {
	cfg    Member // with defaults
	issuer Issuer // nil: the member does not discard, and no goroutine runs

	// Guarded by the member's mu.
	slots   []Issue[*Discard]
	startAt []time.Time // when each slot's TRIM was issued
	// For the learner, per slot: the gap since the last TRIM ended when
	// it was issued (negative: none before), and the TRIMs then in flight.
	startGap  []time.Duration
	startConc []int
	free      []int // unused slot ids
	exit      bool  // Revive replaces this lane: stop once nothing is in flight

	// Owned by the lane goroutine: ids started this round, and done as a
	// method value made once so that Wait does not allocate.
	started  []int
	done     func(id int, err error)
	finished chan struct{} // closed when the goroutine has returned
}

func newLane(m *member, cfg Member) *lane {
	cfg = cfg.withDefaults()
	l := &lane{
		cfg: cfg, issuer: cfg.Issuer,
		slots:    make([]Issue[*Discard], cfg.InFlight),
		startAt:  make([]time.Time, cfg.InFlight),
		startGap: make([]time.Duration, cfg.InFlight), startConc: make([]int, cfg.InFlight),
		started:  make([]int, 0, cfg.InFlight),
		finished: make(chan struct{}),
	}
	for i := cfg.InFlight - 1; i >= 0; i-- {
		l.free = append(l.free, i)
	}
	l.done = func(id int, err error) { m.finish(l, id, err) }
	return l
}

func newMember(e *Engine, idx int, cfg Member) *member {
	m := &member{idx: idx, e: e}
	m.low.Store(math.MaxUint64)
	l := newLane(m, cfg)
	m.lane.Store(l)
	m.q = NewQueue[*Discard](l.cfg.MaxLen, l.cfg.Granularity)
	m.cond.L = &m.mu
	m.configure(l)
	return m
}

// configure sets the member's pacing from lane l's configuration, and its
// learner from the configuration's prior; mu held or the member unshared.
func (m *member) configure(l *lane) {
	m.yield.Store(l.cfg.YieldToIO)
	m.limit.Store(int32(l.cfg.InFlight))
	m.gap.Store(int64(l.cfg.MinGap))
	m.costIO.Store(0)
	m.costTrim.Store(0)
	m.learner = nil
	if l.cfg.Learn && l.issuer != nil {
		m.learner = learn.New(l.cfg.YieldToIO, l.cfg.InFlight)
	}
	m.learns.Store(m.learner != nil)
}

// discards reports whether the member has an issuer.
func (m *member) discards() bool { return m.lane.Load().issuer != nil }

// wake tells the lane there may be something to do.
func (m *member) wake() {
	l := m.lane.Load()
	if l.issuer == nil {
		return
	}
	m.work.Store(true)
	if m.sleeping.CompareAndSwap(1, 2) {
		l.issuer.Wake()
	}
}

// publish publishes the queue's size to the lock-free readers; mu held.
func (m *member) publish() {
	m.outstanding.Store(int64(m.q.Len() + m.q.InFlight()))
	m.queued.Store(int64(m.q.Len()))
	low := uint64(math.MaxUint64)
	if s, ok := m.q.Oldest(); ok {
		low = s
	}
	m.low.Store(low)
	if verify.On {
		m.verify()
	}
}

// verify checks the member's invariants; mu held, verify mode only.
func (m *member) verify() {
	if err := m.q.check(); err != nil {
		panic(fmt.Sprintf("discard member %d: queue: %v", m.idx, err))
	}
	inflight := m.q.InFlight()
	if l := m.lane.Load(); !l.exit {
		verify.Check(inflight+len(l.free) == len(l.slots), "discard member %d: %d TRIMs in flight and %d free slots of %d", m.idx, inflight, len(l.free), len(l.slots))
	}
	verify.Check(int(m.busy.Load()) >= inflight, "discard member %d: busy %d below %d TRIMs in flight", m.idx, m.busy.Load(), inflight)
	verify.Check(m.io.Load() >= 0, "discard member %d: %d reads and writes in progress", m.idx, m.io.Load())
	verify.Check(m.urgent >= 0, "discard member %d: urgent %d", m.idx, m.urgent)
	if s, ok := m.q.Oldest(); ok && m.low.Load() != s {
		verify.Check(false, "discard member %d: low %d, oldest %d", m.idx, m.low.Load(), s)
	}
}

// push queues x for d (nil for async) and returns its order number in the
// engine's numbering. It reports whether the member is over its bound
// afterwards, and false for a member that is closed or down, whose share is
// dropped.
func (m *member) push(x mapping.Extent, d *Discard) (seq uint64, over, ok bool) {
	m.mu.Lock()
	if m.closed || m.down {
		m.mu.Unlock()
		return 0, false, false
	}
	// Numbered under the member lock, so that each member's numbers grow.
	seq = m.e.seq.Add(1)
	m.q.PushAt(x.Offset, x.Length, d, seq)
	m.stats.requests++
	m.stats.bytes += x.Length
	m.publish()
	over = m.q.Len() > m.lane.Load().cfg.MaxQueued
	m.mu.Unlock()
	m.wake()
	return seq, over, true
}

// run is the member's lane l: it issues TRIMs when the pacing rules allow,
// waits for them and settles what they covered, until the engine closes (or
// Revive replaces the lane) and nothing is in flight.
func (m *member) run(l *lane) {
	defer m.e.wg.Done()
	defer close(l.finished)
	for {
		m.work.Store(false)
		if m.recheck.Swap(false) {
			m.e.notify()
		}
		m.mu.Lock()
		timeout, release := m.fill(l, m.e.clock.Now())
		exit := (m.closed || l.exit) && m.q.InFlight() == 0
		m.mu.Unlock()
		if release {
			m.e.releaseHeld()
		}
		for _, id := range l.started {
			is := &l.slots[id]
			l.issuer.Start(id, is.Off, is.Len)
		}
		started := len(l.started) > 0
		l.started = l.started[:0]
		if exit {
			return
		}
		m.sleeping.Store(1)
		if m.work.Load() {
			// Woken after fill looked: submit what was started and look again.
			m.sleeping.Store(0)
			if started {
				l.issuer.Wait(0, l.done)
			}
			continue
		}
		l.issuer.Wait(timeout, l.done)
		m.sleeping.Store(0)
	}
}

// fill takes TRIMs off the queue into free slots, appending their ids to
// m.started, while the pacing rules allow. It returns how long the lane may
// sleep before it must look again (-1: until woken or a TRIM finishes), and
// whether the queue came back within its bound while async discards are
// held back for it. mu held.
func (m *member) fill(l *lane, now time.Time) (wait time.Duration, release bool) {
	cfg := &l.cfg
	for {
		if m.closed || m.down || l.exit || m.q.Len() == 0 {
			m.heldSince = time.Time{} // writes may have cancelled what was held
			return -1, release
		}
		gap, limit := m.pacing(l)
		if len(l.free) == 0 || m.q.InFlight() >= limit {
			return -1, release
		}
		// A gap runs from the end of the last TRIM: while one is in flight,
		// the next waits for its end and then the gap. Started beside it, it
		// would reach a drive that runs one at a time back to back with it.
		if gap > 0 && m.q.InFlight() > 0 {
			return -1, release
		}
		if gap > 0 && !m.lastEnd.IsZero() {
			if d := m.lastEnd.Add(gap).Sub(now); d > 0 {
				return d, release
			}
		}
		m.busy.Add(1)
		if m.yield.Load() && m.urgent == 0 && m.readers == nil && m.io.Load() > 0 {
			if m.heldSince.IsZero() {
				m.heldSince = now
			}
			if d := m.heldSince.Add(cfg.MaxDefer).Sub(now); d > 0 {
				m.busy.Add(-1)
				return d, release
			}
		}
		m.heldSince = time.Time{}
		id := l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		switch {
		case m.q.InFlight() > 0:
			l.startGap[id] = 0 // beside another TRIM: no rest at all
		case m.lastEnd.IsZero():
			l.startGap[id] = -1
		default:
			l.startGap[id] = now.Sub(m.lastEnd)
		}
		is := &l.slots[id]
		popped := false
		for t := m.readers; t != nil && !popped; t = t.next {
			popped = m.q.PopOverlapping(t.off, t.end-t.off, is)
		}
		if !popped {
			m.q.Pop(is)
		}
		m.stats.issued++
		m.stats.issuedBytes += is.Len
		m.trimStarts.Add(1)
		l.startConc[id] = m.q.InFlight()
		l.startAt[id] = now
		l.started = append(l.started, id)
		m.publish()
		release = release || (m.q.Len() <= cfg.MaxQueued && m.e.held.Load() > 0)
	}
}

// finish settles TRIM id of lane l: it runs on the lane, from the Issuer's
// Wait.
func (m *member) finish(l *lane, id int, err error) {
	is := &l.slots[id]
	end := m.e.clock.Now()
	if err != nil {
		err = fmt.Errorf("discard member %d [%d, +%d): %w", m.idx, is.Off, is.Len, err)
	}
	m.mu.Lock()
	if !m.q.Finish(is.ID) && verify.On {
		panic(fmt.Sprintf("discard member %d: TRIM slot %d finished twice", m.idx, id))
	}
	l.free = append(l.free, id)
	m.busy.Add(-1)
	m.lastEnd = end
	m.stats.completed++
	took := end.Sub(l.startAt[id])
	m.stats.latency.Observe(took)
	if err != nil {
		m.stats.errors++
		m.e.failedTrim(is.Seqs) // no discard with a piece in it counts as trimmed
	}
	var learned Learned
	changed := false
	if m.learner != nil && err == nil && !l.exit {
		changed = m.learner.ObserveTrim(learn.TrimSample{Bytes: is.Len, Took: took, Gap: l.startGap[id], InFlight: l.startConc[id]})
		m.applyDecision(l)
		if changed && m.e.onLearned != nil {
			learned, _ = m.learned()
		}
	}
	// A TRIM that was in flight when its member failed no longer matters to
	// its discards, as those Fail dropped do not: the member's device may
	// even have been let go meanwhile, and refuse the command. It still
	// counts as not trimmed (failedTrim above).
	moot := m.down
	m.publish()
	resume := m.unpark()
	m.cond.Broadcast() // Drain
	m.mu.Unlock()
	if changed && m.e.onLearned != nil {
		m.e.onLearned(m.idx, learned)
	}
	if err != nil && m.e.onError != nil {
		m.e.onError(mapping.Extent{Member: m.idx, Offset: is.Off, Length: is.Len}, err)
	}
	// Watchers first: a Sync discard this TRIM settles is trimmed (or not)
	// by the time it is acknowledged.
	m.e.notify()
	settled := err
	if moot {
		settled = nil
	}
	for _, p := range is.Parts {
		p.Tag.settle(p.Bytes, settled)
	}
	clear(is.Parts) // drop the discards: their slots are reused
	resumeAll(resume)
}

// shut takes the member out of work, for Fail (flag &m.down, err nil: a
// failed member's TRIMs no longer matter) or Close (&m.closed, ErrClosed).
// The flag is set under mu, where push, the lane and unpark read it, before
// the queue is dropped, so that nothing is queued behind the drop; the lane
// and Drain callers are woken to see it, and every parked request resumed,
// since what it waited for will not happen now.
func (m *member) shut(flag *bool, err error) {
	m.mu.Lock()
	*flag = true
	if lo, hi, ok := m.q.QueuedSeqs(); ok {
		m.e.failedTrim([2]uint64{lo, hi}) // dropped, not trimmed: before the publish
	}
	parts := m.q.Drop(nil)
	m.publish()
	resume := m.unpark()
	m.cond.Broadcast()
	m.mu.Unlock()
	m.recheck.Store(true)
	m.wake()
	for _, p := range parts {
		p.Tag.settle(p.Bytes, err)
	}
	resumeAll(resume)
}

// unpark takes the parked requests that may go on now off the wait lists
// and returns them, linked, to be resumed once mu is released: writes whose
// range no TRIM in flight touches, and reads whose range nothing pending
// touches. mu held.
func (m *member) unpark() *Ticket {
	var out *Ticket
	take := func(list **Ticket, clear func(t *Ticket) bool) {
		for p := list; *p != nil; {
			t := *p
			if m.closed || m.down || clear(t) {
				*p = t.next
				t.next = out
				out = t
				continue
			}
			p = &t.next
		}
	}
	take(&m.writers, func(t *Ticket) bool { return !m.q.OverlapsInFlight(t.off, t.end-t.off) })
	take(&m.readers, func(t *Ticket) bool { return !m.q.Overlaps(t.off, t.end-t.off) })
	return out
}

// park puts t on list for [off, off+n); mu held.
func (m *member) park(list **Ticket, t *Ticket, off, n int64) {
	if t.parked.Swap(true) && verify.On {
		panic(fmt.Sprintf("discard member %d: a request parked twice", m.idx))
	}
	t.off, t.end = off, off+n
	t.next = *list
	*list = t
}

// resumeAll resumes the requests of a list unpark returned. Each ticket is
// unlinked before its waiter runs, since the request may park again at once.
func resumeAll(t *Ticket) {
	for t != nil {
		next := t.next
		t.next = nil
		t.parked.Store(false)
		t.Waiter.Resume()
		t = next
	}
}

// snapshot returns the member's statistics; mu held.
func (m *member) snapshot() MemberStats {
	s := &m.stats
	lat := s.latency.Snapshot()
	return MemberStats{
		Member:           m.idx,
		Requests:         s.requests,
		Bytes:            s.bytes,
		Queued:           m.q.Len(),
		QueuedBytes:      m.q.PendingBytes(),
		InFlight:         m.q.InFlight(),
		Issued:           s.issued,
		IssuedBytes:      s.issuedBytes,
		Completed:        s.completed,
		Errors:           s.errors,
		Merged:           m.q.Merged(),
		CancelledBytes:   m.q.Cancelled(),
		Latency:          summarize(lat),
		LatencyHistogram: lat,
	}
}
