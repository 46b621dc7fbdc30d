package daemon

import (
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"uraid/array"
	"uraid/latency"
)

// collector turns an array's status into Prometheus metrics at scrape time, so the counters the
// data path keeps are the only bookkeeping.
type collector struct {
	status func() Status
}

func newCollector(status func() Status) *collector { return &collector{status: status} }

var (
	labelsArray  = []string{"array"}
	labelsMember = []string{"array", "member", "path"}

	descBuildInfo  = prometheus.NewDesc("uraid_build_info", "1, with the build of the daemon serving the array (without array: of uraid metrics itself).", []string{"array", "version", "goversion"}, nil)
	descUp         = prometheus.NewDesc("uraid_array_state", "Array state: 1 for the current one of clean, active, degraded, failed.", []string{"array", "state"}, nil)
	descSize       = prometheus.NewDesc("uraid_array_size_bytes", "Array size.", labelsArray, nil)
	descUnclean    = prometheus.NewDesc("uraid_array_unclean", "1 if the array's last run ended without a clean stop (a resync is pending for mirrors).", labelsArray, nil)
	descFailed     = prometheus.NewDesc("uraid_array_device_failed", "1 once the array's device has failed, with why; the daemon then exits for a successor.", []string{"array", "reason"}, nil)
	descRecovered  = prometheus.NewDesc("uraid_array_recoveries_total", "Daemons that took the array's device over since it was created.", labelsArray, nil)
	descLastExit   = prometheus.NewDesc("uraid_array_last_exit_info", "Why the daemon before this one ended without stopping the device.", []string{"array", "reason"}, nil)
	descDiscReq    = prometheus.NewDesc("uraid_array_discard_requests_total", "Discard requests received.", labelsArray, nil)
	descDiscBytes  = prometheus.NewDesc("uraid_array_discard_bytes_total", "Bytes discarded by requests received.", labelsArray, nil)
	descDiscRanges = prometheus.NewDesc("uraid_array_discard_member_ranges_total", "Member ranges the discards were split into.", labelsArray, nil)

	descMemberUp     = prometheus.NewDesc("uraid_member_active", "1 if the member serves I/O.", labelsMember, nil)
	descReads        = prometheus.NewDesc("uraid_member_reads_total", "Reads completed.", labelsMember, nil)
	descWrites       = prometheus.NewDesc("uraid_member_writes_total", "Writes completed.", labelsMember, nil)
	descReadBytes    = prometheus.NewDesc("uraid_member_read_bytes_total", "Bytes read.", labelsMember, nil)
	descWriteBytes   = prometheus.NewDesc("uraid_member_write_bytes_total", "Bytes written.", labelsMember, nil)
	descIOErrors     = prometheus.NewDesc("uraid_member_io_errors_total", "Failed reads and writes.", labelsMember, nil)
	descTrimQueued   = prometheus.NewDesc("uraid_member_discard_queued", "Discard pieces waiting.", labelsMember, nil)
	descTrimInflight = prometheus.NewDesc("uraid_member_discard_inflight", "TRIMs running.", labelsMember, nil)
	descTrimIssued   = prometheus.NewDesc("uraid_member_discard_issued_total", "TRIMs sent to the member.", labelsMember, nil)
	descTrimBytes    = prometheus.NewDesc("uraid_member_discard_issued_bytes_total", "Bytes in TRIMs sent to the member.", labelsMember, nil)
	descTrimMerged   = prometheus.NewDesc("uraid_member_discard_merged_total", "Discard pieces merged into another TRIM.", labelsMember, nil)
	descTrimCancel   = prometheus.NewDesc("uraid_member_discard_cancelled_bytes_total", "Queued discard bytes dropped because a write overwrote them.", labelsMember, nil)
	descTrimErrors   = prometheus.NewDesc("uraid_member_discard_errors_total", "Failed TRIMs.", labelsMember, nil)
	descTrimLatency  = prometheus.NewDesc("uraid_member_discard_latency_seconds", "Latency of the TRIMs sent to the member, from issue to completion, failed ones included.", labelsMember, nil)
	descMemberRead   = prometheus.NewDesc("uraid_member_read_latency_seconds", "Latency of the member's successful reads for the array's users, from issue to completion.", labelsMember, nil)
	descMemberWrite  = prometheus.NewDesc("uraid_member_write_latency_seconds", "Latency of the member's successful writes for the array's users, from issue to completion.", labelsMember, nil)

	descArrayRead    = prometheus.NewDesc("uraid_array_read_latency_seconds", "Latency of the array's successful reads, from the kernel's request to its completion.", labelsArray, nil)
	descArrayWrite   = prometheus.NewDesc("uraid_array_write_latency_seconds", "Latency of the array's successful writes, from the kernel's request to its completion.", labelsArray, nil)
	descArrayDiscard = prometheus.NewDesc("uraid_array_discard_latency_seconds", "Latency of the array's successful discards, from the kernel's request to its completion (async mode: to its queueing).", labelsArray, nil)
)

