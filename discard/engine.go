package discard

import (
	"fmt"
	"sync"
)

// Engine queues, merges, paces and issues the discards of one array. See the
// package documentation for the rules it keeps.
type Engine struct {
	mode    Mode
	members []*member
	onError func(Range, error)

	quit      chan struct{} // closed by Close: workers stop waiting
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New starts an engine: InFlight worker goroutines per member that
// discards, owned by the engine and stopped by Close.
func New(cfg Config) (*Engine, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("discard engine: %w", err)
	}
	e := &Engine{mode: cfg.Mode, onError: cfg.OnError, quit: make(chan struct{})}
	for i, mc := range cfg.Members {
		e.members = append(e.members, newMember(i, mc))
	}
	for _, m := range e.members {
		if m.issuer == nil {
			continue
		}
		for range m.cfg.InFlight {
			e.wg.Add(1)
			go m.work(e)
		}
	}
	return e, nil
}

// Mode is the acknowledgement mode the engine was built with.
func (e *Engine) Mode() Mode { return e.mode }

// Discard queues ranges, the per-member pieces of one array discard, on
// every member they name at once, and calls done exactly once: in Sync mode
// when every piece is trimmed (with the first error), in Async mode as soon
// as every piece is queued. done may run before Discard returns; otherwise
// it runs on a worker, or on the goroutine of the WaitWrite or Close that
// settled the last bytes. It must not block for long.
//
// When a member's queue is full Discard blocks until it has room: that
// backpressure is what bounds memory and tells the kernel to slow down.
// Ranges of a member without an Issuer, and empty ranges, are skipped. An
// invalid range fails the whole discard before anything is queued.
func (e *Engine) Discard(ranges []Range, done func(error)) {
	var total int64
	for _, r := range ranges {
		if err := r.check(len(e.members)); err != nil {
			done(err)
			return
		}
		if e.members[r.Member].issuer != nil {
			total += r.Len
		}
	}
	if total == 0 {
		done(nil)
		return
	}
	var j *join
	if e.mode == Sync {
		j = newJoin(total, done)
	}
	var queued int64
	for _, r := range ranges {
		m := e.members[r.Member]
		if m.issuer == nil || r.Len == 0 {
			continue
		}
		if !m.push(r, j) {
			if j != nil {
				j.settle(total-queued, ErrClosed)
			} else {
				done(ErrClosed)
			}
			return
		}
		queued += r.Len
	}
	if j == nil {
		done(nil)
	}
}

// Drain waits until every discard queued before the call has been trimmed
// (or dropped by Close). It lifts the I/O gate on every member while it
// waits, but keeps MinGap: a stop or a consistency check must not be held
// back by I/O, and the device's penalty would only make it slower.
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
		for {
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

// Close stops the engine: queued discards are dropped (Sync callers get
// ErrClosed; Async ones were acknowledged and simply lose an advisory
// TRIM), TRIMs in flight finish, blocked callers return, and the workers
// exit before Close returns. Call Drain first to trim everything instead.
// Close blocks as long as an Issuer call in flight does.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		for _, m := range e.members {
			m.mu.Lock()
			m.closed = true
			parts := m.q.Drop(nil)
			m.publish()
			m.cond.Broadcast()
			m.mu.Unlock()
			for _, p := range parts {
				p.Tag.settle(p.Bytes, ErrClosed)
			}
		}
		close(e.quit)
		e.wg.Wait()
	})
	return nil
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
