package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// Extract finds the results JSON between the begin and end markers in a
// console log that also carries progress lines.
func Extract(log []byte, begin, end string) (*Suite, error) {
	// The runner prints everything so far after every scenario: the last
	// complete block is the most.
	var rest []byte
	j := -1
	for tail := log; ; {
		i := bytes.LastIndex(tail, []byte(begin))
		if i < 0 {
			break
		}
		rest = tail[i+len(begin):]
		if j = bytes.Index(rest, []byte(end)); j >= 0 {
			break
		}
		tail = tail[:i]
	}
	switch {
	case rest == nil:
		return nil, errors.New("no results in the log: no scenario finished (see the progress lines)")
	case j < 0:
		return nil, errors.New("results in the log are cut short: the guest stopped while printing them")
	}
	var s Suite
	// A serial console turns \n into \r\n; JSON does not mind.
	if err := json.Unmarshal(rest[:j], &s); err != nil {
		return nil, fmt.Errorf("results JSON: %w", err)
	}
	return &s, nil
}

// Merge replaces the results of every scenario that later measured with
// later's, keeping the rest: a scenario run again on its own updates a
// whole suite. Settings the suite lacks (a scenario new since it ran) come
// from later; those it has are kept.
func (s *Suite) Merge(later *Suite) {
	for k, v := range later.Settings {
		if _, ok := s.Settings[k]; !ok {
			if s.Settings == nil {
				s.Settings = map[string]string{}
			}
			s.Settings[k] = v
		}
	}
	redone := map[string]bool{}
	for _, r := range later.Results {
		redone[r.Scenario] = true
	}
	// A scenario measured on another kernel says so: the machine is the
	// first run's.
	if k := later.Machine["kernel"]; k != "" && k != s.Machine["kernel"] {
		if s.Settings == nil {
			s.Settings = map[string]string{}
		}
		for sc := range redone {
			s.Settings["kernel of "+sc] = k
		}
	}
	kept := s.Results[:0:0]
	for _, r := range s.Results {
		if !redone[r.Scenario] {
			kept = append(kept, r)
		}
	}
	s.Results = append(kept, later.Results...)
}

// Target is one goal of the suite checked against a run.
type Target struct {
	Scenario string
	Goal     string
	System   string
	Value    float64 // the ratio compared with Limit
	Min, Max float64 // its spread over the repetitions (see Ratio)
	Limit    float64
	AtMost   bool // Value must be <= Limit, else >= Limit
	Missing  bool // the run lacks a figure the target needs
}

// Met says whether the target holds.
func (t Target) Met() bool {
	if t.Missing {
		return false
	}
	if t.AtMost {
		return t.Value <= t.Limit
	}
	return t.Value >= t.Limit
}

