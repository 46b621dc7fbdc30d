package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		assert.Equal(t, c.want, median(c.in), "%v", c.in)
	}
}

// TestMedianProperty: at least half of the values are <= the median and at
// least half >= it, and the input is left as it was.
func TestMedianProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), 1, 20).Draw(t, "v")
		orig := append([]float64(nil), v...)
		m := median(v)
		le, ge := 0, 0
		for _, x := range v {
			if x <= m {
				le++
			}
			if x >= m {
				ge++
			}
		}
		if 2*le < len(v) || 2*ge < len(v) {
			t.Fatalf("median %v of %v: %d <=, %d >=", m, v, le, ge)
		}
		if !assert.ObjectsAreEqual(orig, v) {
			t.Fatalf("median reordered its input")
		}
	})
}

func suite(results ...Result) *Suite {
	for i := range results {
		results[i].Median = median(results[i].Values)
	}
	return &Suite{Results: results}
}

func TestRatiosPairLevels(t *testing.T) {
	s := suite(
		Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", System: "md-raid10", Values: []float64{100, 300, 200}},
		Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", System: "md-raid0", Values: []float64{40}},
		Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", System: "uraid-raid10-async", Values: []float64{50}},
		Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", System: "uraid-raid0-sync", Values: []float64{20, 20}},
		// No md figure for this one: no ratio.
		Result{Scenario: "c-fstrim", Case: "fragmented", Metric: "wall", System: "uraid-raid0-sync", Values: []float64{1}},
	)
	got := map[string]float64{}
	for _, r := range s.Ratios() {
		got[r.URaid+" vs "+r.MD] = r.Ratio
	}
	assert.Equal(t, map[string]float64{"uraid-raid10-async vs md-raid10": 0.25, "uraid-raid0-sync vs md-raid0": 0.5}, got)
}

func TestTargets(t *testing.T) {
	s := suite(
		Result{Scenario: "b-churn", Case: "discard", Metric: "files_per_s", System: "uraid-raid10-async", Values: []float64{96}},
		Result{Scenario: "b-churn", Case: "nodiscard", Metric: "files_per_s", System: "uraid-raid10-async", Values: []float64{100}},
		Result{Scenario: "b-churn", Case: "discard", Metric: "files_per_s", System: "md-raid10", Values: []float64{120}},
		Result{Scenario: "f-slow-member", Case: "fstrim", Metric: "wall", System: "uraid-raid10-async", Values: []float64{10}},
		Result{Scenario: "f-slow-member", Case: "fstrim", Metric: "wall", System: "md-raid10", Values: []float64{100}},
	)
	byGoal := map[string]Target{}
	for _, tg := range s.Targets() {
		if tg.System == "uraid-raid10-async" {
			byGoal[tg.Goal] = tg
		}
	}
	own := byGoal["churn -o discard >= 0.95x own nodiscard"]
	assert.InDelta(t, 0.96, own.Value, 1e-9)
	assert.True(t, own.Met())
	vsMD := byGoal["churn -o discard not behind md"]
	assert.InDelta(t, 0.8, vsMD.Value, 1e-9)
	assert.False(t, vsMD.Met())
	f := byGoal["fstrim wall <= 0.25x md"]
	assert.InDelta(t, 0.1, f.Value, 1e-9)
	assert.True(t, f.Met())
	missing := byGoal["read p99 during fstrim <= 0.5x md"]
	assert.True(t, missing.Missing)
	assert.False(t, missing.Met(), "a target without figures is not met")
}

