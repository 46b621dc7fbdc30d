package daemon

import (
	"math"
	"runtime"
	"runtime/metrics"

	"uraid/ublk"
)

// CostStatus is what serving has cost the daemon so far, as counters a benchmark reads before and
// after a run and divides by the requests in between (make bench, scenario j): the system calls
// of each queue thread and the Go runtime's own view of its scheduler and collector.
type CostStatus struct {
	Queues  []QueueCost `json:"queues"`
	Runtime RuntimeCost `json:"runtime"`
}

// QueueCost is one ublk queue's thread and its io_uring_enter calls.
type QueueCost struct {
	Queue int `json:"queue"`
	// TID is the thread the queue's goroutine is locked to: /proc/PID/task/TID holds its CPU time
	// and context switches.
	TID           int    `json:"tid"`
	IOUringEnters uint64 `json:"io_uring_enters"`
}

// RuntimeCost is the Go runtime's view (runtime/metrics).
type RuntimeCost struct {
	GOMAXPROCS int    `json:"gomaxprocs"`
	Goroutines uint64 `json:"goroutines"` // /sched/goroutines:goroutines, now
	// GCCPUSeconds is /cpu/classes/gc/total:cpu-seconds: the collector's CPU time so far, an
	// estimate the runtime updates at each collection.
	GCCPUSeconds float64 `json:"gc_cpu_seconds"`
	// SchedLatencyCount and SchedLatencySeconds sum /sched/latencies:seconds, the time goroutines
	// waited runnable before they ran: how many waits the runtime recorded (it samples one
	// scheduling in eight) and their total, each wait counted at its bucket's lower bound.
	SchedLatencyCount   uint64  `json:"sched_latency_count"`
	SchedLatencySeconds float64 `json:"sched_latency_seconds"`
}

var runtimeSamples = []string{
	"/sched/goroutines:goroutines",
	"/cpu/classes/gc/total:cpu-seconds",
	"/sched/latencies:seconds",
}

// readRuntimeCost reads the runtime's metrics; a metric this Go lacks stays zero.
func readRuntimeCost() RuntimeCost {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, n := range runtimeSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	c := RuntimeCost{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if s[0].Value.Kind() == metrics.KindUint64 {
		c.Goroutines = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		c.GCCPUSeconds = s[1].Value.Float64()
	}
	if s[2].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[2].Value.Float64Histogram()
		for i, n := range h.Counts {
			c.SchedLatencyCount += n
			if lo := h.Buckets[i]; n > 0 && !math.IsInf(lo, 0) {
				c.SchedLatencySeconds += float64(n) * lo
			}
		}
	}
	return c
}

// costOf is the cost status of a device's queues and of this process's runtime.
func costOf(queues []ublk.QueueCounts) *CostStatus {
	c := &CostStatus{Queues: make([]QueueCost, len(queues)), Runtime: readRuntimeCost()}
	for i, q := range queues {
		c.Queues[i] = QueueCost{Queue: q.Queue, TID: q.TID, IOUringEnters: q.Enters}
	}
	return c
}
