package latency

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestObserveBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{
		-time.Second,          // clamps to 0: first bucket
		10 * time.Microsecond, // on the bound: inclusive, first bucket
		11 * time.Microsecond, // second bucket
		time.Millisecond,      // bucket of 1ms
		10 * time.Second,      // last bound
		10*time.Second + 1,    // above all bounds: +Inf only
		time.Hour,             // +Inf
	} {
		h.Observe(d)
	}
	s := h.Snapshot()
	assert.Equal(t, uint64(7), s.Count())
	assert.Equal(t, uint64(2), s.Counts[0])
	assert.Equal(t, uint64(1), s.Counts[1])
	assert.Equal(t, uint64(1), s.Counts[6], "1ms is bucket le=0.001")
	assert.Equal(t, uint64(1), s.Counts[len(Bounds)-1])
	assert.Equal(t, uint64(2), s.Counts[len(Bounds)])
	want := 10*time.Microsecond + 11*time.Microsecond + time.Millisecond + 20*time.Second + 1 + time.Hour
	assert.Equal(t, uint64(want), s.SumNs)
	c := s.Cumulative()
	assert.Equal(t, uint64(2), c[0])
	assert.Equal(t, uint64(3), c[1])
	assert.Equal(t, uint64(5), c[len(Bounds)-1], "the +Inf samples are in no bound's bucket")
	for i := 1; i < len(c); i++ {
		assert.LessOrEqual(t, c[i-1], c[i], "cumulative counts never fall")
	}
}

func TestBoundsAscend(t *testing.T) {
	for i := 1; i < len(Bounds); i++ {
		assert.Less(t, Bounds[i-1], Bounds[i])
	}
}

func TestSnapshotAdd(t *testing.T) {
	var a, b Histogram
	a.Observe(time.Millisecond)
	b.Observe(time.Millisecond)
	b.Observe(time.Second)
	s := a.Snapshot()
	s.Add(b.Snapshot())
	assert.Equal(t, uint64(3), s.Count())
	assert.Equal(t, uint64(2*time.Millisecond+time.Second), s.SumNs)
}

func TestConcurrentObserve(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				h.Observe(time.Millisecond)
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	assert.Equal(t, uint64(4000), s.Count())
}

func TestObserveDoesNotAllocate(t *testing.T) {
	var h Histogram
	start := Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.Observe(Since(start)) }))
}

// BenchmarkTimeAndObserve is what the data path pays per timed I/O: a clock read and a record.
func BenchmarkTimeAndObserve(b *testing.B) {
	var h Histogram
	start := Now()
	for b.Loop() {
		h.Observe(Since(start))
	}
}

// BenchmarkObserve is the record alone, without the clock.
func BenchmarkObserve(b *testing.B) {
	var h Histogram
	for b.Loop() {
		h.Observe(3 * time.Millisecond)
	}
}
