package tests

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
)

// TestE2EMetricsAndLeftovers serves an array's metrics over TCP, checks that real I/O through
// the kernel lands in the latency histograms and that the scrape passes promtool's checks; then
// kills the daemon and checks that status --json lists the dead array with its state and exit
// code, and that the successor serves the metrics on the same address again.
func TestE2EMetricsAndLeftovers(t *testing.T) {
	uraidBin(t)
	// The guest boots with its loopback interface down; the scrape needs it (its own, in the VM).
	sh(t, "ip", "link", "set", "lo", "up")
	members, _ := memberSet(t, "loop", 2, 96<<20)
	addr := freeTCPAddr(t)
	dev := strings.TrimSpace(uraid(t, append([]string{"create", "mx", "--level", "1", "--metrics-listen", addr}, members...)...))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cleanupRun(uraidBin(t), "recover", "mx")
			cleanupRun(uraidBin(t), "stop", "mx")
		}
	})
	sh(t, "dd", "if=/dev/urandom", "of="+dev, "bs=64K", "count=64", "oflag=direct", "status=none")
	sh(t, "dd", "if="+dev, "of=/dev/null", "bs=64K", "count=64", "iflag=direct", "status=none")
	sh(t, "blkdiscard", "-o", "8388608", "-l", "1048576", dev)

	fams := scrapeMetrics(t, addr)
	count := func(name string, labels map[string]string) uint64 {
		for _, m := range fams[name].GetMetric() {
			if matches(m, labels) {
				return m.GetHistogram().GetSampleCount()
			}
		}
		t.Fatalf("no %s%v in the scrape", name, labels)
		return 0
	}
	arr := map[string]string{"array": "mx"}
	assert.GreaterOrEqual(t, count("uraid_array_write_latency_seconds", arr), uint64(64))
	assert.GreaterOrEqual(t, count("uraid_array_read_latency_seconds", arr), uint64(64))
	assert.GreaterOrEqual(t, count("uraid_array_discard_latency_seconds", arr), uint64(1))
	for _, m := range []string{"0", "1"} {
		l := map[string]string{"array": "mx", "member": m}
		assert.GreaterOrEqual(t, count("uraid_member_write_latency_seconds", l), uint64(64), "member %s: every copy is written", m)
		assert.GreaterOrEqual(t, count("uraid_member_discard_latency_seconds", l), uint64(1), "member %s", m)
		// One histogram sample per write counted, no more and no fewer.
		for _, c := range fams["uraid_member_writes_total"].GetMetric() {
			if matches(c, l) {
				assert.Equal(t, uint64(c.GetCounter().GetValue()), count("uraid_member_write_latency_seconds", l))
			}
		}
	}

	// The host-wide endpoint serves the same array, labelled, and passes promtool too.
	hostAddr := freeTCPAddr(t)
	host := exec.Command(uraidBin(t), "metrics", "--listen", hostAddr)
	require.NoError(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + hostAddr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, slow*10*time.Second, 20*time.Millisecond, "uraid metrics does not serve on %s", hostAddr)
	hfams := scrapeMetrics(t, hostAddr)
	up := -1.0
	for _, m := range hfams["uraid_array_daemon_up"].GetMetric() {
		if matches(m, arr) {
			up = m.GetGauge().GetValue()
		}
	}
	assert.Equal(t, 1.0, up, "uraid_array_daemon_up{array=\"mx\"}")
	assert.Contains(t, hfams, "uraid_array_write_latency_seconds")
	assert.Contains(t, hfams, "uraid_build_info")

	// The status carries the schema; then the daemon dies, and status says what it left.
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(uraid(t, "status", "--json")), &list))
	require.NotEmpty(t, list)
	st := daemonDetail(t, "mx")
	assert.Equal(t, daemon.Schema, st.Schema)
	require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !processAlive(st.PID) }, slow*10*time.Second, 5*time.Millisecond)
	var left []daemon.Leftover
	require.Eventually(t, func() bool {
		out, err := uraidCode(t, "status", "--json", "--test", "mx")
		left = nil
		return exitStatus(err) == 2 && json.Unmarshal([]byte(out), &left) == nil && len(left) == 1 && left[0].State == daemon.LeftQuiesced
	}, slow*10*time.Second, 10*time.Millisecond, "status --json does not list the dead array as quiesced: %+v", left)
	assert.Equal(t, "mx", left[0].Name)
	assert.Equal(t, dev, left[0].Device)
	assert.Equal(t, st.PID, left[0].PID)
	assert.Contains(t, left[0].Message, "uraid recover mx")

	assert.Equal(t, dev, strings.TrimSpace(uraid(t, "recover", "mx")))
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, slow*30*time.Second, 20*time.Millisecond, "the successor does not serve metrics on %s", addr)
	uraid(t, "stop", "mx")
	stopped = true
}

// freeTCPAddr is a loopback address with a port free a moment ago.
func freeTCPAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(labels)
}

// scrapeMetrics gets http://addr/metrics, checks it as promtool check metrics does (and with
// promtool itself where PROMTOOL names it), and parses it.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	problems, err := promlint.New(strings.NewReader(string(body))).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems)
	if tool := os.Getenv("PROMTOOL"); tool != "" {
		cmd := exec.Command(tool, "check", "metrics")
		cmd.Stdin = strings.NewReader(string(body))
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool check metrics: %s", out)
		assert.Empty(t, string(out))
		t.Logf("%s check metrics: no problems", tool)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	return fams
}
