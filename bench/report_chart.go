package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Chart is one plot of a suite, laid out but not drawn: one metric of one
// scenario, a group of bars per case and one bar per array, in a unit and
// on an axis chosen for the values it shows. benchreport draws it.
type Chart struct {
	Name    string   // the file name without extension: "c-fstrim-wall"
	Title   string   // "(c) fstrim of a fragmented ext4"
	Note    string   // how to read it: "median of 3 runs, whiskers min–max; lower is better"
	YLabel  string   // quantity and unit in words: "fstrim time, s"
	Log     bool     // a log axis (see LogAxis)
	Cases   []string // the groups' labels, in the order the suite measured them
	Systems []string // the arrays, as the suite names them ("uraid-raid10-async")
	Bars    [][]Bar  // Bars[system][case], in the chart's unit
}

// Bar is one array's figure for one case, over its repetitions.
type Bar struct {
	Median   float64
	Min, Max float64 // the spread over the repetitions
	Runs     int     // the repetitions behind it; 0: not measured
}

// LogSpan is the largest ratio of bar heights a chart shows on a linear axis.
// Beyond it the shortest bar is under a tenth of the tallest, too short to
// compare (1.7 ms beside 690 ms is a line on the axis), so the axis is
// logarithmic.
const LogSpan = 10

// LogAxis says whether bars of these heights need a log axis: the tallest is
// more than LogSpan times the shortest. Bars that are not measured (NaN) are
// left out, and a zero or negative one, which a log axis cannot show, keeps
// the axis linear.
func LogAxis(heights []float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, h := range heights {
		if math.IsNaN(h) {
			continue
		}
		if h <= 0 {
			return false
		}
		lo, hi = min(lo, h), max(hi, h)
	}
	return hi > LogSpan*lo
}

// Spread is the least and greatest of values, what a chart's whiskers span.
func Spread(values []float64) (lo, hi float64) {
	if len(values) == 0 {
		return math.NaN(), math.NaN()
	}
	return slices.Min(values), slices.Max(values)
}

// FormatValue prints a bar's value for its label: three significant digits
// at most, whole numbers from 100 up, and never an exponent.
func FormatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		// Two significant digits: 0.52, 0.0036.
		digits := 1 - int(math.Floor(math.Log10(a)))
		return strconv.FormatFloat(v, 'f', digits, 64)
	}
}

