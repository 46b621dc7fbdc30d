package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
)

func metricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(metricsStatus))
	return reg
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestMetricsOverTCP(t *testing.T) {
	ms, err := listenMetrics("127.0.0.1:0")
	require.NoError(t, err)
	addr := ms.ln.Addr().String()
	ms.serve(metricsRegistry(), slog.Default())
	code, body, err := get("http://" + addr + "/metrics")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `uraid_array_size_bytes{array="m"}`)
	assert.Empty(t, lintMetrics(t, body), "what Prometheus scrapes passes promtool")
	code, _, err = get("http://" + addr + "/status")
	require.NoError(t, err)
	assert.Equal(t, 404, code, "only metrics over TCP: status names member paths and stays root-only")
	ms.Close()
	_, _, err = get("http://" + addr + "/metrics")
	assert.Error(t, err, "closed")
}

func TestMetricsListenRefusesBadAddress(t *testing.T) {
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hold.Close()
	for _, addr := range []string{hold.Addr().String(), "127.0.0.1:99999"} {
		_, err := listenMetrics(addr)
		require.Error(t, err, addr)
		assert.True(t, strings.HasPrefix(err.Error(), "--metrics-listen "+addr+": "), err.Error())
	}
}

// TestMetricsSuccessorWaitsForPort: a successor binds the port once its predecessor lets it go.
func TestMetricsSuccessorWaitsForPort(t *testing.T) {
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := hold.Addr().String()
	ms := &metricsServer{addr: addr}
	ms.serve(metricsRegistry(), slog.Default())
	defer ms.Close()
	hold.Close() // the predecessor exits
	testutil.WaitForNoError(t, testutil.Patience, "the successor to serve metrics on "+addr, func() error {
		code, body, err := get("http://" + addr + "/metrics")
		switch {
		case err != nil:
			return err
		case code != 200 || !strings.Contains(body, "uraid_array_state"):
			return fmt.Errorf("status %d, uraid_array_state not in the body", code)
		}
		return nil
	})
}

// TestMetricsCloseWhileWaitingForPort: Close does not wait out the retry.
func TestMetricsCloseWhileWaitingForPort(t *testing.T) {
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hold.Close()
	ms := &metricsServer{addr: hold.Addr().String()}
	ms.serve(metricsRegistry(), slog.Default())
	done := make(chan struct{})
	go func() { ms.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(metricsRetryFor / 2):
		t.Fatal("Close waited for the port")
	}
}

func TestCheckMetricsListen(t *testing.T) {
	for addr, ok := range map[string]bool{
		"": true, "127.0.0.1:9105": true, ":9105": true, "[::1]:0": true, "localhost:65535": true,
		":99999": false, ":-1": false, ":http": false, "127.0.0.1": false, "127.0.0.1:": false, "/run/m.sock": false,
	} {
		err := CheckMetricsListen(addr)
		if ok != (err == nil) {
			t.Errorf("CheckMetricsListen(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}

func TestProbeMetricsListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := ProbeMetricsListen(ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "pick a free host:port") {
		t.Fatalf("ProbeMetricsListen of a bound address = %v, want a refusal naming the fix", err)
	}
	free := ln.Addr().String()
	ln.Close()
	if err := ProbeMetricsListen(free); err != nil {
		t.Fatalf("ProbeMetricsListen(%s) = %v after it was let go", free, err)
	}
}
