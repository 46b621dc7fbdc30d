package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{689.652, "690"},
		{5200.249, "5200"},
		{100, "100"},
		{99.96, "100.0"}, // rounds up past the band; still three digits and no exponent
		{15.269888, "15.3"},
		{10, "10.0"},
		{1.68, "1.68"},
		{1, "1.00"},
		{0.517448, "0.52"},
		{0.0036, "0.0036"},
		{0.00036, "0.00036"},
		{-2.5, "-2.50"},
	} {
		assert.Equal(t, c.want, FormatValue(c.in), "%v", c.in)
	}
}

func TestFormatTick(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{0.1, "0.1"},
		{3 * math.Pow10(-1), "0.3"}, // 0.30000000000000004
		{0.5, "0.5"},
		{20, "20"},
		{1000, "1000"},
		{2.5, "2.5"},
	} {
		assert.Equal(t, c.want, FormatTick(c.in), "%v", c.in)
	}
}

func TestLogAxis(t *testing.T) {
	for _, c := range []struct {
		name    string
		heights []float64
		want    bool
	}{
		{"async beside md", []float64{690, 183, 1.68, 342, 184, 2.63}, true},
		{"under ten times", []float64{11.3, 104, 15.8}, false},
		{"exactly ten times stays linear", []float64{1, 10}, false},
		{"just over ten times", []float64{1, 10.01}, true},
		{"one bar", []float64{5}, false},
		{"none", nil, false},
		{"not measured bars are left out", []float64{math.NaN(), 3, 4, math.NaN()}, false},
		{"not measured bars are left out, span kept", []float64{1, math.NaN(), 100}, true},
		{"zero cannot be drawn on a log axis", []float64{0, 1, 1000}, false},
	} {
		assert.Equal(t, c.want, LogAxis(c.heights), c.name)
	}
}

func TestSpread(t *testing.T) {
	lo, hi := Spread([]float64{15.389, 1.187, 1.68})
	assert.Equal(t, 1.187, lo)
	assert.Equal(t, 15.389, hi)
	lo, hi = Spread([]float64{7})
	assert.Equal(t, []float64{7, 7}, []float64{lo, hi})
	lo, hi = Spread(nil)
	assert.True(t, math.IsNaN(lo) && math.IsNaN(hi), "no repetitions, no spread")
}

func TestDisplayUnit(t *testing.T) {
	for _, c := range []struct {
		unit    string
		largest float64
		want    string
		scale   float64
	}{
		{"ms", 707.8, "ms", 1},
		{"ms", 9785.4, "s", 1e-3},
		{"ms", 1000, "s", 1e-3},
		{"us", 17170, "ms", 1e-3},
		{"us", 999, "us", 1},
		{"us", 2.5e6, "s", 1e-6},
		{"s", 0.5, "s", 1}, // never a shorter unit than the results'
		{"iops", 6150, "iops", 1},
		{"MiB/s", 637, "MiB/s", 1},
	} {
		u, scale := displayUnit(c.unit, c.largest)
		assert.Equal(t, c.want, u, "%v %s", c.largest, c.unit)
		assert.InDelta(t, c.scale, scale, c.scale*1e-12, "%v %s", c.largest, c.unit)
	}
}

func TestSystemLabel(t *testing.T) {
	assert.Equal(t, "uraid RAID10 async", SystemLabel("uraid-raid10-async"))
	assert.Equal(t, "md RAID0", SystemLabel("md-raid0"))
	assert.Equal(t, "other", SystemLabel("other"))
}

// TestChartsFromRepetitions: every bar's whisker spans exactly the least and
// greatest repetition, in the chart's unit; bars of a missing combination
// are marked unmeasured; titles and labels are words; the discard count is
// not charted.
func TestChartsFromRepetitions(t *testing.T) {
	s := suite(
		Result{Scenario: "f-slow-member", Case: "idle", Metric: "read_p99", Unit: "us", Better: "lower", System: "md-raid10", Values: []float64{23461.888, 10944.512, 11337.728}},
		Result{Scenario: "f-slow-member", Case: "during-fstrim", Metric: "read_p99", Unit: "us", Better: "lower", System: "md-raid10", Values: []float64{105381.888, 103284.736, 104333.312}},
		Result{Scenario: "f-slow-member", Case: "idle", Metric: "read_p99", Unit: "us", Better: "lower", System: "uraid-raid10-async", Values: []float64{15925.248, 14352.384, 14352.384}},
		// No during-fstrim figure for uraid.
		Result{Scenario: "d-read-under-discard", Case: "with-discards", Metric: "discards", Unit: "count", Better: "higher", System: "md-raid10", Values: []float64{120}},
		Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", Unit: "ms", Better: "lower", System: "md-raid0", Values: []float64{707.823, 689.652, 686.952}},
		Result{Scenario: "a-blkdiscard", Case: "full", Metric: "wall", Unit: "ms", Better: "lower", System: "uraid-raid0-async", Values: []float64{15.389, 1.187, 1.68}},
	)
	charts := s.Charts()
	require.Len(t, charts, 2, "one chart per scenario and metric, none for the discard count")

	f := charts[0]
	assert.Equal(t, "f-slow-member-read_p99", f.Name)
	assert.Equal(t, "read p99, ms", f.YLabel)
	assert.NotContains(t, f.Title, "read_p99", "titles are words, not metric keys")
	assert.Equal(t, []string{"fio alone", "fio during fstrim"}, f.Cases)
	assert.Equal(t, []string{"md-raid10", "uraid-raid10-async"}, f.Systems)
	assert.False(t, f.Log, "11.3 ms to 104 ms is under ten times")
	assert.Contains(t, f.Note, "median of 3 runs")
	assert.Contains(t, f.Note, "lower is better")
	md := f.Bars[0]
	assert.InDelta(t, 11.337728, md[0].Median, 1e-9)
	assert.InDelta(t, 10.944512, md[0].Min, 1e-9)
	assert.InDelta(t, 23.461888, md[0].Max, 1e-9)
	assert.Equal(t, 3, md[0].Runs)
	assert.InDelta(t, 103.284736, md[1].Min, 1e-9)
	assert.InDelta(t, 105.381888, md[1].Max, 1e-9)
	ur := f.Bars[1]
	assert.InDelta(t, 14.352384, ur[0].Min, 1e-9)
	assert.InDelta(t, 15.925248, ur[0].Max, 1e-9)
	assert.Equal(t, 0, ur[1].Runs, "not measured")
	assert.True(t, math.IsNaN(ur[1].Median))

	a := charts[1]
	assert.Equal(t, "a-blkdiscard-wall", a.Name)
	assert.Equal(t, "blkdiscard time, ms", a.YLabel)
	assert.True(t, a.Log, "1.68 ms beside 690 ms")
	assert.Contains(t, a.Note, "log scale")
	assert.InDelta(t, 1.187, a.Bars[1][0].Min, 1e-12)
	assert.InDelta(t, 15.389, a.Bars[1][0].Max, 1e-12)
	assert.True(t, a.HasSpread())
}