// Targets checks the suite's goals: each is a ratio of medians measured in
// the same run.
func (s *Suite) Targets() []Target {
	var out []Target
	ratio := func(scen, goal, sysA, keyA, sysB, keyB string, limit float64, atMost bool) {
		a, okA := s.Find(sysA, keyA)
		b, okB := s.Find(sysB, keyB)
		t := Target{Scenario: scen, Goal: goal, System: sysA, Limit: limit, AtMost: atMost}
		if okA && okB {
			t.Value, t.Min, t.Max, _, okA = ratioOf(a, b)
		}
		t.Missing = !okA || !okB
		out = append(out, t)
	}
	// single checks one system's own figure, not a ratio, against an upper limit.
	single := func(scen, goal, sys, key string, limit float64) {
		t := Target{Scenario: scen, Goal: goal, System: sys, Limit: limit, AtMost: true}
		if r, ok := s.Find(sys, key); ok && len(r.Values) > 0 {
			t.Value, t.Min, t.Max = r.Median, slices.Min(r.Values), slices.Max(r.Values)
		} else {
			t.Missing = true
		}
		out = append(out, t)
	}
	for _, l := range []string{"0", "10"} {
		md := "md-raid" + l
		for _, m := range []string{"sync", "async"} {
			u := "uraid-raid" + l + "-" + m
			ratio("a", "full-device discard wall <= md", u, "a-blkdiscard/full/wall", md, "a-blkdiscard/full/wall", 1, true)
		}
		u := "uraid-raid" + l + "-async"
		ratio("b", "churn -o discard >= 0.95x own nodiscard", u, "b-churn/discard/files_per_s", u, "b-churn/nodiscard/files_per_s", 0.95, false)
		ratio("b", "churn -o discard not behind md", u, "b-churn/discard/files_per_s", md, "b-churn/discard/files_per_s", 1, false)
		for _, m := range []string{"sync", "async"} {
			u := "uraid-raid" + l + "-" + m
			ratio("c", "fstrim wall <= md", u, "c-fstrim/fragmented/wall", md, "c-fstrim/fragmented/wall", 1, true)
			ratio("d", "read p99 with discards <= 1.5x without", u, "d-read-under-discard/with-discards/read_p99",
				u, "d-read-under-discard/alone/read_p99", 1.5, true)
		}
		us := "uraid-raid" + l + "-sync"
		ratio("e", "4K randread IOPS >= 0.8x md", us, "e-io/randread-4k-qd32/iops", md, "e-io/randread-4k-qd32/iops", 0.8, false)
		ratio("e", "4K randwrite IOPS >= 0.8x md", us, "e-io/randwrite-4k-qd32/iops", md, "e-io/randwrite-4k-qd32/iops", 0.8, false)
		ratio("e", "1M read MiB/s >= 0.9x md", us, "e-io/read-1m/throughput", md, "e-io/read-1m/throughput", 0.9, false)
		ratio("e", "1M write MiB/s >= 0.9x md", us, "e-io/write-1m/throughput", md, "e-io/write-1m/throughput", 0.9, false)
		ratio("e", "4K QD1 read latency p50 <= 2x md", us, "e-io/randread-4k-qd1/lat_p50", md, "e-io/randread-4k-qd1/lat_p50", 2, true)
	}
	ratio("f", "fstrim wall <= 0.25x md", "uraid-raid10-async", "f-slow-member/fstrim/wall", "md-raid10", "f-slow-member/fstrim/wall", 0.25, true)
	ratio("f", "read p99 during fstrim <= 0.5x md", "uraid-raid10-async", "f-slow-member/during-fstrim/read_p99",
		"md-raid10", "f-slow-member/during-fstrim/read_p99", 0.5, true)
	ratio("g", "member replace wall <= 0.3x md", "uraid-raid10-sync", "g-rebuild/replace/wall", "md-raid10", "g-rebuild/replace/wall", 0.3, true)
	ratio("g", "bytes written to the new member <= 0.3x md's (a whole member)", "uraid-raid10-sync", "g-rebuild/replace/written",
		"md-raid10", "g-rebuild/replace/written", 0.3, true)
	// Learned against hand-set (issue 24): uraid with no TRIM flag must come
	// within 1.2x of uraid told what the drives are.
	learned, handSet := "uraid-raid10-async-learned", "uraid-raid10-async"
	ratio("f", "learned: read p99 during fstrim <= 1.2x hand-set", learned, "f-slow-member/during-fstrim/read_p99",
		handSet, "f-slow-member/during-fstrim/read_p99", 1.2, true)
	ratio("f", "learned: fstrim wall <= 1.2x hand-set", learned, "f-slow-member/fstrim/wall", handSet, "f-slow-member/fstrim/wall", 1.2, true)
	// The second fstrim of each array: what the lane learned, not how fast
	// (the first, "fstrim", pays for the learning and is reported beside).
	const settled = "h-back-to-back/fstrim-warm/settled"
	ratio("h", "learned: second fstrim to the last TRIM <= 1.2x the best hand-set --trim-gap ("+s.bestGap(settled)+")",
		learned, settled, s.bestGap(settled), settled, 1.2, true)
	for _, u := range []string{learned, handSet} {
		ratio("i", "read p99 beside the flood <= 3x alone", u, "i-flood/with-flood/read_p99", u, "i-flood/alone/read_p99", 3, true)
		ratio("i", "reads beside the flood >= 0.5x alone", u, "i-flood/with-flood/reads", u, "i-flood/alone/reads", 0.5, false)
	}
	// (k): the reshape's bytes against md's, which moves every byte, and against the least a
	// reshape can move (docs/design.md, "Reshape": each live byte read once, written once per copy).
	const moved = "k-reshape/4to6/moved"
	ratio("k", "reshape: bytes read and written <= 0.3x md's at 20% full", "uraid-raid10-sync", moved, "md-raid10", moved, 0.3, true)
	single("k", "reshape: bytes read and written <= 1.3x the least (its live bytes read once, written once per copy)",
		"uraid-raid10-sync", "k-reshape/4to6/over_least", 1.3)
	// (k), issue 23: reads go on while the array reshapes online. md's figure is the same
	// ratio, shown beside uraid's for comparison.
	for _, sys := range []string{"uraid-raid10-sync", "md-raid10"} {
		ratio("k", "read p99 during reshape <= 2x without", sys, "k-reshape/reads-during/read_p99", sys, "k-reshape/reads-before/read_p99", 2, true)
	}
	// (j): the server's cost per request against the reference server's and in absolute counts.
	for _, l := range []string{"0", "10"} {
		u := "uraid-raid" + l
		for _, c := range []string{"qd1", "qd32"} {
			key := "j-cost/randread-4k-" + c
			ratio("j", "server CPU per 4K read, "+strings.ToUpper(c)+", <= ublksrv's", u, key+"/cpu_per_req", PeerSystem, key+"/cpu_per_req", 1, true)
		}
		single("j", "context switches per 4K read, QD1", u, "j-cost/randread-4k-qd1/switches_per_req", 1.1)
		single("j", "context switches per 4K read, QD32", u, "j-cost/randread-4k-qd32/switches_per_req", 0.05)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Scenario < out[j].Scenario })
	return out
}

