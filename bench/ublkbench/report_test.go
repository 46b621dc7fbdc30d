package ublkbench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLogRoundTrip(t *testing.T) {
	ws := []Workload{{Name: "a"}}
	env := Env{Kernel: "6.12.0", NProc: 2, Backing: "/tmp/x on tmpfs", SizeMiB: 1024, Reps: 2, LoopDIO: true}
	rs := []Result{
		{1, Ublk, "a", Figures{IOPS: 90, MiBps: 1, P50usec: 10, P99usec: 20}},
		{1, Loop, "a", Figures{IOPS: 100, MiBps: 2, P50usec: 5, P99usec: 10}},
		{2, Loop, "a", Figures{IOPS: 100, MiBps: 2, P50usec: 5, P99usec: 10}},
		{2, Ublk, "a", Figures{IOPS: 70, MiBps: 1, P50usec: 10, P99usec: 20}},
	}
	// A console log: boot noise, progress, and CRLF line ends.
	var log bytes.Buffer
	log.WriteString("[    0.000000] Linux version 6.12.0\r\nublkbench: filling\n")
	require.NoError(t, EmitEnv(&log, env))
	for _, r := range rs {
		log.WriteString("noise ")
		require.NoError(t, EmitResult(&log, r))
	}
	prof := bytes.Repeat([]byte{0, 1, 2, 0xff, '\n'}, 100000)
	require.NoError(t, EmitProfile(&log, prof))
	got, err := ParseLog(bytes.ReplaceAll(log.Bytes(), []byte("\n"), []byte("\r\n")), ws)
	require.NoError(t, err)
	assert.Equal(t, env, got.Env)
	assert.Equal(t, rs, got.Results)
	assert.Equal(t, prof, got.Profile)
	require.Len(t, got.Summary, 1)
	assert.Equal(t, 80.0, got.Summary[0].Ublk.IOPS)
	assert.Equal(t, 0.8, got.Summary[0].Ratio.IOPS)
}

func TestParseLogRefuses(t *testing.T) {
	var env, res bytes.Buffer
	require.NoError(t, EmitEnv(&env, Env{}))
	require.NoError(t, EmitResult(&res, Result{1, Ublk, "a", Figures{IOPS: 1}}))
	ws := []Workload{{Name: "a"}}
	tests := []struct {
		name, log, want string
	}{
		{"empty", "", "0 env lines"},
		{"no results", env.String(), "0 results"},
		{"no env", res.String(), "0 env lines"},
		{"bad json", env.String() + resultPrefix + "{\n", "result"},
		{"bad profile", env.String() + res.String() + profilePrefix + "!!\n", "profile"},
		{"unpaired", env.String() + res.String(), "1 ublk and 0 loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLog([]byte(tt.log), ws)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestTable(t *testing.T) {
	tab := Table([]Summary{{Workload: "randread-4k-qd32", Reps: 3,
		Ublk:  Figures{IOPS: 8000, MiBps: 31.25, P50usec: 3000, P99usec: 9000},
		Loop:  Figures{IOPS: 10000, MiBps: 39.06, P50usec: 2500, P99usec: 6000},
		Ratio: Figures{IOPS: 0.8, MiBps: 0.8, P50usec: 1.2, P99usec: 1.5}}})
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "| randread-4k-qd32 | 8000 | 10000 | **0.80** | 31.2 | 39.1 | 3000 | 2500 | 1.20 | 9000 | 6000 | 1.50 |", lines[2])
}