// The learned targets compare the learned array with the hand-set one rep by rep: (h)'s second
// fstrim with the --trim-gap system of least median (the first, learning, is no target), (i) each
// array beside the flood with itself alone.
func TestLearnedTargets(t *testing.T) {
	const settled, learned = "settled", "uraid-raid10-async-learned"
	h := func(system string, v ...float64) Result {
		return Result{Scenario: "h-back-to-back", Case: "fstrim-warm", Metric: settled, System: system, Values: v}
	}
	i := func(system, c, metric string, v ...float64) Result {
		return Result{Scenario: "i-flood", Case: c, Metric: metric, System: system, Values: v}
	}
	s := suite(
		Result{Scenario: "f-slow-member", Case: "fstrim", Metric: "wall", System: learned, Values: []float64{105, 125}},
		Result{Scenario: "f-slow-member", Case: "fstrim", Metric: "wall", System: "uraid-raid10-async", Values: []float64{100, 100}},
		h(learned, 1100, 1300, 1000),
		h("uraid-raid10-async-gap5ms", 9000, 9000, 9000),
		h("uraid-raid10-async-gap10ms", 1000, 1000, 1000),
		h("uraid-raid10-async-gap40ms", 2000, 2000, 2000),
		Result{Scenario: "h-back-to-back", Case: "fstrim", Metric: settled, System: learned, Values: []float64{9000, 9000, 9000}},
		i(learned, "alone", "read_p99", 100, 100), i(learned, "with-flood", "read_p99", 250, 400),
		i(learned, "alone", "reads", 1000, 1000), i(learned, "with-flood", "reads", 600, 500),
	)
	byGoal := map[string]Target{}
	for _, tg := range s.Targets() {
		if tg.System == learned {
			byGoal[tg.Scenario+" "+tg.Goal] = tg
		}
	}
	f := byGoal["f learned: fstrim wall <= 1.2x hand-set"]
	assert.InDelta(t, 1.15, f.Value, 1e-9, "the median of 1.05 and 1.25")
	assert.InDelta(t, 1.05, f.Min, 1e-9)
	assert.True(t, f.Met())
	assert.True(t, byGoal["f learned: read p99 during fstrim <= 1.2x hand-set"].Missing)
	g := byGoal["h learned: second fstrim to the last TRIM <= 1.2x the best hand-set --trim-gap (uraid-raid10-async-gap10ms)"]
	assert.InDelta(t, 1.1, g.Value, 1e-9)
	assert.InDelta(t, 1.0, g.Min, 1e-9)
	assert.InDelta(t, 1.3, g.Max, 1e-9)
	assert.True(t, g.Met())
	p99 := byGoal["i read p99 beside the flood <= 3x alone"]
	assert.InDelta(t, 3.25, p99.Value, 1e-9)
	assert.False(t, p99.Met())
	reads := byGoal["i reads beside the flood >= 0.5x alone"]
	assert.InDelta(t, 0.55, reads.Value, 1e-9)
	assert.True(t, reads.Met())
}

func TestExtract(t *testing.T) {
	s := suite(Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", System: "md-raid0", Values: []float64{1, 2, 3}})
	b, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	log := "progress\r\nBEGIN\r\n" + string(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))) + "\r\nEND\r\nmore\r\n"
	got, err := Extract([]byte(log), "BEGIN", "END")
	require.NoError(t, err)
	assert.Equal(t, s.Results, got.Results)

	_, err = Extract([]byte("progress only"), "BEGIN", "END")
	assert.ErrorContains(t, err, "no results")
	// A later block cut short leaves the last complete one.
	got, err = Extract([]byte(log+"BEGIN {\"results\": ["), "BEGIN", "END")
	require.NoError(t, err)
	assert.Equal(t, s.Results, got.Results)
	_, err = Extract([]byte("BEGIN {\"results\": ["), "BEGIN", "END")
	assert.ErrorContains(t, err, "cut short")
}

