package simssd

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newDev(t *testing.T, cfg Config) *Device {
	t.Helper()
	d, err := New(cfg)
	require.NoError(t, err)
	return d
}

func TestDataAndDiscard(t *testing.T) {
	d := newDev(t, Config{Size: 64 << 10, Clock: NewVirtualClock(time.Unix(0, 0))})
	data := bytes.Repeat([]byte{0xab}, 3*BlockSize)
	_, err := d.WriteAt(data, 1000)
	require.NoError(t, err)
	got := make([]byte, len(data))
	_, err = d.ReadAt(got, 1000)
	require.NoError(t, err)
	assert.Equal(t, data, got)

	require.NoError(t, d.Discard(2000, 5000))
	_, err = d.ReadAt(got, 1000)
	require.NoError(t, err)
	want := bytes.Clone(data)
	clear(want[1000:6000])
	assert.Equal(t, want, got, "exactly the discarded bytes read as zeros")

	_, err = d.ReadAt(got, 64<<10-10)
	assert.ErrorIs(t, err, ErrOutOfRange)
	assert.ErrorIs(t, d.Discard(-1, 2), ErrOutOfRange)
}

func TestBackToBackPenalty(t *testing.T) {
	clock := NewVirtualClock(time.Unix(0, 0))
	d := newDev(t, Config{Size: 1 << 20, TrimLatency: time.Millisecond, BackToBackLatency: 100 * time.Millisecond,
		BackToBackWindow: 10 * time.Millisecond, Clock: clock, Record: true})
	require.NoError(t, d.Discard(0, 4096))     // isolated
	require.NoError(t, d.Discard(4096, 4096))  // right after: penalty
	clock.Sleep(10 * time.Millisecond)         // a gap as long as the window
	require.NoError(t, d.Discard(8192, 4096))  // isolated again
	require.NoError(t, d.Discard(12288, 4096)) // penalty
	var lat []time.Duration
	for _, tr := range d.Trims() {
		lat = append(lat, tr.Latency)
	}
	assert.Equal(t, []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Millisecond, 100 * time.Millisecond}, lat)
}

func TestJitterRepeatsUnderSeed(t *testing.T) {
	run := func(seed uint64) []time.Duration {
		d := newDev(t, Config{Size: 1 << 20, TrimLatency: time.Millisecond, Jitter: time.Millisecond, Seed: seed,
			Clock: NewVirtualClock(time.Unix(0, 0)), Record: true})
		for i := range 8 {
			require.NoError(t, d.Discard(int64(i)*4096, 4096))
		}
		var lat []time.Duration
		for _, tr := range d.Trims() {
			lat = append(lat, tr.Latency)
		}
		return lat
	}
	assert.Equal(t, run(1), run(1))
	assert.NotEqual(t, run(1), run(2))
}

func TestExclusiveBlocksReads(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		d := newDev(t, Config{Size: 1 << 20, TrimLatency: 50 * time.Millisecond, Exclusive: exclusive})
		var wg sync.WaitGroup
		wg.Go(func() { assert.NoError(t, d.Discard(0, 4096)) })
		for d.trimCalls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // let the TRIM take the device
		start := time.Now()
		_, err := d.ReadAt(make([]byte, 512), 8192)
		require.NoError(t, err)
		waited := time.Since(start)
		wg.Wait()
		if exclusive {
			assert.Greater(t, waited, 20*time.Millisecond, "a SATA-like read waits for the TRIM")
			assert.Equal(t, int64(1), d.Counters().Stalled)
		} else {
			assert.Less(t, waited, 20*time.Millisecond, "an NVMe-like read does not wait")
		}
	}
}

func TestOneTrimAtATime(t *testing.T) {
	d := newDev(t, Config{Size: 1 << 20, TrimLatency: 5 * time.Millisecond, Record: true})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { assert.NoError(t, d.Discard(int64(i)*4096, 4096)) })
	}
	wg.Wait()
	trims := d.Trims()
	require.Len(t, trims, 4)
	for i := 1; i < len(trims); i++ {
		assert.False(t, trims[i].Start.Before(trims[i-1].Start.Add(trims[i-1].Latency)), "TRIMs overlapped")
	}
	assert.Equal(t, int64(4), d.Counters().MaxConcurrentTrims)
}
