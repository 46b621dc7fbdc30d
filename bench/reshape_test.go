package bench

import (
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
)

// growJSON is what uraid grow --add --json prints of a running raid10's reshape: the daemon's
// AppendResult, marshalled, so that a field renamed there fails here.
func growJSON(t *testing.T, res daemon.AppendResult) string {
	b, err := json.MarshalIndent(res, "", "  ")
	require.NoError(t, err)
	return string(b) + "\n"
}

func TestParseGrowOnline(t *testing.T) {
	good := daemon.AppendResult{Schema: 1, OldMembers: 4, NewMembers: 6, Added: []string{"/dev/dm-4", "/dev/dm-5"},
		OldSize: 180355072, NewSize: 270532608, DataSize: 90177536, Device: "/dev/ublkb0", Reshape: true}
	rep, err := parseGrowOnline(growJSON(t, good), 4, 6)
	require.NoError(t, err)
	assert.Equal(t, reshapeReport{Reshape: true, OldMembers: 4, NewMembers: 6, OldSize: 180355072, NewSize: 270532608,
		Device: "/dev/ublkb0"}, rep)

	for _, c := range []struct {
		name string
		edit func(*daemon.AppendResult)
		want string
	}{
		{"an append", func(r *daemon.AppendResult) { r.Reshape = false }, "no reshape started"},
		{"other counts", func(r *daemon.AppendResult) { r.NewMembers = 5 }, "reshaping 4 to 5 members, want 4 to 6"},
		{"not growing", func(r *daemon.AppendResult) { r.NewSize = r.OldSize }, "not to grow"},
		{"no device", func(r *daemon.AppendResult) { r.Device = "" }, "want the device"},
	} {
		r := good
		c.edit(&r)
		_, err := parseGrowOnline(growJSON(t, r), 4, 6)
		assert.ErrorContains(t, err, c.want, c.name)
	}
	_, err = parseGrowOnline("uraid: array bench: reshape to 6 members (was 4) started", 4, 6)
	assert.ErrorContains(t, err, "uraid grow --json")
}

// reshapedRecord logs what the array logs at a reshape's end (array/reshape_online.go), through
// slog's text handler as the daemon does by default.
func reshapedRecord(steps int, read, write, discard int64) string {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, nil)).With("array", "bench")
	log.Info("reshape step", "cursor", 64<<20)
	log.Info("reshaped", "members", 6, "size", 270532608, "steps", steps,
		"read_bytes", read, "write_bytes", write, "discard_bytes", discard)
	log.Info("event", "event", "array_grown")
	return b.String()
}

func TestParseReshapedLog(t *testing.T) {
	var rep reshapeReport
	require.NoError(t, parseReshapedLog(reshapedRecord(4, 42991616, 85983232, 315621376), &rep))
	assert.Equal(t, reshapeReport{Steps: 4, ReadBytes: 41 << 20, WriteBytes: 82 << 20, DiscardBytes: 301 << 20}, rep)

	// Two reshapes in one log: the last is this one's.
	require.NoError(t, parseReshapedLog(reshapedRecord(1, 1, 2, 3)+reshapedRecord(2, 4, 5, 6), &rep))
	assert.Equal(t, reshapeReport{Steps: 2, ReadBytes: 4, WriteBytes: 5, DiscardBytes: 6}, rep)

	err := parseReshapedLog(`{"time":"2026-12-05T15:00:00Z","level":"INFO","msg":"reshaped","steps":4}`+"\n", &rep)
	assert.ErrorContains(t, err, "no \"reshaped\" record", "a JSON log is not read")
	err = parseReshapedLog(strings.Replace(reshapedRecord(4, 1, 2, 3), "write_bytes=2", "write_bytes=two", 1), &rep)
	assert.ErrorContains(t, err, `write_bytes="two"`)
	err = parseReshapedLog(strings.Replace(reshapedRecord(4, 1, 2, 3), "msg=reshaped", "msg=reshape_paused", 1), &rep)
	assert.ErrorContains(t, err, "did not end")
}

// The user's reads during the reshape reach the members too, once each; its writes once a copy.
func TestReshapeOnly(t *testing.T) {
	members := blockStat{read: 100 << 20, written: 200 << 20, discarded: 300 << 20, reads: 1000, writes: 500}
	user := blockStat{read: 30 << 20, written: 1 << 20, reads: 700, writes: 10}
	assert.Equal(t, blockStat{read: 70 << 20, written: 198 << 20, discarded: 300 << 20, reads: 300, writes: 480}, reshapeOnly(members, user))
}

func TestReadFigures(t *testing.T) {
	// md over RAM disks completes a read within io_uring_enter: its completion latency says
	// nothing, its total latency is the read's time.
	rd := fioSide{IOPS: 2500, IOs: 12500, Clat: fioLat{Percentile: map[string]float64{"99.000000": 1000}},
		Lat: fioLat{Percentile: map[string]float64{"99.000000": 812000}}}
	fs := readFigures(rd)
	assert.Equal(t, []figure{{"read_p99", "us", "lower", 812}, {"read_iops", "iops", "higher", 2500}, {"reads", "reads", "none", 12500}}, fs)
}

