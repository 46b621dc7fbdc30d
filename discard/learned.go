package discard

import (
	"time"

	"uraid/discard/learn"
	"uraid/internal/plant"
)

// A learning member (Member.Learn) measures its TRIMs where they finish
// (member.finish) and its reads and writes where the caller ends them with a
// latency (EndReadTook, EndWriteTook), feeds both to its learn.Learner under
// the member lock, and paces its TRIMs by the decision: the I/O gate
// (yield), the in-flight limit (limit) and the gap (fill asks the learner
// for each TRIM, probes included). A read or write never waits for the
// learner: its sample is taken only if the member lock is free at once
// (TryLock), and dropped otherwise.

// Learned is what a member's lane learned of its TRIMs.
type Learned struct {
	learn.Decision
	// Fixed are the settings the configuration fixed (Member.Fixed): the
	// decision shows what was learned, the lane applies the configured
	// value.
	Fixed Knobs `json:"-"`
}

// Costs of steering a read (expected wait, in nanoseconds) when nothing was
// measured yet; see member.wait.
const (
	defaultIOCost    = int64(100 * time.Microsecond) // a read or write in progress
	defaultStallCost = int64(10 * time.Millisecond)  // a TRIM in flight on a member that stalls I/O
	nonStallCost     = int64(2 * time.Microsecond)   // a TRIM in flight on one that does not
	queuedCost       = int64(time.Microsecond)       // TRIMs queued on one that does not
)

// applyDecision makes the lane run by the learner's decision, except for
// the settings the configuration fixed; mu held.
func (m *member) applyDecision(l *lane) {
	lr := m.learner
	if l.cfg.Fixed&KnobExclusive == 0 {
		m.yield.Store(lr.Exclusive())
	}
	if l.cfg.Fixed&KnobInFlight == 0 {
		m.limit.Store(int32(min(lr.Limit(), l.cfg.InFlight)))
	}
	if l.cfg.Fixed&KnobGap == 0 {
		m.gap.Store(int64(lr.Gap()))
	}
	io, trim := lr.Costs()
	m.costIO.Store(int64(io))
	m.costTrim.Store(int64(trim))
}

// pacing is the gap before the next TRIM and the most in flight, as
// configured or learned (with the learner's probes); mu held.
func (m *member) pacing(l *lane) (gap time.Duration, limit int) {
	gap, limit = l.cfg.MinGap, l.cfg.InFlight
	if m.learner == nil {
		return gap, limit
	}
	lgap, llimit := m.learner.Next()
	if l.cfg.Fixed&KnobGap == 0 {
		gap = lgap
	}
	if l.cfg.Fixed&KnobInFlight == 0 {
		limit = min(llimit, l.cfg.InFlight)
	}
	return gap, limit
}

// learned returns the member's decision, false when it does not learn; mu
// held.
func (m *member) learned() (Learned, bool) {
	if m.learner == nil {
		return Learned{}, false
	}
	return Learned{Decision: m.learner.Decision(), Fixed: m.lane.Load().cfg.Fixed}, true
}

// ioMark is what startIO saw of member i's TRIMs: how many had started
// (shifted left) and whether one was in flight (bit 0).
func (e *Engine) ioMark(i int) uint64 {
	m := e.members[i]
	mark := m.trimStarts.Load() << 1
	if m.busy.Load() > 0 {
		mark |= 1
	}
	return mark
}

// observeIO records a read or write on member i that took took, begun when
// the member's TRIMs stood at mark: it overlapped a TRIM if one was in
// flight at its start or end, or one started meanwhile. It is dropped when
// the member lock is taken: the I/O path never waits to learn.
func (e *Engine) observeIO(i int, mark uint64, took time.Duration) {
	m := e.members[i]
	if took < 0 || !m.learns.Load() {
		return
	}
	over := mark&1 != 0 || m.busy.Load() > 0 || m.trimStarts.Load() != mark>>1
	if !m.mu.TryLock() {
		return
	}
	if m.learner != nil {
		m.learner.ObserveIO(learn.IOSample{Took: took, Overlapped: over})
	}
	m.mu.Unlock()
}

// Learned returns what member i's lane learned, false when it does not
// learn (Member.Learn).
func (e *Engine) Learned(i int) (Learned, bool) {
	m := e.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.learned()
}

// wait is the member's expected wait for a read sent there now, in
// nanoseconds, for steering: the reads and writes in progress at their
// measured latency, plus what its TRIMs cost a read by stall class (see
// stall): each TRIM in flight at its measured latency on a member whose
// TRIMs stall I/O, or at the measured slowdown of overlapped reads on one
// whose do not; TRIMs queued a little, since a read there holds them back.
// Unmeasured members count at the default costs, which keep the order of
// the stall classes.
func (m *member) wait() int64 {
	io := m.costIO.Load()
	if io <= 0 {
		io = defaultIOCost
	}
	w := int64(max(m.io.Load(), 0)) * io
	if plant.Is("steer") {
		return w // the TRIMs left out: the read is priced by its I/O counts alone
	}
	busy := int64(max(m.busy.Load(), 1))
	trim := m.costTrim.Load()
	switch m.stall() {
	case 1:
		w += queuedCost
	case 2:
		w += busy * max(trim, nonStallCost)
	case 3:
		w += max(trim, defaultStallCost) / 4
	case 4:
		if trim <= 0 {
			trim = defaultStallCost
		}
		w += busy * trim
	}
	return w
}
