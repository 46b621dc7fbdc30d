package discard

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/discard/learn"
	"uraid/internal/clock"
	"uraid/internal/discardtest"
	"uraid/internal/testutil"
	"uraid/mapping"
)

// stallTrims is by which TRIM a member whose TRIMs stall its reads is
// found exclusive, counting the TRIM the first stalled read overlapped:
// each stalled read ends after its TRIM, so it counts at the next one's
// judgement, and MinOverlapped samples then ExclusiveEnterRuns agreeing
// judgements are needed. docs/discard.md says the same.
const stallTrims = learn.MinOverlapped + learn.ExclusiveEnterRuns

// learningPair is two learning members with held drives and a manual clock:
// member 0's TRIMs are stalled by hand, member 1 stays idle of TRIMs.
type learningPair struct {
	e       *Engine
	clk     *clock.Manual
	f0      *fakeDrive
	mu      sync.Mutex
	learned []Learned
}

func newLearningPair(t *testing.T, m0 Member) *learningPair {
	p := &learningPair{clk: clock.NewManual(time.Unix(0, 0))}
	p.f0 = newDrive(p.clk, true)
	m0.Issuer, m0.Learn, m0.InFlight = discardtest.Blocking(p.f0.trim, p.clk), true, 4
	p.e = newEngine(t, Config{Mode: Async, Clock: p.clk, Members: []Member{
		m0, {Issuer: newDrive(p.clk, false).issuer(), Learn: true, InFlight: 4},
	}, OnLearned: func(member int, l Learned) {
		p.mu.Lock()
		defer p.mu.Unlock()
		require.Equal(t, 0, member)
		p.learned = append(p.learned, l)
	}})
	t.Cleanup(p.f0.open)
	return p
}

// stalledTrim runs TRIM n on member 0 for took while a read of member 0
// waits for it: the read ends (is recorded) after the TRIM.
func (p *learningPair) stalledTrim(t *testing.T, n int, took time.Duration) {
	t.Helper()
	discard(p.e, mapping.Extent{Member: 0, Offset: int64(n) << 20, Length: 4096})
	p.f0.next(t)
	r, wk := newRead(mapping.Extent{Member: 0, Offset: 1 << 30, Length: 4096})
	require.Equal(t, 0, read(t, p.e, r, wk, 0))
	p.clk.Advance(took)
	p.f0.release(t)
	testutil.WaitFor(t, "the TRIM done", func() bool { return p.e.Stats()[0].Completed == uint64(n) })
	p.e.EndReadTook(r, 0, took+100*time.Microsecond)
}

// cleanReads records n reads of member 0 with no TRIM about. A sample is
// dropped when the member lock is taken (the lane may be looking at its
// queue): it reads until n were recorded.
func (p *learningPair) cleanReads(t *testing.T, n int) {
	for {
		l, _ := p.e.Learned(0)
		if l.Basis.IOCleanN >= uint64(n) {
			return
		}
		r, wk := newRead(mapping.Extent{Member: 0, Offset: 1 << 30, Length: 4096})
		read(t, p.e, r, wk, 0)
		p.e.EndReadTook(r, 0, 100*time.Microsecond)
	}
}

// A member whose TRIMs stall its reads, though nothing configured says so,
// is found exclusive by TRIM stallTrims, says so once to OnLearned with the
// figures, yields from then on, and reads are steered away from its TRIMs
// even when its mirror is busier.
func TestLearnsExclusiveAndSteersAway(t *testing.T) {
	p := newLearningPair(t, Member{})
	e := p.e
	assert.False(t, e.Settings(0).Exclusive)
	p.cleanReads(t, learn.MinClean)
	n := 0
	for !e.Settings(0).Exclusive {
		require.Less(t, n, 4*stallTrims, "not exclusive")
		n++
		p.stalledTrim(t, n, 5*time.Millisecond)
	}
	l, ok := e.Learned(0)
	require.True(t, ok)
	// Each stalled read's sample is taken unless the member lock was busy
	// at that instant (the I/O path never waits to learn): every one
	// dropped costs a TRIM more.
	dropped := n - int(l.Basis.IOOverlappedN)
	assert.LessOrEqual(t, n, stallTrims+dropped, "not exclusive by TRIM %d with %d samples dropped", stallTrims, dropped)
	assert.True(t, l.Exclusive)
	assert.Equal(t, int64(5000), l.Basis.TrimUS)
	assert.Greater(t, l.Basis.IOOverlappedUS, 40*l.Basis.IOCleanUS)
	p.mu.Lock()
	require.Len(t, p.learned, 1, "one decision changed, one word of it")
	assert.True(t, p.learned[0].Exclusive)
	p.mu.Unlock()

	// A TRIM in flight on member 0; member 1 has three reads in progress.
	// Before learning, the TRIM counted for 2 µs and member 0 would serve
	// the read; now it counts for its 5 ms, more than member 1's reads at
	// their measured latency. Priced by I/O counts alone (planted steer),
	// member 0 would serve it, even after its gate opened under the TRIM.
	discard(e, mapping.Extent{Member: 0, Offset: 100 << 20, Length: 4096})
	p.f0.next(t)
	var busy []*Read
	for range 3 {
		b, bwk := newRead(mapping.Extent{Member: 1, Offset: 1 << 30, Length: 4096})
		require.Equal(t, 1, read(t, e, b, bwk, 1))
		busy = append(busy, b)
	}
	r, wk := newRead(mapping.Extent{Member: 0, Offset: 1 << 30, Length: 4096}, mapping.Extent{Member: 1, Offset: 1 << 30, Length: 4096})
	for turn := range uint32(2) {
		assert.Equal(t, 1, read(t, e, r, wk, turn), "turn %d: read sent to the member whose TRIM stalls it", turn)
		e.EndRead(r, 0)
	}
	for _, b := range busy {
		e.EndRead(b, 0)
	}
	p.f0.release(t)
}