// FormatTick prints an axis mark's value without trailing zeros (0.5, 20,
// 1000), where a bar's label keeps three significant digits. Six decimals
// at most: 3·10^-1 is 0.30000000000000004 as a float64.
func FormatTick(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// timeUnits are the units of time results come in, shortest first, with
// their length in microseconds.
var timeUnits = []struct {
	name string
	us   float64
}{{"us", 1}, {"ms", 1e3}, {"s", 1e6}}

// displayUnit picks the unit a chart of values in unit shows: for times the
// longest unit in which the largest value is still at least 1 (690 ms stays
// ms, 9715 ms becomes 9.7 s, 104333 us 104 ms). It returns the unit and the
// factor to multiply values by; other units are kept.
func displayUnit(unit string, largest float64) (string, float64) {
	from := -1
	for i, u := range timeUnits {
		if u.name == unit {
			from = i
		}
	}
	if from < 0 {
		return unit, 1
	}
	to := from
	for to+1 < len(timeUnits) && largest*timeUnits[from].us >= timeUnits[to+1].us {
		to++
	}
	return timeUnits[to].name, timeUnits[from].us / timeUnits[to].us
}

// chartWords says in words what a scenario's metric is. The unit is added
// to the quantity unless the quantity names it (IOPS).
var chartWords = map[string]struct{ title, quantity string }{
	"a-blkdiscard/wall":             {"(a) BLKDISCARD of the whole array", "blkdiscard time"},
	"b-churn/files_per_s":           {"(b) Small-file churn on ext4: create, delete, sync", "churn rate"},
	"c-fstrim/wall":                 {"(c) fstrim of a fragmented ext4", "fstrim time"},
	"d-read-under-discard/read_p99": {"(d) 4 KiB random reads, alone and beside a discard stream", "read p99"},
	"e-io/iops":                     {"(e) 4 KiB random I/O at QD32 on kernel-native members (brd)", "IOPS"},
	"e-io/throughput":               {"(e) 1 MiB sequential I/O at QD8 on kernel-native members (brd)", "throughput"},
	"e-io/lat_p50":                  {"(e) 4 KiB random reads at QD1 on kernel-native members (brd)", "latency p50"},
	"f-slow-member/wall":            {"(f) fstrim, RAID10 with one slow SATA-like member", "fstrim time"},
	"f-slow-member/read_p99":        {"(f) 4 KiB read p99, RAID10 with one slow SATA-like member", "read p99"},
	"f-slow-member/write_p99":       {"(f) 4 KiB write p99, RAID10 with one slow SATA-like member", "write p99"},
	"f-slow-member/read_iops":       {"(f) 4 KiB reads, RAID10 with one slow SATA-like member", "read IOPS"},
	"f-slow-member/write_iops":      {"(f) 4 KiB writes, RAID10 with one slow SATA-like member", "write IOPS"},
	"f-slow-member/slow_read_share": {"(f) the slow member's share of its mirror pair's reads", "share of reads"},
	"g-rebuild/wall":                {"(g) Replacing a RAID10 member under a 20%-full ext4 (brd)", "time to the end of the rebuild"},
	"g-rebuild/written":             {"(g) Replacing a RAID10 member: written to the new member", "written"},
	"k-reshape/wall":                {"(k) Reshaping a RAID10 of 4 members to 6 online under a 20%-full ext4 (brd)", "time of the reshape"},
	"k-reshape/read_p99":            {"(k) 4 KiB QD1 reads of the files before and during the online reshape", "read p99"},
	"k-reshape/read_iops":           {"(k) 4 KiB QD1 reads of the files before and during the online reshape", "read IOPS"},
	"k-reshape/read":                {"(k) Reshaping a RAID10 of 4 members to 6: read from the members", "read"},
	"k-reshape/written":             {"(k) Reshaping a RAID10 of 4 members to 6: written to the members", "written"},
	"k-reshape/moved":               {"(k) Reshaping a RAID10 of 4 members to 6: read and written", "read and written"},
	"h-back-to-back/settled":        {"(h) fstrim until every TRIM is done, one member with a back-to-back penalty", "time to the last TRIM"},
	"h-back-to-back/wall":           {"(h) fstrim, one member with a back-to-back penalty", "fstrim time"},
	"h-back-to-back/m0_trims":       {"(h) TRIMs the penalized member ran", "TRIMs"},
	"i-flood/read_p99":              {"(i) QD1 4 KiB reads beside a 4 KiB discard flood, one NBD member serialized at 50 ms per TRIM", "read p99"},
	"i-flood/reads":                 {"(i) QD1 4 KiB reads beside a 4 KiB discard flood: reads done", "reads"},
}

// caseWords names a scenario's cases on the chart's axis.
var caseWords = map[string]string{
	"a-blkdiscard/full":                  "whole array, once",
	"b-churn/discard":                    "mounted -o discard",
	"b-churn/nodiscard":                  "mounted -o nodiscard",
	"c-fstrim/fragmented":                "600 files, every other deleted",
	"d-read-under-discard/alone":         "reads alone",
	"d-read-under-discard/with-discards": "with 20 discards/s",
	"e-io/randread-4k-qd32":              "random read",
	"e-io/randwrite-4k-qd32":             "random write",
	"e-io/read-1m":                       "sequential read",
	"e-io/write-1m":                      "sequential write",
	"e-io/randread-4k-qd1":               "random read, QD1",
	"f-slow-member/idle":                 "fio alone",
	"f-slow-member/during-fstrim":        "fio during fstrim",
	"f-slow-member/fstrim":               "fstrim beside fio",
	"g-rebuild/replace":                  "replace member 0",
	"h-back-to-back/fstrim":              "fragmented ext4",
	"k-reshape/4to6":                     "4 -> 6 members",
	"k-reshape/reads-before":             "reads before the reshape",
	"k-reshape/reads-during":             "reads during the reshape",
	"i-flood/alone":                      "reads alone",
	"i-flood/with-flood":                 "beside the flood",
}

// SystemLabel names an array for a legend: "uraid RAID10 async" for
// "uraid-raid10-async", "md RAID0" for "md-raid0".
func SystemLabel(system string) string {
	parts := strings.Split(system, "-")
	for i, p := range parts {
		if strings.HasPrefix(p, "raid") {
			parts[i] = "RAID" + strings.TrimPrefix(p, "raid")
		}
	}
	return strings.Join(parts, " ")
}

// Charts lays out one chart per scenario and metric, in the order the suite
// measured them. The discard counts of (d) and (i) are left out: they only
// show that the stream ran; so are the lanes' learned decisions (Better
// "none": recordLearned), which are settings, not performance. Scenarios without words in this file are titled by their
// keys, so a new one still draws.
func (s *Suite) Charts() []Chart {
	type id struct{ scenario, metric string }
	var ids []id
	for _, r := range s.Results {
		if c := (id{r.Scenario, r.Metric}); r.Metric != "discards" && r.Better != "none" && !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	out := make([]Chart, 0, len(ids))
	for _, c := range ids {
		out = append(out, s.chart(c.scenario, c.metric))
	}
	return out
}

func (s *Suite) chart(scenario, metric string) Chart {
	var (
		rs                []Result
		caseKeys, systems []string
		unit, better      string
		largest           float64
		runs              int
	)
	for _, r := range s.Results {
		if r.Scenario != scenario || r.Metric != metric {
			continue
		}
		rs = append(rs, r)
		if !slices.Contains(caseKeys, r.Case) {
			caseKeys = append(caseKeys, r.Case)
		}
		if !slices.Contains(systems, r.System) {
			systems = append(systems, r.System)
		}
		unit, better = r.Unit, r.Better
		largest = max(largest, r.Median)
		runs = max(runs, len(r.Values))
	}
	unit, scale := displayUnit(unit, largest)

	c := Chart{Name: scenario + "-" + metric, Systems: systems, Bars: make([][]Bar, len(systems))}
	words, ok := chartWords[scenario+"/"+metric]
	if !ok {
		words.title, words.quantity = scenario+": "+metric, metric
	}
	c.Title = words.title
	c.YLabel = words.quantity
	if unit != "iops" && unit != "" {
		c.YLabel += ", " + unit
	}
	for _, k := range caseKeys {
		w, ok := caseWords[scenario+"/"+k]
		if !ok {
			w = k
		}
		c.Cases = append(c.Cases, w)
	}
	var heights []float64
	for i, sys := range systems {
		c.Bars[i] = make([]Bar, len(caseKeys))
		for j, k := range caseKeys {
			b := Bar{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
			for _, r := range rs {
				if r.System == sys && r.Case == k {
					lo, hi := Spread(r.Values)
					b = Bar{Median: r.Median * scale, Min: lo * scale, Max: hi * scale, Runs: len(r.Values)}
				}
			}
			c.Bars[i][j] = b
			heights = append(heights, b.Median)
		}
	}
	c.Log = LogAxis(heights)
	c.Note = fmt.Sprintf("median of %d runs, whiskers min–max; %s is better", runs, better)
	if runs == 1 {
		c.Note = fmt.Sprintf("one run; %s is better", better)
	}
	if c.Log {
		c.Note += "; log scale"
	}
	return c
}

// HasSpread says whether any bar has repetitions that differ, so whiskers
// to draw.
func (c Chart) HasSpread() bool {
	for _, bars := range c.Bars {
		for _, b := range bars {
			if b.Runs > 1 && b.Max > b.Min {
				return true
			}
		}
	}
	return false
}

// AxisRange is the value axis a chart needs: every whisker inside it, and
// headroom above the highest for the value labels, a fraction top of the
// axis's height. A linear axis starts at 0; a log one at a power of ten at
// least half a decade below the lowest whisker, so that the shortest bar
// still has a height to see and compare.
func (c Chart) AxisRange(top float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, bars := range c.Bars {
		for _, b := range bars {
			if b.Runs == 0 {
				continue
			}
			lo, hi = min(lo, b.Min, b.Median), max(hi, b.Max, b.Median)
		}
	}
	if math.IsInf(hi, -1) {
		return 0, 1
	}
	if !c.Log {
		if hi <= 0 {
			return 0, 1
		}
		return 0, hi / (1 - top)
	}
	lo = math.Pow10(int(math.Floor(math.Log10(lo) - 0.5)))
	return lo, math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))/(1-top))
}

// LogTicks are the marks of a log axis from lo to hi: labelled at 1, 2 and 5
// times each power of ten, unlabelled at the other whole multiples.
func LogTicks(lo, hi float64) (labelled, minor []float64) {
	if !(lo > 0 && hi > lo) {
		return nil, nil
	}
	for p := math.Floor(math.Log10(lo)); p <= math.Ceil(math.Log10(hi)); p++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(int(p))
			// 3·10^-1 is 0.30000000000000004: compare with a margin.
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			if m == 1 || m == 2 || m == 5 {
				labelled = append(labelled, v)
			} else {
				minor = append(minor, v)
			}
		}
	}
	return labelled, minor
}
