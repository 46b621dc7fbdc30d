package simblk

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil"
	"uraid/simssd"
	"uraid/ublk"
)

const testSize = 1 << 20

func newHarness(t *testing.T, cfg simssd.Config, opts Options) (*ublk.Harness, *simssd.Device) {
	t.Helper()
	cfg.Size = testSize
	dev, err := simssd.New(cfg)
	require.NoError(t, err)
	tg, err := New(dev, opts)
	require.NoError(t, err)
	h, err := ublk.NewHarness(tg, 4, 64<<10)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h, dev
}

func TestParams(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		want ublk.Params
	}{
		{"nvme-like", Options{}, ublk.Params{Size: testSize, LogicalBlockSize: 512, PhysicalBlockSize: 4096,
			IOMin: 4096, DiscardGranularity: 4096}},
		{"sata-like capped", Options{Exclusive: true, MaxDiscard: 1 << 20}, ublk.Params{Size: testSize,
			LogicalBlockSize: 512, PhysicalBlockSize: 4096, IOMin: 4096, DiscardGranularity: 4096,
			MaxDiscardSize: 1 << 20}},
		{"rotational", Options{Rotational: true}, ublk.Params{Size: testSize, LogicalBlockSize: 512,
			PhysicalBlockSize: 4096, IOMin: 4096, DiscardGranularity: 4096, Rotational: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev, err := simssd.New(simssd.Config{Size: testSize, Exclusive: c.opts.Exclusive})
			require.NoError(t, err)
			tg, err := New(dev, c.opts)
			require.NoError(t, err)
			assert.Equal(t, c.want, tg.Params())
			_, err = ublk.New(tg, ublk.Options{Queues: 1})
			assert.NoError(t, err, "the ublk package must accept the parameters")
		})
	}
}

func TestNewRefuses(t *testing.T) {
	dev, err := simssd.New(simssd.Config{Size: testSize + 512})
	require.NoError(t, err)
	_, err = New(dev, Options{})
	assert.ErrorContains(t, err, "not a multiple")
	dev, err = simssd.New(simssd.Config{Size: testSize})
	require.NoError(t, err)
	_, err = New(dev, Options{MaxDiscard: 512})
	assert.ErrorContains(t, err, "below the granularity")
}

// TestWriteReadDiscard drives the target as the kernel would: data written
// reads back, a discard zeroes exactly its range and takes the TRIM latency.
func TestWriteReadDiscard(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		h, dev := newHarness(t, simssd.Config{TrimLatency: 20 * time.Millisecond, Exclusive: exclusive},
			Options{Exclusive: exclusive})
		data := bytes.Repeat([]byte{0xa5}, 3*4096)
		copy(h.Buf(0), data)
		res, err := h.Do(ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 8192, Length: int64(len(data))})
		require.NoError(t, err)
		require.EqualValues(t, len(data), res)

		start := time.Now()
		res, err = h.Do(ublk.HarnessRequest{Op: ublk.OpDiscard, Offset: 12288, Length: 4096})
		require.NoError(t, err)
		require.Zero(t, res)
		assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "exclusive=%v", exclusive)

		res, err = h.Do(ublk.HarnessRequest{Op: ublk.OpRead, Offset: 4096, Length: 5 * 4096})
		require.NoError(t, err)
		require.EqualValues(t, 5*4096, res)
		want := make([]byte, 5*4096)
		copy(want[4096:], data[:4096])
		copy(want[3*4096:], data[2*4096:])
		assert.Equal(t, want, h.Buf(0)[:len(want)], "exclusive=%v", exclusive)

		res, err = h.Do(ublk.HarnessRequest{Op: ublk.OpFlush})
		require.NoError(t, err)
		assert.Zero(t, res)
		res, err = h.Do(ublk.HarnessRequest{Op: ublk.OpWriteZeroes, Offset: 0, Length: 4096})
		require.NoError(t, err)
		assert.Equal(t, -int32(unix.EOPNOTSUPP), res)
		assert.EqualValues(t, 1, dev.Counters().Trims)
	}
}

// TestReadDuringTrim: while a TRIM runs, the queue keeps dispatching: on an
// NVMe-like drive a read is answered before the TRIM ends; on a SATA-like
// one it reaches the drive and waits there for the TRIM.
func TestReadDuringTrim(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		clk := testutil.NewPausingClock()
		h, dev := newHarness(t, simssd.Config{TrimLatency: time.Second, Exclusive: exclusive, Clock: clk},
			Options{Exclusive: exclusive})
		require.NoError(t, h.Start(0, ublk.HarnessRequest{Op: ublk.OpDiscard, Offset: 0, Length: 4096}))
		<-clk.Slept // the TRIM runs, and stays running until woken
		require.NoError(t, h.Start(1, ublk.HarnessRequest{Op: ublk.OpRead, Offset: 65536, Length: 4096}))
		if exclusive {
			testutil.WaitFor(t, "the read to reach the drive", func() bool { return dev.Counters().Stalled != 0 })
			clk.Wake <- struct{}{}
		}
		tag, res, err := h.Wait()
		require.NoError(t, err)
		if !exclusive {
			assert.EqualValues(t, 1, tag, "the read finishes while the TRIM runs")
			assert.EqualValues(t, 4096, res)
			assert.Zero(t, dev.Counters().Trims)
			clk.Wake <- struct{}{}
		}
		tag2, res2, err := h.Wait()
		require.NoError(t, err)
		results := map[uint16]int32{tag: res, tag2: res2}
		assert.Equal(t, map[uint16]int32{0: 0, 1: 4096}, results, "exclusive=%v", exclusive)
		assert.EqualValues(t, 1, dev.Counters().Trims)
	}
}
