package ublkbench

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fioJSON is fio's output shape for two jobs, cut down to the fields fio
// always writes and a few it writes that ParseFio must ignore.
func fioJSON(readErr int, readIOPS float64) string {
	return fmt.Sprintf(`{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "rr",
      "error" : %d,
      "read" : {"io_bytes" : 1, "bw" : 40960, "iops" : %g,
        "clat_ns" : {"min" : 1, "percentile" : {"1.000000" : 1000, "50.000000" : 25000, "99.000000" : 180000}}},
      "write" : {"bw" : 0, "iops" : 0.0, "clat_ns" : {"min" : 0}}
    },
    {
      "jobname" : "sw",
      "error" : 0,
      "read" : {"bw" : 0, "iops" : 0.0, "clat_ns" : {"min" : 0}},
      "write" : {"bw" : 2097152, "iops" : 2048,
        "clat_ns" : {"percentile" : {"50.000000" : 3500000, "99.000000" : 9000000}}}
    }
  ]
}`, readErr, readIOPS)
}

var testWorkloads = []Workload{
	{Name: "rr", RW: "randread", BS: "4k", IODepth: 32},
	{Name: "sw", RW: "write", BS: "1m", IODepth: 8},
}

func TestParseFio(t *testing.T) {
	out := "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + fioJSON(0, 10240)
	got, err := ParseFio([]byte(out), testWorkloads)
	require.NoError(t, err)
	assert.Equal(t, map[string]Figures{
		"rr": {IOPS: 10240, MiBps: 40, P50usec: 25, P99usec: 180},
		"sw": {IOPS: 2048, MiBps: 2048, P50usec: 3500, P99usec: 9000},
	}, got)
}

func TestParseFioRefuses(t *testing.T) {
	tests := []struct {
		name string
		out  string
		ws   []Workload
		want string
	}{
		{"no JSON", "fio: pid=1, err=2/file:filesetup.c", testWorkloads, "no JSON"},
		{"truncated", fioJSON(0, 1)[:100], testWorkloads, "fio output"},
		{"missing job", fioJSON(0, 1), append(testWorkloads, Workload{Name: "x", RW: "read"}), `no job "x"`},
		{"job error", fioJSON(5, 1), testWorkloads, "error 5"},
		{"no I/O", fioJSON(0, 0), testWorkloads, "did no I/O"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFio([]byte(tt.out), tt.ws)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFioArgs(t *testing.T) {
	args := FioArgs("/dev/ublkb0", 1<<30, 10e9, 2e9, testWorkloads)
	assert.Subset(t, args, []string{"--filename=/dev/ublkb0", "--direct=1", "--ioengine=io_uring",
		"--size=1073741824", "--runtime=10", "--ramp_time=2", "--time_based"})
	// Every job follows its name and is a stonewall, so jobs never overlap.
	for _, w := range testWorkloads {
		i := indexOf(args, "--name="+w.Name)
		require.GreaterOrEqual(t, i, 0, w.Name)
		assert.Equal(t, []string{"--stonewall", "--rw=" + w.RW, "--bs=" + w.BS, fmt.Sprintf("--iodepth=%d", w.IODepth)}, args[i+1:i+5])
	}
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

func TestWorkloadsHaveOneDirectionEach(t *testing.T) {
	names := map[string]bool{}
	for _, w := range Workloads {
		assert.False(t, names[w.Name], "duplicate %s", w.Name)
		names[w.Name] = true
		assert.Contains(t, []string{"read", "randread", "write", "randwrite"}, w.RW, w.Name)
	}
}
