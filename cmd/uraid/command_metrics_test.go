package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
)

func TestMetricsCommand(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	for _, name := range []string{"a", "b"} {
		srv, err := daemon.Listen(name)
		require.NoError(t, err)
		reg := prometheus.NewRegistry()
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "uraid_test_gauge", Help: "test", ConstLabels: prometheus.Labels{"array": name}})
		g.Set(7)
		reg.MustRegister(g)
		srv.Serve(&eventArray{subscribed: make(chan struct{})}, reg, false)
		t.Cleanup(func() { srv.Close() })
	}
	out := t.TempDir()
	tests := []struct {
		args    []string
		code    int
		wantErr string
	}{
		{[]string{"metrics"}, exitUsage, "give one of --listen ADDR and --textfile DIR"},
		{[]string{"metrics", "--listen", ":1", "--textfile", out}, exitUsage, "give one of"},
		{[]string{"metrics", "--listen", "nowhere"}, exitUsage, `--listen "nowhere": give HOST:PORT`},
		{[]string{"metrics", "--textfile", out, "--interval", "-1s"}, exitUsage, "--interval must not be negative"},
		{[]string{"metrics", "--textfile", filepath.Join(out, "missing"), "--interval", "0"}, exitError, "--textfile"},
		{[]string{"metrics", "--textfile", out, "--interval", "0"}, exitOK, ""},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, tt.args...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, errOut)
		if tt.wantErr != "" {
			assert.Contains(t, errOut, tt.wantErr, "%v", tt.args)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, daemon.TextfileName))
	require.NoError(t, err)
	assert.Contains(t, string(b), `uraid_test_gauge{array="a"} 7`)
	assert.Contains(t, string(b), `uraid_test_gauge{array="b"} 7`)
	assert.Contains(t, string(b), `uraid_array_daemon_up{array="b"} 1`)
}
