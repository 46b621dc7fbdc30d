package daemon

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/discard"
	"uraid/raid"
)

func TestCollectorExportsStatus(t *testing.T) {
	st := raid.Status{Name: "m", State: raid.StateNameDegraded, SizeBytes: 1 << 30,
		Discard: raid.DiscardTotals{Requests: 7, Bytes: 4096 * 7, MemberRanges: 21},
		Members: []raid.MemberStatus{
			{Path: "/dev/a", Index: 0, State: "active", IO: raid.MemberIO{Reads: 3, WriteBytes: 8192},
				Discard: discard.MemberStats{Issued: 5, IssuedBytes: 1 << 20, Merged: 2, Queued: 1,
					Latency: discard.Latency{P50: 1000, P99: 100000, Max: 250000}}},
			{Index: 1, State: "missing"},
		}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(func() Status { return Status{Status: st} }))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&b, mf)
		require.NoError(t, err)
	}
	text := b.String()
	for _, want := range []string{
		`uraid_array_state{array="m",state="degraded"} 1`,
		`uraid_array_state{array="m",state="clean"} 0`,
		`uraid_array_discard_requests_total{array="m"} 7`,
		`uraid_array_discard_member_ranges_total{array="m"} 21`,
		`uraid_member_active{array="m",member="0",path="/dev/a"} 1`,
		`uraid_member_active{array="m",member="1",path=""} 0`,
		`uraid_member_reads_total{array="m",member="0",path="/dev/a"} 3`,
		`uraid_member_write_bytes_total{array="m",member="0",path="/dev/a"} 8192`,
		`uraid_member_discard_issued_bytes_total{array="m",member="0",path="/dev/a"} 1.048576e+06`,
		`uraid_member_discard_merged_total{array="m",member="0",path="/dev/a"} 2`,
		`uraid_member_discard_queued{array="m",member="0",path="/dev/a"} 1`,
		`uraid_member_discard_latency_seconds{array="m",member="0",path="/dev/a",quantile="0.99"} 0.1`,
	} {
		assert.Contains(t, text, want)
	}
}