// histogram exports s, a latency histogram in nanoseconds, in seconds as Prometheus wants.
func histogram(d *prometheus.Desc, s latency.Snapshot, l ...string) prometheus.Metric {
	cum := s.Cumulative()
	buckets := make(map[float64]uint64, len(cum))
	for i, b := range latency.Bounds {
		buckets[b.Seconds()] = cum[i]
	}
	return prometheus.MustNewConstHistogram(d, s.Count(), float64(s.SumNs)/1e9, buckets, l...)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuildInfo, descUp, descSize, descUnclean, descFailed, descRecovered, descLastExit, descDiscReq, descDiscBytes, descDiscRanges,
		descMemberUp, descReads, descWrites, descReadBytes, descWriteBytes, descIOErrors, descTrimQueued,
		descTrimInflight, descTrimIssued, descTrimBytes, descTrimMerged, descTrimCancel, descTrimErrors, descTrimLatency,
		descMemberRead, descMemberWrite, descArrayRead, descArrayWrite, descArrayDiscard} {
		ch <- d
	}
	describeSync(ch)
	describeTrim(ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge(descBuildInfo, 1, st.Name, st.Version, runtime.Version())
	for _, s := range []string{array.StateNameClean, array.StateNameActive, array.StateNameDegraded, array.StateNameFailed} {
		v := 0.0
		if st.State == s {
			v = 1
		}
		gauge(descUp, v, st.Name, s)
	}
	gauge(descSize, float64(st.SizeBytes), st.Name)
	unclean := 0.0
	if st.Unclean {
		unclean = 1
	}
	gauge(descUnclean, unclean, st.Name)
	if st.Failure != "" {
		gauge(descFailed, 1, st.Name, st.Failure)
	}
	counter(descRecovered, float64(st.Recovery.Count), st.Name)
	if st.Recovery.LastExit != "" {
		gauge(descLastExit, 1, st.Name, st.Recovery.LastExit)
	}
	counter(descDiscReq, float64(st.Discard.Requests), st.Name)
	counter(descDiscBytes, float64(st.Discard.Bytes), st.Name)
	counter(descDiscRanges, float64(st.Discard.MemberRanges), st.Name)
	collectSync(ch, st)
	collectTrim(ch, st)
	for _, m := range st.Members {
		l := []string{st.Name, strconv.Itoa(m.Index), m.Path}
		up := 0.0
		if m.State == "active" {
			up = 1
		}
		gauge(descMemberUp, up, l...)
		counter(descReads, float64(m.IO.Reads), l...)
		counter(descWrites, float64(m.IO.Writes), l...)
		counter(descReadBytes, float64(m.IO.ReadBytes), l...)
		counter(descWriteBytes, float64(m.IO.WriteBytes), l...)
		counter(descIOErrors, float64(m.IO.Errors), l...)
		d := m.Discard
		gauge(descTrimQueued, float64(d.Queued), l...)
		gauge(descTrimInflight, float64(d.InFlight), l...)
		counter(descTrimIssued, float64(d.Issued), l...)
		counter(descTrimBytes, float64(d.IssuedBytes), l...)
		counter(descTrimMerged, float64(d.Merged), l...)
		counter(descTrimCancel, float64(d.CancelledBytes), l...)
		counter(descTrimErrors, float64(d.Errors), l...)
		ch <- histogram(descTrimLatency, d.LatencyHistogram, l...)
		ch <- histogram(descMemberRead, m.ReadLatency, l...)
		ch <- histogram(descMemberWrite, m.WriteLatency, l...)
	}
	ch <- histogram(descArrayRead, st.ReadLatency, st.Name)
	ch <- histogram(descArrayWrite, st.WriteLatency, st.Name)
	ch <- histogram(descArrayDiscard, st.DiscardLatency, st.Name)
}