func TestWriteRatiosWithReference(t *testing.T) {
	cur := suite(
		Result{Scenario: "e-io", Case: "read-1m", Metric: "throughput", Unit: "MiB/s", Better: "higher", System: "md-raid0", Values: []float64{200}},
		Result{Scenario: "e-io", Case: "read-1m", Metric: "throughput", Unit: "MiB/s", Better: "higher", System: "uraid-raid0-sync", Values: []float64{180}},
	)
	ref := suite(
		Result{Scenario: "e-io", Case: "read-1m", Metric: "throughput", System: "md-raid0", Values: []float64{100}},
		Result{Scenario: "e-io", Case: "read-1m", Metric: "throughput", System: "uraid-raid0-sync", Values: []float64{75}},
	)
	var out bytes.Buffer
	cur.WriteRatios(&out, ref)
	assert.Contains(t, out.String(), "| e-io/read-1m/throughput ↑ | raid0-sync | 180 MiB/s | 200 MiB/s | 0.90 | 0.75 |")
}

func TestMerge(t *testing.T) {
	s := suite(
		Result{Scenario: "c-fstrim", System: "md-raid0", Values: []float64{1}},
		Result{Scenario: "d-read-under-discard", Case: "alone", System: "md-raid0", Values: []float64{2}},
		Result{Scenario: "d-read-under-discard", Case: "old-case", System: "md-raid0", Values: []float64{3}},
	)
	s.Settings = map[string]string{"chunk": "512 KiB"}
	later := suite(Result{Scenario: "d-read-under-discard", Case: "alone", System: "md-raid0", Values: []float64{4}})
	later.Settings = map[string]string{"chunk": "64 KiB", "rebuild (g)": "new"}
	s.Machine = map[string]string{"kernel": "6.12"}
	later.Machine = map[string]string{"kernel": "7.3"}
	s.Merge(later)
	assert.Equal(t, map[string]string{"chunk": "512 KiB", "rebuild (g)": "new", "kernel of d-read-under-discard": "7.3"}, s.Settings)
	assert.Equal(t, "6.12", s.Machine["kernel"])
	assert.Equal(t, []Result{
		{Scenario: "c-fstrim", System: "md-raid0", Values: []float64{1}, Median: 1},
		{Scenario: "d-read-under-discard", Case: "alone", System: "md-raid0", Values: []float64{4}, Median: 4},
	}, s.Results)
}

// Ratios pair repetitions by index and report the median with its range;
// results whose repetitions do not pair up compare medians.
func TestRatioSpread(t *testing.T) {
	s := Suite{Results: []Result{
		{Scenario: "e-io", Case: "read-1m", Metric: "throughput", Unit: "MiB/s", Better: "higher", System: "md-raid10", Values: []float64{100, 200, 100, 50, 100}},
		{Scenario: "e-io", Case: "read-1m", Metric: "throughput", Unit: "MiB/s", Better: "higher", System: "uraid-raid10-sync", Values: []float64{80, 100, 90, 50, 70}},
		{Scenario: "c-fstrim", Case: "x", Metric: "wall", Unit: "ms", Better: "lower", System: "md-raid10", Values: []float64{10, 30}},
		{Scenario: "c-fstrim", Case: "x", Metric: "wall", Unit: "ms", Better: "lower", System: "uraid-raid10-sync", Values: []float64{5}},
	}}
	for i := range s.Results {
		s.Results[i].Median = median(s.Results[i].Values)
	}
	rs := s.Ratios()
	require.Len(t, rs, 2)
	// Per repetition: 0.8, 0.5, 0.9, 1.0, 0.7.
	assert.InDelta(t, 0.8, rs[0].Ratio, 1e-9)
	assert.InDelta(t, 0.5, rs[0].Min, 1e-9)
	assert.InDelta(t, 1.0, rs[0].Max, 1e-9)
	assert.Equal(t, 5, rs[0].Reps)
	assert.InDelta(t, 0.25, rs[1].Ratio, 1e-9)
	assert.Equal(t, rs[1].Min, rs[1].Max)
	var out bytes.Buffer
	s.WriteRatios(&out, nil)
	assert.Contains(t, out.String(), "| 0.80 (0.50–1.00) |")
	assert.Contains(t, out.String(), "| 0.25 |")
}
