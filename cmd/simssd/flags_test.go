package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"4096", 4096, false},
		{"512K", 512 << 10, false},
		{"64m", 64 << 20, false},
		{"1G", 1 << 30, false},
		{"2T", 2 << 40, false},
		{"", 0, true},
		{"G", 0, true},
		{"-1", 0, true},
		{"1.5G", 0, true},
		{"9999999999T", 0, true},
	} {
		got, err := parseSize(c.in)
		if c.err {
			assert.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"--size", "256M", "--trim-latency", "2ms", "--b2b-latency", "100ms",
		"--b2b-window", "10ms", "--exclusive", "--seed", "7", "--max-discard", "1M"}, io.Discard)
	require.NoError(t, err)
	assert.EqualValues(t, 256<<20, c.drive.Size)
	assert.Equal(t, 2*time.Millisecond, c.drive.TrimLatency)
	assert.Equal(t, 100*time.Millisecond, c.drive.BackToBackLatency)
	assert.Equal(t, 10*time.Millisecond, c.drive.BackToBackWindow)
	assert.True(t, c.drive.Exclusive)
	assert.True(t, c.blk.Exclusive, "a SATA-like drive's reads and writes must leave the queue goroutine")
	assert.False(t, c.blk.Rotational, "a SATA SSD is not rotational")
	assert.EqualValues(t, 7, c.drive.Seed)
	assert.EqualValues(t, 1<<20, c.blk.MaxDiscard)

	for _, bad := range [][]string{
		{"--size", "x"},
		{"--max-discard", "1Q"},
		{"--b2b-window", "5ms"},
		{"extra"},
		{"--nope"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseFlagsTrimGarbage(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, c.drive.TrimGarbage, "trimmed blocks read as zeros by default")
	c, err = parseFlags([]string{"--trim-garbage", "--seed", "9"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, c.drive.TrimGarbage)
	assert.EqualValues(t, 9, c.drive.Seed)
}

func TestParseFlagsRotational(t *testing.T) {
	c, err := parseFlags([]string{"--rotational"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, c.blk.Rotational)
	assert.False(t, c.blk.Exclusive, "a rotational drive need not stall I/O behind TRIMs")
}
