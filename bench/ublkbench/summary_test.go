package ublkbench

import (
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{100, 1, 1}, 1},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		assert.Equal(t, tt.want, Median(tt.in), "%v", tt.in)
		assert.Equal(t, in, tt.in, "Median must not reorder its input")
	}
}

func TestMedianSplitsInHalves(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Float64Range(-1e9, 1e9), 1, 20).Draw(t, "xs")
		m := Median(xs)
		var below, above int
		for _, x := range xs {
			if x <= m {
				below++
			}
			if x >= m {
				above++
			}
		}
		if 2*below < len(xs) || 2*above < len(xs) {
			t.Fatalf("median %v of %v: %d at or below, %d at or above", m, xs, below, above)
		}
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		if m < s[0] || m > s[len(s)-1] {
			t.Fatalf("median %v outside [%v, %v]", m, s[0], s[len(s)-1])
		}
	})
}

func TestSummarize(t *testing.T) {
	ws := []Workload{{Name: "a"}, {Name: "b"}}
	rs := []Result{
		{1, Ublk, "a", Figures{IOPS: 80, MiBps: 8, P50usec: 30, P99usec: 100}},
		{1, Loop, "a", Figures{IOPS: 100, MiBps: 10, P50usec: 20, P99usec: 50}},
		{2, Loop, "a", Figures{IOPS: 300, MiBps: 30, P50usec: 10, P99usec: 40}},
		{2, Ublk, "a", Figures{IOPS: 60, MiBps: 6, P50usec: 40, P99usec: 500}},
		{3, Ublk, "a", Figures{IOPS: 90, MiBps: 9, P50usec: 20, P99usec: 80}},
		{3, Loop, "a", Figures{IOPS: 200, MiBps: 20, P50usec: 15, P99usec: 60}},
		{1, Ublk, "b", Figures{IOPS: 5, MiBps: 5, P50usec: 1, P99usec: 1}},
		{1, Loop, "b", Figures{IOPS: 4, MiBps: 4, P50usec: 2, P99usec: 4}},
	}
	got, err := Summarize(rs, ws)
	require.NoError(t, err)
	assert.Equal(t, []Summary{
		{Workload: "a", Reps: 3,
			Ublk:  Figures{IOPS: 80, MiBps: 8, P50usec: 30, P99usec: 100},
			Loop:  Figures{IOPS: 200, MiBps: 20, P50usec: 15, P99usec: 50},
			Ratio: Figures{IOPS: 0.4, MiBps: 0.4, P50usec: 2, P99usec: 2}},
		{Workload: "b", Reps: 1,
			Ublk:  Figures{IOPS: 5, MiBps: 5, P50usec: 1, P99usec: 1},
			Loop:  Figures{IOPS: 4, MiBps: 4, P50usec: 2, P99usec: 4},
			Ratio: Figures{IOPS: 1.25, MiBps: 1.25, P50usec: 0.5, P99usec: 0.25}},
	}, got)
}

func TestSummarizeRefuses(t *testing.T) {
	ws := []Workload{{Name: "a"}}
	tests := []struct {
		name string
		rs   []Result
		want string
	}{
		{"nothing", nil, "0 ublk and 0 loop"},
		{"loop missing", []Result{{1, Ublk, "a", Figures{IOPS: 1}}}, "1 ublk and 0 loop"},
		{"uneven", []Result{{1, Ublk, "a", Figures{}}, {2, Ublk, "a", Figures{}}, {1, Loop, "a", Figures{}}}, "2 ublk and 1 loop"},
		{"unknown target", []Result{{1, "nbd", "a", Figures{}}}, `unknown target "nbd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Summarize(tt.rs, ws)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Scaling every ublk figure by k against the same loop figures, in any
// order of results, makes every ratio k.
func TestSummarizeRatioIsScale(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.Float64Range(0.01, 100).Draw(t, "k")
		reps := rapid.IntRange(1, 5).Draw(t, "reps")
		var rs []Result
		for rep := 1; rep <= reps; rep++ {
			f := Figures{
				IOPS:    rapid.Float64Range(1, 1e6).Draw(t, "iops"),
				MiBps:   rapid.Float64Range(1, 1e4).Draw(t, "mibs"),
				P50usec: rapid.Float64Range(1, 1e5).Draw(t, "p50"),
				P99usec: rapid.Float64Range(1, 1e5).Draw(t, "p99"),
			}
			scaled := Figures{IOPS: f.IOPS * k, MiBps: f.MiBps * k, P50usec: f.P50usec * k, P99usec: f.P99usec * k}
			rs = append(rs, Result{rep, Loop, "w", f}, Result{rep, Ublk, "w", scaled})
		}
		perm := rapid.Permutation(rs).Draw(t, "order")
		s, err := Summarize(perm, []Workload{{Name: "w"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []float64{s[0].Ratio.IOPS, s[0].Ratio.MiBps, s[0].Ratio.P50usec, s[0].Ratio.P99usec} {
			if math.Abs(r-k) > 1e-9*k {
				t.Fatalf("ratio %v, want %v", r, k)
			}
		}
	})
}