func TestChartUnknownScenarioKeepsItsKeys(t *testing.T) {
	s := suite(Result{Scenario: "g-new", Case: "x", Metric: "lat", Unit: "ms", Better: "lower", System: "md-raid0", Values: []float64{5}})
	c := s.Charts()[0]
	assert.Equal(t, "g-new: lat", c.Title)
	assert.Equal(t, "lat, ms", c.YLabel)
	assert.Equal(t, []string{"x"}, c.Cases)
	assert.Equal(t, "one run; lower is better", c.Note)
	assert.False(t, c.HasSpread(), "one run has no whisker")
}

func TestAxisRange(t *testing.T) {
	lin := Chart{Bars: [][]Bar{{{Median: 50, Min: 40, Max: 90, Runs: 3}, {Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}}}}
	lo, hi := lin.AxisRange(0.1)
	assert.Equal(t, 0.0, lo, "a linear axis starts at zero")
	assert.InDelta(t, 100, hi, 1e-9, "the highest whisker at 90% of the axis")

	log := Chart{Log: true, Bars: [][]Bar{{{Median: 690, Min: 687, Max: 708, Runs: 3}, {Median: 1.68, Min: 1.187, Max: 15.4, Runs: 3}}}}
	lo, hi = log.AxisRange(0.1)
	assert.Equal(t, 0.1, lo, "half a decade below 1.187, on a power of ten")
	assert.InDelta(t, 0.9, (math.Log(708)-math.Log(lo))/(math.Log(hi)-math.Log(lo)), 1e-9)

	lo, _ = Chart{Log: true, Bars: [][]Bar{{{Median: 4, Min: 3.6, Max: 5, Runs: 2}, {Median: 100, Min: 100, Max: 100, Runs: 1}}}}.AxisRange(0.1)
	assert.Equal(t, 1.0, lo)

	lo, hi = Chart{}.AxisRange(0.1)
	assert.Equal(t, []float64{0, 1}, []float64{lo, hi}, "nothing measured: an empty axis")
}

// TestAxisRangeHoldsEveryWhisker: whatever the repetitions, every median and
// whisker lies on the axis, below the room kept for labels, and a log axis
// starts above zero.
func TestAxisRangeHoldsEveryWhisker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var rs []Result
		for i := range rapid.IntRange(1, 6).Draw(t, "systems") {
			vals := rapid.SliceOfN(rapid.Float64Range(0.001, 1e6), 1, 5).Draw(t, "values")
			rs = append(rs, Result{Scenario: "c-fstrim", Case: "fragmented", Metric: "wall", Unit: "ms", Better: "lower",
				System: string(rune('a' + i)), Values: vals})
		}
		c := suite(rs...).Charts()[0]
		lo, hi := c.AxisRange(0.1)
		for _, bars := range c.Bars {
			for _, b := range bars {
				if b.Min > b.Median || b.Median > b.Max {
					t.Fatalf("bar %+v: the median is outside its whisker", b)
				}
				if b.Min < lo || b.Max >= hi {
					t.Fatalf("bar %+v outside the axis %v..%v", b, lo, hi)
				}
			}
		}
		if c.Log && lo <= 0 {
			t.Fatalf("log axis from %v", lo)
		}
	})
}

func TestLogTicks(t *testing.T) {
	labelled, minor := LogTicks(0.1, 30)
	want := []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 20}
	require.Len(t, labelled, len(want))
	for i := range want {
		assert.InDelta(t, want[i], labelled[i], want[i]*1e-12)
	}
	assert.Len(t, minor, 6+6+1, "3,4,6..9 per decade, then 30")
	labelled, _ = LogTicks(0.3, 0.7)
	assert.Len(t, labelled, 1, "only 0.5 lies between")
	labelled, minor = LogTicks(0, 10)
	assert.Empty(t, labelled)
	assert.Empty(t, minor)
}
