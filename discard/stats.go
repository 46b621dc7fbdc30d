package discard

import (
	"time"

	"uraid/latency"
)

// MemberStats is a snapshot of one member's discard queue.
type MemberStats struct {
	Member int `json:"member"`

	Requests uint64 `json:"requests"` // ranges queued
	Bytes    int64  `json:"bytes"`    // bytes queued

	Queued      int   `json:"queued"` // pieces waiting now
	QueuedBytes int64 `json:"queued_bytes"`
	InFlight    int   `json:"inflight"` // TRIMs running now

	Issued      uint64 `json:"issued"` // TRIMs sent to the member
	IssuedBytes int64  `json:"issued_bytes"`
	Completed   uint64 `json:"completed"` // TRIMs finished, failed or not
	Errors      uint64 `json:"errors"`

	Merged         uint64 `json:"merged"`          // pieces folded into another TRIM
	CancelledBytes int64  `json:"cancelled_bytes"` // queued bytes a write made moot

	Latency Latency `json:"latency_us"`
	// LatencyHistogram is the same TRIMs in the buckets the metrics export.
	LatencyHistogram latency.Snapshot `json:"-"`
}

// Latency summarizes TRIM latency in microseconds. Percentiles are bucket
// upper edges, so they overstate by at most an eighth (latency.Snapshot.Quantile).
type Latency struct {
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// counters are the running totals behind MemberStats, guarded by the
// member lock.
type counters struct {
	requests    uint64
	bytes       int64
	issued      uint64
	issuedBytes int64
	completed   uint64
	errors      uint64
	latency     latency.Histogram
}

// summarize is s in whole microseconds, rounded up so that no figure understates.
func summarize(s latency.Snapshot) Latency {
	us := func(d time.Duration) int64 { return int64((d + time.Microsecond - 1) / time.Microsecond) }
	return Latency{P50: us(s.Quantile(0.50)), P99: us(s.Quantile(0.99)), Max: us(s.Max)}
}
