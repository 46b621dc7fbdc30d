package daemon

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// What each member's TRIM lane runs by and what it learned by measurement (array.TrimLearned):
// the applied settings, the learned ones (which a flag may override), and the figures behind
// them.
var (
	descTrimExclusive  = prometheus.NewDesc("uraid_member_trim_exclusive", "1 if the member's TRIMs yield to its reads and writes (as applied: learned, or set by --trim-exclusive).", labelsMember, nil)
	descTrimLimit      = prometheus.NewDesc("uraid_member_trim_inflight_limit", "TRIMs the member runs at once at most (as applied).", labelsMember, nil)
	descTrimGap        = prometheus.NewDesc("uraid_member_trim_gap_seconds", "Least rest between two TRIMs on the member (as applied).", labelsMember, nil)
	descLearnExclusive = prometheus.NewDesc("uraid_member_trim_learned_exclusive", "1 if measurement found the member's TRIMs stall its reads and writes.", labelsMember, nil)
	descLearnLimit     = prometheus.NewDesc("uraid_member_trim_learned_inflight", "TRIMs at once measurement found the member runs with profit.", labelsMember, nil)
	descLearnGap       = prometheus.NewDesc("uraid_member_trim_learned_gap_seconds", "Rest between TRIMs measurement found the member needs.", labelsMember, nil)
	descLearnIOClean   = prometheus.NewDesc("uraid_member_trim_learned_io_clean_seconds", "Decayed geometric mean latency of the member's reads and writes with no TRIM in flight.", labelsMember, nil)
	descLearnIOOver    = prometheus.NewDesc("uraid_member_trim_learned_io_overlapped_seconds", "Decayed geometric mean latency of the member's reads and writes beside a TRIM.", labelsMember, nil)
	descLearnChanges   = prometheus.NewDesc("uraid_member_trim_learned_changes_total", "Changes of the member's learned TRIM decision.", labelsMember, nil)
	descLearnProbes    = prometheus.NewDesc("uraid_member_trim_learned_probes_total", "TRIMs run against the decision to check it.", labelsMember, nil)
)

func describeTrim(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTrimExclusive, descTrimLimit, descTrimGap, descLearnExclusive, descLearnLimit,
		descLearnGap, descLearnIOClean, descLearnIOOver, descLearnChanges, descLearnProbes} {
		ch <- d
	}
}

// collectTrim exports each member's TRIM pacing and what its lane learned.
func collectTrim(ch chan<- prometheus.Metric, st Status) {
	gauge := func(d *prometheus.Desc, v float64, l []string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	bool01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	us := func(n int64) float64 { return float64(n) * float64(time.Microsecond) / float64(time.Second) }
	for _, m := range st.Members {
		l := []string{st.Name, strconv.Itoa(m.Index), m.Path}
		gauge(descTrimExclusive, bool01(m.TrimExclusive), l)
		gauge(descTrimLimit, float64(m.TrimInFlight), l)
		gauge(descTrimGap, m.TrimGapMS/1000, l)
		tl := m.TrimLearned
		if tl == nil {
			continue
		}
		gauge(descLearnExclusive, bool01(tl.Exclusive), l)
		gauge(descLearnLimit, float64(tl.InFlight), l)
		gauge(descLearnGap, tl.GapMS/1000, l)
		gauge(descLearnIOClean, us(tl.Basis.IOCleanUS), l)
		gauge(descLearnIOOver, us(tl.Basis.IOOverlappedUS), l)
		ch <- prometheus.MustNewConstMetric(descLearnChanges, prometheus.CounterValue, float64(tl.Basis.Changes), l...)
		ch <- prometheus.MustNewConstMetric(descLearnProbes, prometheus.CounterValue, float64(tl.Basis.Probes), l...)
	}
}