// A fast member (reads as quick beside a TRIM as without) is never found
// exclusive, and keeps its configured limit and no gap.
func TestLearnsFastMemberStaysShared(t *testing.T) {
	p := newLearningPair(t, Member{})
	p.cleanReads(t, learn.MinClean)
	for n := 1; n <= 3*stallTrims; n++ {
		discard(p.e, mapping.Extent{Member: 0, Offset: int64(n) << 20, Length: 4096})
		p.f0.next(t)
		r, wk := newRead(mapping.Extent{Member: 0, Offset: 1 << 30, Length: 4096})
		read(t, p.e, r, wk, 0)
		p.e.EndReadTook(r, 0, 120*time.Microsecond)
		p.clk.Advance(time.Millisecond)
		p.f0.release(t)
		testutil.WaitFor(t, "the TRIM done", func() bool { return p.e.Stats()[0].Completed == uint64(n) })
	}
	s := p.e.Settings(0)
	assert.False(t, s.Exclusive)
	assert.Equal(t, 4, s.InFlight)
	assert.Zero(t, s.MinGap)
	p.mu.Lock()
	assert.Empty(t, p.learned)
	p.mu.Unlock()
}

// A setting the operator fixed wins: the member is learned exclusive and
// the decision shows it, but the lane keeps the configured value.
func TestFixedSettingWins(t *testing.T) {
	p := newLearningPair(t, Member{Fixed: KnobExclusive})
	p.cleanReads(t, learn.MinClean)
	for n := 1; ; n++ {
		if l, _ := p.e.Learned(0); l.Exclusive {
			break
		}
		require.Less(t, n, 4*stallTrims, "not learned exclusive")
		p.stalledTrim(t, n, 5*time.Millisecond)
	}
	l, ok := p.e.Learned(0)
	require.True(t, ok)
	assert.True(t, l.Exclusive, "learned")
	assert.Equal(t, KnobExclusive, l.Fixed)
	assert.False(t, p.e.Settings(0).Exclusive, "applied: the configured value")
}

// The I/O path records its samples without allocating.
func TestEndReadTookAllocatesNothing(t *testing.T) {
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: newInstant(), Learn: true}}})
	r, wk := newRead(mapping.Extent{Member: 0, Offset: 0, Length: 4096})
	read(t, e, r, wk, 0)
	e.EndReadTook(r, 0, time.Millisecond)
	allocs := testing.AllocsPerRun(100, func() {
		if e.BeginRead(r, 0) {
			e.EndReadTook(r, 0, time.Millisecond)
		}
	})
	assert.Zero(t, allocs)
}

// penaltyDrive takes base per TRIM, and penalty more when the TRIM starts
// less than gap after the previous one ended, on a virtual clock.
type penaltyDrive struct {
	clk                *clock.Virtual
	base, penalty, gap time.Duration
	lastEnd            time.Time
}

func (d *penaltyDrive) trim(off, n int64) error {
	took := d.base
	if !d.lastEnd.IsZero() && d.clk.Now().Sub(d.lastEnd) < d.gap {
		took += d.penalty
	}
	d.clk.Sleep(took)
	d.lastEnd = d.clk.Now()
	return nil
}

// A member that punishes back-to-back TRIMs, under a flood of them, gets
// a gap in (G/2, 2G] through the engine, and runs by it; a flag fixing the
// gap wins over it. The flood explores (a 1 s rest once in 32 TRIMs until
// three isolated TRIMs are known), then bisects: 400 TRIMs are plenty.
func TestLearnsGapThroughTheEngine(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		clk := clock.NewVirtual(time.Unix(0, 0))
		d := &penaltyDrive{clk: clk, base: 500 * time.Microsecond, penalty: 50 * time.Millisecond, gap: 20 * time.Millisecond}
		m := Member{Issuer: discardtest.Blocking(d.trim, clk), Learn: true, InFlight: 1}
		if fixed {
			m.MinGap, m.Fixed = time.Millisecond, KnobGap
		}
		e := newEngine(t, Config{Mode: Async, Clock: clk, Members: []Member{m}})
		for n := range 400 {
			discard(e, mapping.Extent{Offset: int64(n) * 8192, Length: 4096})
		}
		e.Drain()
		l, ok := e.Learned(0)
		require.True(t, ok)
		if fixed {
			// The flag's gap is what the lane keeps; the learner sees only
			// what it lets it see (here: every TRIM 1 ms apart, penalized).
			assert.Equal(t, time.Millisecond, e.Settings(0).MinGap)
			assert.Equal(t, KnobGap, l.Fixed)
			assert.Equal(t, uint64(400), l.Basis.Trims)
			continue
		}
		assert.Greater(t, l.Gap, d.gap/2, "%+v", l.Basis)
		assert.LessOrEqual(t, l.Gap, 2*d.gap, "%+v", l.Basis)
		assert.Equal(t, l.Gap, e.Settings(0).MinGap)
	}
}
