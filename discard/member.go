package discard

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// member is one member's queue and its workers.
//
// Lock order: a goroutine holds at most one member lock, and never calls an
// Issuer, a completion callback or OnError while holding it.
type member struct {
	idx    int
	cfg    Member // with defaults
	issuer Issuer

	mu   sync.Mutex
	cond sync.Cond // on mu; broadcast when queue space frees, a TRIM finishes, or the engine closes

	// Guarded by mu.
	q         *Queue[*join]
	closed    bool
	urgent    int        // Drain callers: they override the I/O gate
	readers   [][2]int64 // ranges WaitRead callers wait on: served first, and override the gate
	lastEnd   time.Time  // when the last TRIM finished, for MinGap
	heldSince time.Time  // when the I/O gate first held back the next TRIM
	stats     counters

	// kick wakes one idle worker: work was queued, I/O ended, a caller
	// became urgent. It holds one token, so wakes are never lost and never
	// block.
	kick chan struct{}

	// busy counts TRIMs in flight, plus transiently one a worker is about
	// to issue. With io it forms the gate handshake: a worker raises busy
	// then reads io; StartIO raises io then reads busy. Both are
	// sequentially consistent atomics, so at least one side sees the
	// other, and a read never starts unnoticed under a starting TRIM.
	busy atomic.Int32
	io   atomic.Int32 // member reads and writes in progress (StartIO/EndIO)

	// outstanding is queued pieces plus in-flight TRIMs, written under mu;
	// read without it so that reads and writes skip the lock when no
	// discard is pending on the member, the common case.
	outstanding atomic.Int64
}

func newMember(idx int, cfg Member) *member {
	cfg = cfg.withDefaults()
	m := &member{
		idx:    idx,
		cfg:    cfg,
		issuer: cfg.Issuer,
		q:      NewQueue[*join](cfg.MaxLen, cfg.Granularity),
		kick:   make(chan struct{}, 1),
	}
	m.cond.L = &m.mu
	return m
}

func (m *member) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// publish publishes the queue's size to the lock-free readers; mu held.
func (m *member) publish() {
	m.outstanding.Store(int64(m.q.Len() + m.q.InFlight()))
}

// push queues r for j (nil for async), blocking while the queue is full.
// It reports false if the engine closed first.
func (m *member) push(r Range, j *join) bool {
	m.mu.Lock()
	for !m.closed && m.q.Len() >= m.cfg.MaxQueued {
		m.cond.Wait()
	}
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.q.Push(r.Off, r.Len, j)
	m.stats.requests++
	m.stats.bytes += r.Len
	m.publish()
	m.mu.Unlock()
	m.wake()
	return true
}

// work is one in-flight slot: it takes the next TRIM when the pacing rules
// allow and issues it. It returns when the engine closes.
func (m *member) work(e *Engine) {
	defer e.wg.Done()
	var is Issue[*join]
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		m.mu.Lock()
		wait, ok := m.next(&is, time.Now())
		closed := m.closed
		m.mu.Unlock()
		if ok {
			m.issue(e, &is)
			continue
		}
		if closed {
			return
		}
		var fire <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-m.kick:
		case <-fire:
		case <-e.quit:
		}
		timer.Stop()
	}
}

// next pops the next TRIM into is if the pacing rules allow one now. When
// they do not, it returns how long to wait before asking again (0: until
// woken). mu held.
func (m *member) next(is *Issue[*join], now time.Time) (time.Duration, bool) {
	if m.closed || m.q.Len() == 0 {
		m.heldSince = time.Time{} // writes may have cancelled what was held
		return 0, false
	}
	if m.cfg.MinGap > 0 && !m.lastEnd.IsZero() {
		if d := m.lastEnd.Add(m.cfg.MinGap).Sub(now); d > 0 {
			return d, false
		}
	}
	m.busy.Add(1)
	if m.cfg.YieldToIO && m.urgent == 0 && len(m.readers) == 0 && m.io.Load() > 0 {
		if m.heldSince.IsZero() {
			m.heldSince = now
		}
		if d := m.heldSince.Add(m.cfg.MaxDefer).Sub(now); d > 0 {
			m.busy.Add(-1)
			return d, false
		}
	}
	m.heldSince = time.Time{}
	popped := false
	for _, r := range m.readers {
		if popped = m.q.PopOverlapping(r[0], r[1], is); popped {
			break
		}
	}
	if !popped {
		m.q.Pop(is)
	}
	m.stats.issued++
	m.stats.issuedBytes += is.Len
	m.publish()
	m.cond.Broadcast() // queue space
	if m.q.Len() > 0 {
		m.wake() // another slot may take the next one
	}
	return 0, true
}

// issue runs one TRIM and settles what it covered.
func (m *member) issue(e *Engine, is *Issue[*join]) {
	start := time.Now()
	err := m.issuer.Discard(is.Off, is.Len)
	end := time.Now()
	if err != nil {
		err = fmt.Errorf("discard member %d [%d, +%d): %w", m.idx, is.Off, is.Len, err)
	}
	m.mu.Lock()
	m.q.Finish(is.ID)
	m.busy.Add(-1)
	m.lastEnd = end
	m.stats.completed++
	m.stats.latency.record(end.Sub(start))
	if err != nil {
		m.stats.errors++
	}
	m.publish()
	m.cond.Broadcast() // writes and reads waiting for this TRIM
	m.mu.Unlock()
	if err != nil && e.onError != nil {
		e.onError(Range{Member: m.idx, Off: is.Off, Len: is.Len}, err)
	}
	for _, p := range is.Parts {
		p.Tag.settle(p.Bytes, err)
	}
	clear(is.Parts) // drop the joins: they go back to the pool
}

// snapshot returns the member's statistics; mu held.
func (m *member) snapshot() MemberStats {
	s := &m.stats
	return MemberStats{
		Member:         m.idx,
		Requests:       s.requests,
		Bytes:          s.bytes,
		Queued:         m.q.Len(),
		QueuedBytes:    m.q.PendingBytes(),
		InFlight:       m.q.InFlight(),
		Issued:         s.issued,
		IssuedBytes:    s.issuedBytes,
		Completed:      s.completed,
		Errors:         s.errors,
		Merged:         m.q.Merged(),
		CancelledBytes: m.q.Cancelled(),
		Latency: Latency{
			P50: s.latency.percentile(0.50),
			P99: s.latency.percentile(0.99),
			Max: s.latency.max,
		},
	}
}
