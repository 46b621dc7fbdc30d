package latency

import (
	"sync/atomic"
	"time"
)

// Bounds are the buckets' upper bounds (inclusive, Prometheus' "le"), from the 10 µs of a fast
// NVMe read to the seconds of a TRIM on a drive that erases as it goes; a sample above the last
// falls in the +Inf bucket only.
var Bounds = [...]time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond,
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// buckets is len(Bounds) plus the one above them all.
const buckets = len(Bounds) + 1

// Histogram counts samples per bucket. The zero value is empty and ready.
type Histogram struct {
	counts [buckets]atomic.Uint64 // per bucket, not cumulative
	sumNs  atomic.Uint64
}

// Observe records d; a negative d (a clock that stepped back) counts as 0.
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// Snapshot is a histogram's counts at one moment.
type Snapshot struct {
	// Counts are per bucket, not cumulative: Counts[i] holds samples in (Bounds[i-1], Bounds[i]],
	// the last those above every bound.
	Counts [buckets]uint64
	SumNs  uint64
}

// Snapshot reads h.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.SumNs = h.sumNs.Load()
	return s
}

// Add folds o into s: a histogram of both sets of samples.
func (s *Snapshot) Add(o Snapshot) {
	for i := range s.Counts {
		s.Counts[i] += o.Counts[i]
	}
	s.SumNs += o.SumNs
}

// Count is the number of samples.
func (s *Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Cumulative returns, for each bound, the samples at or below it, as Prometheus' buckets carry
// them; the +Inf bucket is Count.
func (s *Snapshot) Cumulative() [len(Bounds)]uint64 {
	var out [len(Bounds)]uint64
	var n uint64
	for i := range Bounds {
		n += s.Counts[i]
		out[i] = n
	}
	return out
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
