package daemon

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/discard"
	"uraid/latency"
)

func samples(ds ...time.Duration) latency.Snapshot {
	var h latency.Histogram
	for _, d := range ds {
		h.Observe(d)
	}
	return h.Snapshot()
}

// metricsStatus has every metric's source set: a degraded raid10 rebuilding, with latencies; its
// sync job and region map feed the sync metrics, which the lint below checks with the rest.
func metricsStatus() Status {
	member := 1
	return Status{Status: array.Status{Name: "m", State: array.StateNameDegraded, SizeBytes: 1 << 30,
		Discard:     array.DiscardTotals{Requests: 7, Bytes: 4096 * 7, MemberRanges: 21},
		ReadLatency: samples(80*time.Microsecond, 3*time.Millisecond), WriteLatency: samples(time.Millisecond),
		DiscardLatency: samples(20 * time.Second),
		Regions:        &array.RegionCounts{Regions: 8, RegionBytes: 1 << 20, InSync: 5, Dirty: 2, Trimmed: 1, NeedResync: 1},
		Sync: &array.SyncStatus{Action: array.SyncRebuild, Member: &member, DoneBytes: 1 << 20, TotalBytes: 1 << 30,
			RateBytesPerS: 50 << 20},
		Members: []array.MemberStatus{
			{Path: "/dev/a", Index: 0, State: "active", IO: array.MemberIO{Reads: 3, WriteBytes: 8192, SyncReadBytes: 4096},
				Discard: discard.MemberStats{Issued: 5, IssuedBytes: 1 << 20, Merged: 2, Queued: 1,
					Latency:          discard.Latency{P50: 1000, P99: 100000, Max: 250000},
					LatencyHistogram: samples(time.Millisecond, 100*time.Millisecond, 250*time.Millisecond)},
				ReadLatency: samples(50 * time.Microsecond), WriteLatency: samples(time.Millisecond, time.Millisecond)},
			{Index: 1, State: "missing"},
		}},
		Version:  "v9",
		Failure:  "queue 0 stopped",
		Recovery: RecoveryStatus{Count: 1, LastExit: "died"}}
}

// scrape is what GET /metrics serves for st.
func scrape(t *testing.T, st Status) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(func() Status { return st }))
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	return rec.Body.String()
}

func TestCollectorExportsStatus(t *testing.T) {
	text := scrape(t, metricsStatus())
	for _, want := range []string{
		`uraid_build_info{array="m",goversion="` + runtime.Version() + `",version="v9"} 1`,
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
		// Histograms: cumulative buckets in seconds, the sum, the count.
		"# TYPE uraid_member_discard_latency_seconds histogram",
		`uraid_member_discard_latency_seconds_bucket{array="m",member="0",path="/dev/a",le="0.001"} 1`,
		`uraid_member_discard_latency_seconds_bucket{array="m",member="0",path="/dev/a",le="0.1"} 2`,
		`uraid_member_discard_latency_seconds_bucket{array="m",member="0",path="/dev/a",le="0.25"} 3`,
		`uraid_member_discard_latency_seconds_bucket{array="m",member="0",path="/dev/a",le="+Inf"} 3`,
		`uraid_member_discard_latency_seconds_sum{array="m",member="0",path="/dev/a"} 0.351`,
		`uraid_member_discard_latency_seconds_count{array="m",member="0",path="/dev/a"} 3`,
		`uraid_member_read_latency_seconds_bucket{array="m",member="0",path="/dev/a",le="5e-05"} 1`,
		`uraid_member_write_latency_seconds_count{array="m",member="0",path="/dev/a"} 2`,
		`uraid_member_read_latency_seconds_count{array="m",member="1",path=""} 0`,
		`uraid_array_read_latency_seconds_bucket{array="m",le="0.0001"} 1`,
		`uraid_array_read_latency_seconds_bucket{array="m",le="0.005"} 2`,
		`uraid_array_write_latency_seconds_count{array="m"} 1`,
		`uraid_array_discard_latency_seconds_bucket{array="m",le="10"} 0`,
		`uraid_array_discard_latency_seconds_bucket{array="m",le="+Inf"} 1`,
		`uraid_array_device_failed{array="m",reason="queue 0 stopped"} 1`,
	} {
		assert.Contains(t, text, want+"\n")
	}
	assert.NotContains(t, text, "quantile", "latency is histograms, not gauges posing as a summary")
}

// lintMetrics checks exposition text the way `promtool check metrics` does: promlint, the
// linter promtool itself runs on its input, from the client library this build links; and, where
// it is installed, the promtool binary (.ci/run unpacks Debian's; PROMTOOL names it), whose parser
// and linter are a separate build. It returns every problem found.
func lintMetrics(t *testing.T, text string) []string {
	t.Helper()
	var out []string
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		out = append(out, "promlint: "+err.Error())
	}
	for _, p := range problems {
		out = append(out, "promlint: "+p.Metric+": "+p.Text)
	}
	tool := promtool(t)
	if tool == "" {
		return out
	}
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err != nil || b.Len() > 0 {
		out = append(out, "promtool: "+strings.TrimSpace(b.String()))
	}
	return out
}

// promtool finds the promtool binary: $PROMTOOL, or on the PATH. CI must have it.
func promtool(t *testing.T) string {
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("promtool is not installed: .ci/run unpacks it (apt-get download prometheus; dpkg-deb -x) and sets PROMTOOL")
	}
	t.Log("promtool not found (set PROMTOOL, or see .ci/run): checked with promlint only")
	return ""
}

func TestMetricsPassPromtool(t *testing.T) {
	for name, st := range map[string]Status{
		"full":  metricsStatus(),
		"empty": {Status: array.Status{Name: "e", State: array.StateNameClean}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, lintMetrics(t, scrape(t, st)))
		})
	}
}

// TestPromtoolCatchesMalformed: the check above can fail. Each of these is wrong in a way a
// collector could get wrong, the first as uraid's own TRIM latency once was.
func TestPromtoolCatchesMalformed(t *testing.T) {
	for name, text := range map[string]string{
		"gauge with quantiles": "# HELP uraid_member_discard_latency_seconds TRIM latency quantiles.\n" +
			"# TYPE uraid_member_discard_latency_seconds gauge\n" +
			"uraid_member_discard_latency_seconds{quantile=\"0.5\"} 0.1\n",
		"counter without _total": "# HELP uraid_reads Reads.\n# TYPE uraid_reads counter\nuraid_reads 1\n",
		"unit not base":          "# HELP uraid_latency_milliseconds Latency.\n# TYPE uraid_latency_milliseconds gauge\nuraid_latency_milliseconds 1\n",
		"no help":                "# TYPE uraid_up gauge\nuraid_up 1\n",
		"unparsable":             "# TYPE uraid_up gauge\nuraid_up{array=\"m} 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			problems := strings.Join(lintMetrics(t, text), "\n")
			// Each checker must catch it on its own.
			assert.Contains(t, problems, "promlint: ")
			if promtool(t) != "" {
				assert.Contains(t, problems, "promtool: ")
			}
		})
	}
}