// bestGap names the hand-set --trim-gap system of least median for key
// (lower is better), "" when none measured it.
func (s *Suite) bestGap(key string) string {
	best, least := "", 0.0
	for _, r := range s.Results {
		if strings.HasPrefix(r.System, "uraid-raid10-async-gap") && r.Key() == key && (best == "" || r.Median < least) {
			best, least = r.System, r.Median
		}
	}
	return best
}

// PeerSystem is the reference ublk server in scenario (j)'s results.
const PeerSystem = "ublksrv-loop"

// WriteCost prints scenario (j)'s counts as Markdown tables, one per job: each system's median
// per request with its spread over the repetitions.
func (s *Suite) WriteCost(w io.Writer) {
	var cases, systems, metrics []string
	seen := map[string]bool{}
	addOnce := func(list *[]string, v string) {
		if !seen[v] {
			seen[v] = true
			*list = append(*list, v)
		}
	}
	for _, r := range s.Results {
		if r.Scenario == "j-cost" {
			addOnce(&cases, "c|"+r.Case)
			addOnce(&systems, "s|"+r.System)
			addOnce(&metrics, "m|"+r.Metric)
		}
	}
	if len(cases) == 0 {
		return
	}
	for _, c := range cases {
		c = c[2:]
		fmt.Fprintf(w, "%s, per request (median, min–max):\n\n| system |", c)
		for _, m := range metrics {
			fmt.Fprintf(w, " %s |", m[2:])
		}
		fmt.Fprint(w, "\n|---|")
		for range metrics {
			fmt.Fprint(w, "---:|")
		}
		fmt.Fprintln(w)
		for _, sys := range systems {
			sys = sys[2:]
			fmt.Fprintf(w, "| %s |", sys)
			for _, m := range metrics {
				r, ok := s.Find(sys, "j-cost/"+c+"/"+m[2:])
				if !ok || len(r.Values) == 0 {
					fmt.Fprint(w, " – |")
					continue
				}
				fmt.Fprintf(w, " %s |", spreadVal(r.Median, slices.Min(r.Values), slices.Max(r.Values)))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

// spreadVal prints a figure with its range: "1.20 (1.18–1.31)".
func spreadVal(v, lo, hi float64) string {
	f := func(x float64) string {
		switch a := math.Abs(x); {
		case a >= 100:
			return fmt.Sprintf("%.0f", x)
		case a >= 10:
			return fmt.Sprintf("%.1f", x)
		case a >= 0.1 || a == 0:
			return fmt.Sprintf("%.2f", x)
		default:
			return fmt.Sprintf("%.3f", x)
		}
	}
	if lo == hi {
		return f(v)
	}
	return fmt.Sprintf("%s (%s–%s)", f(v), f(lo), f(hi))
}

// WriteTargets prints the targets as a Markdown table.
func (s *Suite) WriteTargets(w io.Writer) {
	fmt.Fprintln(w, "| | target | array | ratio | limit | met |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---|")
	for _, t := range s.Targets() {
		v, met := spread(t.Value, t.Min, t.Max), map[bool]string{true: "yes", false: "**no**"}[t.Met()]
		if t.Missing {
			v, met = "n/a", "not measured"
		}
		op := ">="
		if t.AtMost {
			op = "<="
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s %.2f | %s |\n", t.Scenario, t.Goal, t.System, v, op, t.Limit, met)
	}
}

// WriteRatios prints every uraid/md ratio as a Markdown table, with the
// reference run's ratio beside it when ref is not nil.
func (s *Suite) WriteRatios(w io.Writer, ref *Suite) {
	refRatio := map[string]float64{}
	if ref != nil {
		for _, r := range ref.Ratios() {
			refRatio[r.URaid+"|"+r.Key] = r.Ratio
		}
	}
	rs := s.Ratios()
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Key < rs[j].Key })
	head := "| measurement | uraid | uraid median | md median | uraid/md |"
	rule := "|---|---|---:|---:|---:|"
	if ref != nil {
		head += " committed uraid/md |"
		rule += "---:|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, r := range rs {
		better := "↓"
		if r.Better == "higher" {
			better = "↑"
		}
		line := fmt.Sprintf("| %s %s | %s | %s | %s | %s |", r.Key, better, strings.TrimPrefix(r.URaid, "uraid-"),
			fmtVal(r.URaidVal, r.Unit), fmtVal(r.MDVal, r.Unit), spread(r.Ratio, r.Min, r.Max))
		if ref != nil {
			if v, ok := refRatio[r.URaid+"|"+r.Key]; ok {
				line += fmt.Sprintf(" %.2f |", v)
			} else {
				line += " – |"
			}
		}
		fmt.Fprintln(w, line)
	}
}

// spread prints a ratio with its range over the repetitions, when it has
// one: "0.84 (0.79–0.91)".
func spread(v, lo, hi float64) string {
	if lo == hi {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", v, lo, hi)
}

func fmtVal(v float64, unit string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}