// fioUntil fails, rather than waits, when fio ends before it is stopped.
func TestFioUntilEndsEarly(t *testing.T) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("no fio")
	}
	_, err := fioUntil(make(chan struct{}), []string{"ioengine=psync"}, job{"bad", []string{"rw=sideways"}})
	assert.ErrorContains(t, err, "ended before it was stopped")
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
	own := reshapeReport{Grow: 600 * time.Millisecond, Wait: 5 * time.Second, LiveBytes: 40 << 20,
		ReadBytes: 44 << 20, WriteBytes: 84 << 20, DiscardBytes: 300 << 20}
	u := byName(reshapeFigures(time.Second, blockStat{read: 44 << 20, written: 84 << 20, discarded: 300 << 20}, 32<<20, &own))
	assert.Equal(t, 128.0, u["moved"].v)
	assert.Equal(t, 300.0, u["discarded"].v)
	assert.Equal(t, 40.0, u["live"].v)
	assert.Equal(t, 600.0, u["grow_wall"].v)
	assert.Equal(t, 5000.0, u["wait_wall"].v)
	assert.Equal(t, 0.0, u["assemble_wall"].v, "the device grew online")
	assert.InDelta(t, 3.2, u["over_live"].v, 1e-9)               // 128 / 40
	assert.InDelta(t, 128.0/120, u["over_least"].v, 1e-9)        // 128 / (3 x 40)
	assert.InDelta(t, 128.0/96, u["over_fs_least"].v, 1e-9)      // 128 / (3 x 32)
	assert.Equal(t, "none", u["over_least"].better, "not drawn") // a target reads it

	// No live count: no ratio to it, rather than an infinite one.
	own.LiveBytes = 0
	u = byName(reshapeFigures(time.Second, blockStat{read: 44 << 20, written: 84 << 20}, 32<<20, &own))
	assert.NotContains(t, u, "over_live")
	assert.NotContains(t, u, "over_least")
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
	p99 := func(sys, c string, v ...float64) Result {
		return Result{Scenario: "k-reshape", Case: c, Metric: "read_p99", System: sys, Values: v}
	}
	s := suite(
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "moved", System: "md-raid10", Values: []float64{800, 1000}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "moved", System: "uraid-raid10-sync", Values: []float64{160, 200}},
		Result{Scenario: "k-reshape", Case: "4to6", Metric: "over_least", System: "uraid-raid10-sync", Values: []float64{1.05, 1.4}},
		p99("uraid-raid10-sync", "reads-before", 100, 120),
		p99("uraid-raid10-sync", "reads-during", 160, 300),
		p99("md-raid10", "reads-before", 100, 100),
		p99("md-raid10", "reads-during", 500, 900),
	)
	type key struct{ goal, system string }
	byGoal := map[key]Target{}
	for _, tg := range s.Targets() {
		if tg.Scenario == "k" {
			byGoal[key{tg.Goal, tg.System}] = tg
		}
	}
	require.Len(t, byGoal, 4)
	vsMD := byGoal[key{"reshape: bytes read and written <= 0.3x md's at 20% full", "uraid-raid10-sync"}]
	assert.InDelta(t, 0.2, vsMD.Value, 1e-9) // 0.2 in both repetitions
	assert.True(t, vsMD.Met())
	least := byGoal[key{"reshape: bytes read and written <= 1.3x the least (its live bytes read once, written once per copy)", "uraid-raid10-sync"}]
	assert.InDelta(t, 1.225, least.Value, 1e-9) // the median of 1.05 and 1.4
	assert.InDelta(t, 1.05, least.Min, 1e-9)
	assert.InDelta(t, 1.4, least.Max, 1e-9)
	assert.True(t, least.Met())
	const reads = "read p99 during reshape <= 2x without"
	u := byGoal[key{reads, "uraid-raid10-sync"}]
	assert.InDelta(t, 2.05, u.Value, 1e-9) // paired by repetition: 1.6 and 2.5
	assert.False(t, u.Met(), "2.05x is over 2x")
	md := byGoal[key{reads, "md-raid10"}]
	assert.InDelta(t, 7.0, md.Value, 1e-9)
	assert.False(t, md.Met())

	s.Results[2].Values = []float64{1.35, 1.4}
	s.Results[2].Median = median(s.Results[2].Values)
	s.Results[4].Values = []float64{150, 200}
	s.Results[4].Median = median(s.Results[4].Values)
	for _, tg := range s.Targets() {
		if tg.Scenario == "k" && tg.Goal == least.Goal {
			assert.False(t, tg.Met(), "1.375x the least is over 1.3x")
		}
		if tg.Scenario == "k" && tg.Goal == reads && tg.System == "uraid-raid10-sync" {
			assert.True(t, tg.Met(), "1.5 and 1.67 are within 2x")
		}
	}
	for _, tg := range suite().Targets() {
		if tg.Scenario == "k" {
			assert.True(t, tg.Missing && !tg.Met(), "%s: a target without figures is not met", tg.Goal)
		}
	}
}
