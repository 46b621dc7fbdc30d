package ublkbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTaskStat(t *testing.T) {
	tests := []struct {
		line  string
		name  string
		ticks uint64
	}{
		{"812 (ublkbench) S 1 812 0 0 -1 4194560 300 0 0 0 17 23 0 0 20 0 9 0 100 1 1", "ublkbench", 40},
		{"830 (iou-wrk-812) S 1 812 0 0 -1 4194560 0 0 0 0 5 400 0 0 20 0 9 0 100 1 1", "iou-wrk", 405},
		// Names may hold spaces and parentheses; fields count from the last ')'.
		{"9 (a) b-x) R 1 9 0 0 -1 0 0 0 0 0 1 2 0 0", "a) b-x", 3},
	}
	for _, tt := range tests {
		name, ticks, err := parseTaskStat(tt.line)
		require.NoError(t, err, tt.line)
		assert.Equal(t, tt.name, name)
		assert.Equal(t, tt.ticks, ticks)
	}
	for _, bad := range []string{"", "12 noname S 1", "1 (x) S 1 2", "1 (x) S 1 1 0 0 -1 0 0 0 0 0 u s"} {
		_, _, err := parseTaskStat(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestThreadCPUSince(t *testing.T) {
	before := ThreadCPU{"ublkbench": 10, "iou-wrk": 0, "gone": 5}
	after := ThreadCPU{"ublkbench": 30, "iou-wrk": 400, "idle": 7, "new": 20}
	assert.Equal(t, []string{"iou-wrk 400", "new 20", "ublkbench 20", "idle 7"}, after.Since(before))
}

func TestReadThreadCPUSeesThisProcess(t *testing.T) {
	cpu, err := readThreadCPU()
	require.NoError(t, err)
	assert.NotEmpty(t, cpu)
}
