package bench

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// A dm device's stat after 8 sectors read, 2048 written and 4096 discarded.
	s, err := parseStat("       1        0        8        0       16        0     2048       12        0       20       12        2        0     4096        0        0        0\n")
	require.NoError(t, err)
	assert.Equal(t, blockStat{read: 8 << 9, written: 2048 << 9, discarded: 4096 << 9, reads: 1, writes: 16}, s)
	assert.Equal(t, blockStat{written: 1024 << 9, writes: 6}, s.sub(blockStat{read: 8 << 9, written: 1024 << 9, discarded: 4096 << 9, reads: 1, writes: 10}))

	_, err = parseStat("1 0 8 0 16 0 2048 12 0 20 12")
	assert.ErrorContains(t, err, "11 fields")
	_, err = parseStat("1 0 8 0 16 0 x 12 0 20 12 2 0 4096")
	assert.ErrorContains(t, err, "field 7")
}

// Every 4 KiB block of every file differs from every other, so that a block
// rebuilt into the wrong place cannot read back as the right one.
func TestFileDataBlocksDiffer(t *testing.T) {
	seen := map[string]bool{}
	for i := range 3 {
		b := fileData(make([]byte, rebuildFile), i)
		again := fileData(make([]byte, rebuildFile), i)
		require.True(t, bytes.Equal(b, again), "file %d is not the same twice", i)
		for off := 0; off < len(b); off += 4096 {
			k := string(b[off : off+4096])
			require.False(t, seen[k], "file %d block %d repeats another", i, off/4096)
			seen[k] = true
		}
	}
}

func TestRebuildTargets(t *testing.T) {
	s := suite(
		Result{Scenario: "g-rebuild", Case: "replace", Metric: "wall", System: "md-raid10", Values: []float64{20000, 22000}},
		Result{Scenario: "g-rebuild", Case: "replace", Metric: "wall", System: "uraid-raid10-sync", Values: []float64{4000, 6600}},
		Result{Scenario: "g-rebuild", Case: "replace", Metric: "written", System: "md-raid10", Values: []float64{254, 254}},
		Result{Scenario: "g-rebuild", Case: "replace", Metric: "written", System: "uraid-raid10-sync", Values: []float64{63.5, 76.2}},
	)
	byGoal := map[string]Target{}
	for _, tg := range s.Targets() {
		if tg.Scenario == "g" {
			byGoal[tg.Goal] = tg
		}
	}
	wall := byGoal["member replace wall <= 0.3x md"]
	// Paired by repetition: 0.2 and 0.3.
	assert.InDelta(t, 0.25, wall.Value, 1e-9)
	assert.InDelta(t, 0.2, wall.Min, 1e-9)
	assert.InDelta(t, 0.3, wall.Max, 1e-9)
	assert.True(t, wall.Met())
	written := byGoal["bytes written to the new member <= 0.3x md's (a whole member)"]
	assert.InDelta(t, 0.275, written.Value, 1e-9)
	assert.True(t, written.Met())
	for _, tg := range suite().Targets() {
		if tg.Scenario == "g" {
			assert.True(t, tg.Missing && !tg.Met(), "%s: a target without figures is not met", tg.Goal)
		}
	}
}
