package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What uraid grow --add --json printed for a 4 -> 6 reshape in the guest (schema and all).
const growJSON = `{
  "schema": 1,
  "old_members": 4,
  "new_members": 6,
  "old_size": 180355072,
  "new_size": 270532608,
  "resumed": false,
  "steps": 7,
  "live_bytes": 41943040,
  "read_bytes": 42991616,
  "write_bytes": 85983232,
  "discard_bytes": 315621376
}
`

func TestParseReshapeReport(t *testing.T) {
	rep, err := parseReshapeReport(growJSON, 4, 6)
	require.NoError(t, err)
	assert.Equal(t, reshapeReport{OldMembers: 4, NewMembers: 6, OldSize: 180355072, NewSize: 270532608, Steps: 7,
		LiveBytes: 40 << 20, ReadBytes: 41 << 20, WriteBytes: 82 << 20, DiscardBytes: 301 << 20}, rep)

	for _, c := range []struct{ name, out, want string }{
		{"not JSON", "uraid: array bench: reshaped from 4 to 6 members", "uraid grow --json"},
		{"other counts", `{"old_members": 4, "new_members": 5, "old_size": 1, "new_size": 2, "live_bytes": 1}`, "reshaped 4 to 5 members, want 4 to 6"},
		{"resumed", `{"old_members": 4, "new_members": 6, "old_size": 1, "new_size": 2, "live_bytes": 1, "resumed": true}`, "resumed"},
		{"not grown", `{"old_members": 4, "new_members": 6, "old_size": 2, "new_size": 2, "live_bytes": 1}`, "did not grow"},
		{"nothing live", `{"old_members": 4, "new_members": 6, "old_size": 1, "new_size": 2}`, "out of range"},
	} {
		_, err := parseReshapeReport(c.out, 4, 6)
		assert.ErrorContains(t, err, c.want, c.name)
	}
}

func TestSumDelta(t *testing.T) {
	before := []blockStat{{read: 10, written: 20, discarded: 30, reads: 1, writes: 2}, {read: 100, written: 0}}
	after := []blockStat{{read: 15, written: 40, discarded: 30, reads: 2, writes: 5}, {read: 300, written: 7, discarded: 9, reads: 4, writes: 1}}
	d, err := sumDelta(before, after)
	require.NoError(t, err)
	assert.Equal(t, blockStat{read: 205, written: 27, discarded: 9, reads: 5, writes: 4}, d)
	_, err = sumDelta(before, after[:1])
	assert.ErrorContains(t, err, "2 devices before, 1 after")
}

func TestReshapeFigures(t *testing.T) {
	byName := func(fs []figure) map[string]figure {
		m := map[string]figure{}
		for _, f := range fs {
			require.NotContains(t, m, f.metric, "metric named twice")
			m[f.metric] = f
		}
		return m
	}
	// md: 96 MiB read, 192 MiB written, the filesystem using 32 MiB.
	md := byName(reshapeFigures(1500*time.Millisecond, blockStat{read: 96 << 20, written: 192 << 20}, 32<<20, nil))
	assert.Equal(t, 1500.0, md["wall"].v)
	assert.Equal(t, 288.0, md["moved"].v)
	assert.Equal(t, "lower", md["moved"].better)
	assert.InDelta(t, 3.0, md["over_fs_least"].v, 1e-9) // 288 / (3 x 32)
	assert.NotContains(t, md, "over_least", "md has no live count of its own")

	// uraid: 40 MiB live, read once and written twice, plus 4 MiB of backup each way.
	own := reshapeReport{Grow: 600 * time.Millisecond, LiveBytes: 40 << 20, ReadBytes: 44 << 20, WriteBytes: 84 << 20, DiscardBytes: 300 << 20}
	u := byName(reshapeFigures(time.Second, blockStat{read: 44 << 20, written: 84 << 20, discarded: 300 << 20}, 32<<20, &own))
	assert.Equal(t, 128.0, u["moved"].v)
	assert.Equal(t, 300.0, u["discarded"].v)
	assert.Equal(t, 40.0, u["live"].v)
	assert.Equal(t, 600.0, u["grow_wall"].v)
	assert.InDelta(t, 3.2, u["over_live"].v, 1e-9)               // 128 / 40
	assert.InDelta(t, 128.0/120, u["over_least"].v, 1e-9)        // 128 / (3 x 40)
	assert.InDelta(t, 128.0/96, u["over_fs_least"].v, 1e-9)      // 128 / (3 x 32)
	assert.Equal(t, "none", u["over_least"].better, "not drawn") // a target reads it
}

// The figures that describe what a reshape ran on, rather than its cost, get no uraid/md ratio.
func TestRatiosLeaveOutNone(t *testing.T) {
	s := suite(
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "moved", System: "md-raid10", Better: "lower", Values: []float64{1000}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "moved", System: "uraid-raid10-sync", Better: "lower", Values: []float64{200}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "fs_used", System: "md-raid10", Better: "none", Values: []float64{96}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "fs_used", System: "uraid-raid10-sync", Better: "none", Values: []float64{97}},
	)
	rs := s.Ratios()
	require.Len(t, rs, 1)
	assert.Equal(t, "k-reshape/4to6/moved", rs[0].Key)
	assert.InDelta(t, 0.2, rs[0].Ratio, 1e-9)
}

func TestReshapeTargets(t *testing.T) {
	s := suite(
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "moved", System: "md-raid10", Values: []float64{800, 1000}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "moved", System: "uraid-raid10-sync", Values: []float64{160, 200}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "over_least", System: "uraid-raid10-sync", Values: []float64{1.05, 1.4}},
	)
	byGoal := map[string]Target{}
	for _, tg := range s.Targets() {
		if tg.Scenario == "k" {
			byGoal[tg.Goal] = tg
		}
	}
	require.Len(t, byGoal, 2)
	vsMD := byGoal["reshape: bytes read and written <= 0.3x md's at 20% full"]
	assert.InDelta(t, 0.2, vsMD.Value, 1e-9) // 0.2 in both repetitions
	assert.True(t, vsMD.Met())
	least := byGoal["reshape: bytes read and written <= 1.3x the least (its live bytes read once, written once per copy)"]
	assert.InDelta(t, 1.225, least.Value, 1e-9) // the median of 1.05 and 1.4
	assert.InDelta(t, 1.05, least.Min, 1e-9)
	assert.InDelta(t, 1.4, least.Max, 1e-9)
	assert.True(t, least.Met())

	s.Results[2].Values = []float64{1.35, 1.4}
	s.Results[2].Median = median(s.Results[2].Values)
	for _, tg := range s.Targets() {
		if tg.Scenario == "k" && tg.Goal == least.Goal {
			assert.False(t, tg.Met(), "1.375x the least is over 1.3x")
		}
	}
	for _, tg := range suite().Targets() {
		if tg.Scenario == "k" {
			assert.True(t, tg.Missing && !tg.Met(), "%s: a target without figures is not met", tg.Goal)
		}
	}
}
