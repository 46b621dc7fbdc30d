package latency

import (
	"math"
	"sync/atomic"
	"time"
)

// Bounds are the buckets the metrics export (inclusive upper bounds, Prometheus' "le"), from the
// 10 µs of a fast NVMe read to the seconds of a TRIM on a drive that erases as it goes; a sample
// above the last is in the +Inf bucket only.
var Bounds = [...]time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// step is the widest a counting bucket may be, as a ratio of its upper bound to its lower one: a
// quantile reported as its bucket's upper bound overstates by at most an eighth.
const step = 1.125

// fine are the bounds samples are counted in: every one of Bounds, so the exported counts are
// exact, and between them (and from 1 µs below them to 100 s above) geometric steps no wider than
// step, so quantiles are close. Exporting these ~160 buckets would swamp a scrape; counting in
// them costs a binary search.
var fine = fineBounds()

const fineLen = 160 // len(fineBounds()); TestFineBounds holds the two together

func fineBounds() [fineLen]time.Duration {
	anchors := append([]time.Duration{time.Microsecond}, Bounds[:]...)
	anchors = append(anchors, 100*time.Second)
	var out [fineLen]time.Duration
	n := 0
	for i := 1; i < len(anchors); i++ {
		lo, hi := float64(anchors[i-1]), float64(anchors[i])
		k := int(math.Ceil(math.Log(hi/lo) / math.Log(step)))
		for j := 1; j <= k; j++ {
			out[n] = time.Duration(math.Round(lo * math.Pow(hi/lo, float64(j)/float64(k))))
			n++
		}
	}
	if n != fineLen {
		panic("latency: fineLen is stale; set it to the number of bounds fineBounds makes")
	}
	return out
}

// buckets counts the fine buckets below 1 µs, at or under each fine bound, and above the last.
const buckets = fineLen + 2

// Histogram counts samples. The zero value is empty and ready.
type Histogram struct {
	counts [buckets]atomic.Uint64 // per bucket, not cumulative
	sumNs  atomic.Uint64
	maxNs  atomic.Int64
}

// Observe records d; a negative d (a clock that stepped back) counts as 0.
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	h.counts[bucket(d)].Add(1)
	h.sumNs.Add(uint64(d))
	for m := h.maxNs.Load(); int64(d) > m && !h.maxNs.CompareAndSwap(m, int64(d)); m = h.maxNs.Load() {
	}
}

// bucket is the index of the counting bucket holding d >= 0: 0 for d at or below 1 µs, i+1 for
// d in (fine[i-1], fine[i]], buckets-1 above every bound.
func bucket(d time.Duration) int {
	if d <= time.Microsecond {
		return 0
	}
	lo, hi := 0, len(fine) // the first bound >= d lies in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if fine[mid] < d {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo + 1
}

// Snapshot is a histogram's counts at one moment.
type Snapshot struct {
	counts [buckets]uint64
	SumNs  uint64
	Max    time.Duration
}

// Snapshot reads h.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
	}
	s.SumNs = h.sumNs.Load()
	s.Max = time.Duration(h.maxNs.Load())
	return s
}

// Add folds o into s: a histogram of both sets of samples.
func (s *Snapshot) Add(o Snapshot) {
	for i := range s.counts {
		s.counts[i] += o.counts[i]
	}
	s.SumNs += o.SumNs
	s.Max = max(s.Max, o.Max)
}

// Count is the number of samples.
func (s *Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.counts {
		n += c
	}
	return n
}

// Cumulative returns, for each of Bounds, the samples at or below it, as Prometheus' buckets
// carry them; the +Inf bucket is Count.
func (s *Snapshot) Cumulative() [len(Bounds)]uint64 {
	var out [len(Bounds)]uint64
	n := s.counts[0]
	b := 0
	for i, f := range fine {
		if b == len(Bounds) {
			break
		}
		n += s.counts[i+1]
		if f == Bounds[b] {
			out[b] = n
			b++
		}
	}
	return out
}

// Quantile is an upper bound on the q-quantile (0..1) of the samples: the upper bound of the
// bucket holding it, so at most an eighth above the truth, and never above Max. 0 when empty.
func (s *Snapshot) Quantile(q float64) time.Duration {
	total := s.Count()
	if total == 0 {
		return 0
	}
	rank := max(uint64(q*float64(total)+0.5), 1)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen < rank {
			continue
		}
		switch {
		case i == 0:
			return min(time.Microsecond, s.Max)
		case i <= len(fine):
			return min(fine[i-1], s.Max)
		}
		break
	}
	return s.Max
}

// Stamp is a point on the monotonic clock, as an integer so that per-request state stays small
// and copying it is free.
type Stamp int64

// epoch anchors Stamps; time.Since on it reads the monotonic clock.
var epoch = time.Now()

// Now is the current Stamp.
func Now() Stamp { return Stamp(time.Since(epoch)) }

// Since is the time elapsed from s.
func Since(s Stamp) time.Duration { return time.Duration(Now() - s) }
