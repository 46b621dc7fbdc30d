package ublkbench

import (
	"fmt"
	"sort"
)

// Target names, as they appear in results.
const (
	Ublk = "ublk"
	Loop = "loop"
)

// Result is one workload's figures on one target in one repetition.
type Result struct {
	Rep      int    `json:"rep"`
	Target   string `json:"target"`
	Workload string `json:"workload"`
	Figures
}

// Summary is one workload's medians over the repetitions on each target
// and ublk's figures divided by loop's: above 1 is better for IOPS and
// bandwidth, below 1 is better for latency.
type Summary struct {
	Workload string  `json:"workload"`
	Reps     int     `json:"reps"`
	Ublk     Figures `json:"ublk"`
	Loop     Figures `json:"loop"`
	Ratio    Figures `json:"ublk_over_loop"`
}

// Median of xs; the mean of the middle two for an even count. xs is not
// modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func medianFigures(fs []Figures) Figures {
	pick := func(f func(Figures) float64) float64 {
		xs := make([]float64, len(fs))
		for i, x := range fs {
			xs[i] = f(x)
		}
		return Median(xs)
	}
	return Figures{
		IOPS:    pick(func(f Figures) float64 { return f.IOPS }),
		MiBps:   pick(func(f Figures) float64 { return f.MiBps }),
		P50usec: pick(func(f Figures) float64 { return f.P50usec }),
		P99usec: pick(func(f Figures) float64 { return f.P99usec }),
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Summarize takes the median of every figure separately over the
// repetitions of each workload on each target, in the order of ws, and
// divides ublk's medians by loop's. Each median is of its own figure, so
// the p99 of a summary may come from another repetition than its IOPS.
// Both targets must have the same number of results for every workload,
// else the comparison would be skewed.
func Summarize(rs []Result, ws []Workload) ([]Summary, error) {
	by := map[[2]string][]Figures{}
	for _, r := range rs {
		if r.Target != Ublk && r.Target != Loop {
			return nil, fmt.Errorf("result of unknown target %q", r.Target)
		}
		k := [2]string{r.Workload, r.Target}
		by[k] = append(by[k], r.Figures)
	}
	var out []Summary
	for _, w := range ws {
		u, l := by[[2]string{w.Name, Ublk}], by[[2]string{w.Name, Loop}]
		if len(u) == 0 || len(u) != len(l) {
			return nil, fmt.Errorf("workload %s: %d ublk and %d loop results; want the same, at least one", w.Name, len(u), len(l))
		}
		mu, ml := medianFigures(u), medianFigures(l)
		out = append(out, Summary{
			Workload: w.Name,
			Reps:     len(u),
			Ublk:     mu,
			Loop:     ml,
			Ratio: Figures{
				IOPS:    ratio(mu.IOPS, ml.IOPS),
				MiBps:   ratio(mu.MiBps, ml.MiBps),
				P50usec: ratio(mu.P50usec, ml.P50usec),
				P99usec: ratio(mu.P99usec, ml.P99usec),
			},
		})
	}
	return out, nil
}
