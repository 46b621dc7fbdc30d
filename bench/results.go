package bench

import (
	"fmt"
	"slices"
	"sort"
)

// Result is one metric of one array in one scenario, over repetitions.
type Result struct {
	Scenario string    `json:"scenario"` // "a-blkdiscard", ...
	Case     string    `json:"case"`     // a variant within the scenario: "discard", "during-fstrim", ...
	System   string    `json:"system"`   // "md-raid10", "uraid-raid10-async", ...
	Metric   string    `json:"metric"`   // "wall", "files_per_s", "read_p99", ...
	Unit     string    `json:"unit"`     // "s", "ms", "us", "iops", "MiB/s", "files/s"
	Better   string    `json:"better"`   // "lower" or "higher"
	Values   []float64 `json:"values"`
	Median   float64   `json:"median"`
}

// Key names the measurement independently of the array.
func (r Result) Key() string { return r.Scenario + "/" + r.Case + "/" + r.Metric }

// Suite is a whole run: where it ran, with what settings, and the results.
type Suite struct {
	Started  string            `json:"started"`
	Quick    bool              `json:"quick"`
	Reps     int               `json:"reps"`
	Machine  map[string]string `json:"machine"`
	Settings map[string]string `json:"settings"`
	Results  []Result          `json:"results"`
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// Ratio compares a uraid result with md's of the same level and
// measurement. Repetitions pair up by index (scenario (e) measures both in
// every repetition): Ratio is the median of the per-repetition ratios, Min
// and Max their spread. Results whose repetitions do not pair up compare
// medians, with no spread.
type Ratio struct {
	Key      string  `json:"key"`
	Unit     string  `json:"unit"`
	Better   string  `json:"better"`
	URaid    string  `json:"uraid"`
	MD       string  `json:"md"`
	URaidVal float64 `json:"uraid_value"`
	MDVal    float64 `json:"md_value"`
	Ratio    float64 `json:"ratio"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Reps     int     `json:"reps"`
}

// ratioOf compares a with b: the median, lowest and highest of a's
// repetitions over b's, paired by index, and how many pairs there were;
// with no pairs (counts differ), the ratio of the medians and n 1. ok is
// false when b is zero.
func ratioOf(a, b Result) (med, lo, hi float64, n int, ok bool) {
	if len(a.Values) == len(b.Values) && len(a.Values) > 0 {
		var rs []float64
		for i, v := range a.Values {
			if b.Values[i] == 0 {
				return 0, 0, 0, 0, false
			}
			rs = append(rs, v/b.Values[i])
		}
		return median(rs), slices.Min(rs), slices.Max(rs), len(rs), true
	}
	if b.Median == 0 {
		return 0, 0, 0, 0, false
	}
	r := a.Median / b.Median
	return r, r, r, 1, true
}

// Ratios pairs every uraid result with md's result of the same level and
// measurement ("uraid-raid10-async" with "md-raid10"). Results that are
// better neither way (Better "none": what was measured on, such as the
// filesystem's used bytes under a reshape, or a setting) are not compared.
func (s *Suite) Ratios() []Ratio {
	md := map[string]Result{}
	for _, r := range s.Results {
		if level, ok := mdLevel(r.System); ok {
			md[level+"|"+r.Key()] = r
		}
	}
	var out []Ratio
	for _, r := range s.Results {
		level, ok := uraidLevel(r.System)
		if !ok || r.Better == "none" {
			continue
		}
		m, ok := md[level+"|"+r.Key()]
		if !ok {
			continue
		}
		med, lo, hi, n, ok := ratioOf(r, m)
		if !ok {
			continue
		}
		out = append(out, Ratio{Key: r.Key(), Unit: r.Unit, Better: r.Better, URaid: r.System, MD: m.System,
			URaidVal: r.Median, MDVal: m.Median, Ratio: med, Min: lo, Max: hi, Reps: n})
	}
	return out
}

// mdLevel returns "raid10" for "md-raid10".
func mdLevel(system string) (string, bool) {
	var level string
	if _, err := fmt.Sscanf(system, "md-%s", &level); err != nil {
		return "", false
	}
	return level, true
}

// uraidLevel returns "raid10" for "uraid-raid10-async".
func uraidLevel(system string) (string, bool) {
	var rest string
	if _, err := fmt.Sscanf(system, "uraid-%s", &rest); err != nil {
		return "", false
	}
	for i := range rest {
		if rest[i] == '-' {
			return rest[:i], true
		}
	}
	return rest, true
}

// Find returns the result of system for key.
func (s *Suite) Find(system, key string) (Result, bool) {
	for _, r := range s.Results {
		if r.System == system && r.Key() == key {
			return r, true
		}
	}
	return Result{}, false
}
