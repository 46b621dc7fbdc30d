package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/bench/ublkbench"
)

func TestMainUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no subcommand", nil, 2, "usage"},
		{"unknown subcommand", []string{"bench"}, 2, `unknown subcommand "bench"`},
		{"report without log", []string{"report"}, 1, "usage: ublkbench report"},
		{"report of a missing log", []string{"report", "-log", "/nonexistent/log"}, 1, "no such file"},
		{"run with arguments", []string{"run", "extra"}, 1, "no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tt.code, Main(tt.args, &out, &errb))
			assert.Contains(t, errb.String(), tt.want)
		})
	}
}

func TestReportWritesJSONAndTable(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	require.NoError(t, ublkbench.EmitEnv(&log, ublkbench.Env{Kernel: "6.12.0", NProc: 2, Reps: 1}))
	for i, w := range ublkbench.Workloads {
		iops := float64(100 * (i + 1))
		require.NoError(t, ublkbench.EmitResult(&log, ublkbench.Result{Rep: 1, Target: ublkbench.Ublk, Workload: w.Name, Figures: ublkbench.Figures{IOPS: iops / 2}}))
		require.NoError(t, ublkbench.EmitResult(&log, ublkbench.Result{Rep: 1, Target: ublkbench.Loop, Workload: w.Name, Figures: ublkbench.Figures{IOPS: iops}}))
	}
	logPath, outPath := filepath.Join(dir, "log"), filepath.Join(dir, "ublk.json")
	require.NoError(t, os.WriteFile(logPath, log.Bytes(), 0o600))

	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"report", "-log", logPath, "-out", outPath}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "| randread-4k-qd32 | 100 | 200 | **0.50** |")

	b, err := os.ReadFile(outPath)
	require.NoError(t, err)
	var r ublkbench.Report
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Len(t, r.Results, 2*len(ublkbench.Workloads))
	require.Len(t, r.Summary, len(ublkbench.Workloads))
	for _, s := range r.Summary {
		assert.Equal(t, 0.5, s.Ratio.IOPS, s.Workload)
	}
}
