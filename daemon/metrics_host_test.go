package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveFakeArray serves the metrics of a fake array called name, with metricsStatus's figures,
// on its control socket; the returned function stops it.
func serveFakeArray(t *testing.T, name, version string) func() {
	t.Helper()
	s, err := Listen(name)
	require.NoError(t, err)
	st := metricsStatus()
	st.Name, st.Version = name, version
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(func() Status { return st }))
	s.Serve(&fakeArray{}, reg, false)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			require.NoError(t, s.Close())
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestHostMetrics: one endpoint serves every running array's metrics, each series labelled
// with its array; arrays that start or stop later, or stop answering, show at the next scrape.
func TestHostMetrics(t *testing.T) {
	dir := useRunDir(t)
	stopA := serveFakeArray(t, "a", "v1")
	serveFakeArray(t, "b", "v2")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHostMetrics(ctx, ln, &HostMetrics{}) }()
	get := func() string {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}

	text := get()
	for _, want := range []string{
		`uraid_build_info{goversion="` + runtime.Version() + `",version="(devel)"} 1`,
		`uraid_build_info{array="a",goversion="` + runtime.Version() + `",version="v1"} 1`,
		`uraid_build_info{array="b",goversion="` + runtime.Version() + `",version="v2"} 1`,
		`uraid_array_daemon_up{array="a"} 1`,
		`uraid_array_daemon_up{array="b"} 1`,
		`uraid_array_state{array="a",state="degraded"} 1`,
		`uraid_array_state{array="b",state="degraded"} 1`,
		`uraid_member_reads_total{array="a",member="0",path="/dev/a"} 3`,
		`uraid_member_reads_total{array="b",member="0",path="/dev/a"} 3`,
		`uraid_member_discard_latency_seconds_bucket{array="b",member="0",path="/dev/a",le="+Inf"} 3`,
	} {
		assert.Contains(t, text, want)
	}
	assert.Empty(t, lintMetrics(t, text))

	// c starts, a stops, d's daemon died and left its socket.
	serveFakeArray(t, "c", "v3")
	stopA()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.sock"), nil, 0o600))
	text = get()
	assert.Contains(t, text, `uraid_array_state{array="c",state="degraded"} 1`)
	assert.NotContains(t, text, `array="a"`)
	assert.Contains(t, text, `uraid_array_daemon_up{array="d"} 0`)
	assert.Contains(t, text, `uraid_array_daemon_up{array="b"} 1`)
	assert.Empty(t, lintMetrics(t, text))

	cancel()
	require.NoError(t, <-served)
}

// TestHostMetricsTextfile: --textfile writes the same, atomically, leaving no temporary file.
func TestHostMetricsTextfile(t *testing.T) {
	useRunDir(t)
	serveFakeArray(t, "a", "v1")
	out := t.TempDir()
	require.NoError(t, WriteTextfile(out, &HostMetrics{}))
	b, err := os.ReadFile(filepath.Join(out, TextfileName))
	require.NoError(t, err)
	assert.Contains(t, string(b), `uraid_array_state{array="a",state="degraded"} 1`)
	assert.Empty(t, lintMetrics(t, string(b)))
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only %s", TextfileName)
	fi, err := os.Stat(filepath.Join(out, TextfileName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "node_exporter reads it as another user")

	assert.Error(t, WriteTextfile(filepath.Join(out, "missing"), &HostMetrics{}))
}
