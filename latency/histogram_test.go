package latency

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
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
	want := 10*time.Microsecond + 11*time.Microsecond + time.Millisecond + 20*time.Second + 1 + time.Hour
	assert.Equal(t, uint64(want), s.SumNs)
	assert.Equal(t, time.Hour, s.Max)
	c := s.Cumulative()
	assert.Equal(t, uint64(2), c[0])
	assert.Equal(t, uint64(3), c[1])
	assert.Equal(t, uint64(3), c[5], "nothing between 11µs and 500µs")
	assert.Equal(t, uint64(4), c[6], "1ms is in le=0.001")
	assert.Equal(t, uint64(5), c[len(Bounds)-1], "the +Inf samples are in no bound's bucket")
	for i := 1; i < len(c); i++ {
		assert.LessOrEqual(t, c[i-1], c[i], "cumulative counts never fall")
	}
}

// TestCumulativeIsExact checks the exported buckets against a count of the samples themselves:
// the fine buckets hold every exported bound, so no sample lands on the wrong side of one.
func TestCumulativeIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ds := rapid.SliceOf(rapid.Custom(func(t *rapid.T) time.Duration {
			// Around the bounds as often as anywhere else.
			if rapid.Bool().Draw(t, "near") {
				b := rapid.SampledFrom(Bounds[:]).Draw(t, "bound")
				return b + time.Duration(rapid.Int64Range(-2, 2).Draw(t, "off"))
			}
			return time.Duration(rapid.Int64Range(0, int64(20*time.Second)).Draw(t, "d"))
		})).Draw(t, "samples")
		var h Histogram
		for _, d := range ds {
			h.Observe(d)
		}
		s := h.Snapshot()
		c := s.Cumulative()
		for i, b := range Bounds {
			var want uint64
			for _, d := range ds {
				if d <= b {
					want++
				}
			}
			if c[i] != want {
				t.Fatalf("le=%v: %d samples counted, %d are at or below it", b, c[i], want)
			}
		}
	})
}

// TestQuantileBound: a quantile is never below the true one and at most an eighth above it.
func TestQuantileBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ds := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) time.Duration {
			return time.Duration(rapid.Int64Range(0, int64(200*time.Second)).Draw(t, "d"))
		}), 1, 200).Draw(t, "samples")
		q := rapid.Float64Range(0, 1).Draw(t, "q")
		var h Histogram
		for _, d := range ds {
			h.Observe(d)
		}
		s := h.Snapshot()
		sorted := slices.Clone(ds)
		slices.Sort(sorted)
		rank := max(int(q*float64(len(ds))+0.5), 1)
		truth := sorted[rank-1]
		got := s.Quantile(q)
		if got < truth {
			t.Fatalf("q%.3f = %v below the sample it stands for, %v", q, got, truth)
		}
		if float64(got) > float64(max(truth, time.Microsecond))*step+1 {
			t.Fatalf("q%.3f = %v more than an eighth above %v", q, got, truth)
		}
		if got > s.Max {
			t.Fatalf("q%.3f = %v above the largest sample %v", q, got, s.Max)
		}
	})
}

func TestQuantileEmpty(t *testing.T) {
	var s Snapshot
	assert.Zero(t, s.Quantile(0.5))
}

func TestFineBounds(t *testing.T) {
	fb := fineBounds()
	for i := 1; i < len(fb); i++ {
		require.Less(t, fb[i-1], fb[i])
		require.LessOrEqual(t, float64(fb[i]), float64(fb[i-1])*step+1, "bucket %d wider than an eighth", i)
	}
	for _, b := range Bounds {
		require.Contains(t, fb[:], b, "exported bound %v is not a counting bound", b)
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
	assert.Equal(t, time.Second, s.Max)
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
