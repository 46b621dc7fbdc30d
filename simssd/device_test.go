package simssd

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/clock"
	"uraid/internal/testutil"
)

func newDev(t *testing.T, cfg Config) *Device {
	t.Helper()
	d, err := New(cfg)
	require.NoError(t, err)
	return d
}

func TestDataAndDiscard(t *testing.T) {
	d := newDev(t, Config{Size: 64 << 10, Clock: clock.NewVirtual(time.Unix(0, 0))})
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
	clk := clock.NewVirtual(time.Unix(0, 0))
	d := newDev(t, Config{Size: 1 << 20, TrimLatency: time.Millisecond, BackToBackLatency: 100 * time.Millisecond,
		BackToBackWindow: 10 * time.Millisecond, Clock: clk, Record: true})
	require.NoError(t, d.Discard(0, 4096))     // isolated
	require.NoError(t, d.Discard(4096, 4096))  // right after: penalty
	clk.Sleep(10 * time.Millisecond)           // a gap as long as the window
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
			Clock: clock.NewVirtual(time.Unix(0, 0)), Record: true})
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

// ctxPatience is a context that ends after testutil.Patience, or with the test.
func ctxPatience(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testutil.Patience)
	t.Cleanup(cancel)
	return ctx
}

// async runs f on its own goroutine; its error arrives on the channel.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// result waits for what async sends.
func result(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	return testutil.Receive(t, ch, what+" to return")
}

// pending reports whether what async runs has not returned yet.
func pending(ch <-chan error) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// TestExclusiveBlocksReads: while a TRIM runs, a SATA-like drive's read
// waits for it and an NVMe-like drive's does not.
func TestExclusiveBlocksReads(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		clk := testutil.NewPausingClock()
		d := newDev(t, Config{Size: 1 << 20, TrimLatency: 50 * time.Millisecond, Exclusive: exclusive, Clock: clk})
		trim := async(func() error { return d.Discard(0, 4096) })
		assert.Equal(t, 50*time.Millisecond, <-clk.Slept, "the TRIM takes its latency, holding the drive")
		read := async(func() error {
			_, err := d.ReadAt(make([]byte, 512), 8192)
			return err
		})
		if exclusive {
			testutil.WaitFor(t, "a stalled read", func() bool { return d.Counters().Stalled == 1 })
			assert.True(t, pending(read), "a SATA-like read waits for the TRIM")
			clk.Wake <- struct{}{}
			require.NoError(t, result(t, read, "the read after the TRIM"))
		} else {
			require.NoError(t, result(t, read, "an NVMe-like read during a TRIM"))
			assert.Zero(t, d.Counters().Stalled)
			clk.Wake <- struct{}{}
		}
		require.NoError(t, result(t, trim, "the TRIM"))
	}
}

// TestOneTrimAtATime: TRIMs issued together all reach the drive, which
// runs them one after another.
func TestOneTrimAtATime(t *testing.T) {
	d := newDev(t, Config{Size: 1 << 20, TrimLatency: 5 * time.Millisecond, Record: true,
		Clock: clock.NewVirtual(time.Unix(0, 0))})
	d.Hold()
	var done []<-chan error
	for i := range 4 {
		done = append(done, async(func() error { return d.Discard(int64(i)*4096, 4096) }))
	}
	require.NoError(t, d.WaitHeld(ctxPatience(t), 4))
	assert.Equal(t, int64(4), d.Counters().MaxConcurrentTrims)
	d.Release()
	for _, ch := range done {
		require.NoError(t, result(t, ch, "a released TRIM"))
	}
	trims := d.Trims()
	require.Len(t, trims, 4)
	for i := 1; i < len(trims); i++ {
		assert.False(t, trims[i].Start.Before(trims[i-1].Start.Add(trims[i-1].Latency)), "TRIMs overlapped")
	}
	for _, tr := range trims {
		assert.Equal(t, 5*time.Millisecond, tr.Latency, "time at the gate is no part of a TRIM's latency")
	}
}

// TestGateHoldsInOrder: held TRIMs count as in progress, trim nothing, and
// leave the gate in the order they reached it, ReleaseN at a time.
func TestGateHoldsInOrder(t *testing.T) {
	d := newDev(t, Config{Size: 1 << 20, Clock: clock.NewVirtual(time.Unix(0, 0)), Record: true})
	data := bytes.Repeat([]byte{0x5a}, 3*BlockSize)
	_, err := d.WriteAt(data, 0)
	require.NoError(t, err)
	d.Hold()
	var done []<-chan error
	for i := range 3 {
		done = append(done, async(func() error { return d.Discard(int64(i)*BlockSize, BlockSize) }))
		require.NoError(t, d.WaitHeld(ctxPatience(t), i+1)) // one at a time, to fix their order
	}
	c := d.Counters()
	assert.Equal(t, int64(3), c.Held)
	assert.Equal(t, int64(3), c.MaxConcurrentTrims, "held TRIMs are in progress")
	assert.Zero(t, c.Trims)
	got := make([]byte, len(data))
	_, err = d.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, data, got, "a held TRIM has trimmed nothing")

	d.ReleaseN(1)
	assert.Equal(t, int64(2), d.Counters().Held, "a released TRIM is no longer held")
	require.NoError(t, result(t, done[0], "the first TRIM"))
	assert.True(t, pending(done[1]) && pending(done[2]), "ReleaseN(1) let one TRIM go")
	d.ReleaseN(1)
	require.NoError(t, result(t, done[1], "the second TRIM"))
	assert.True(t, pending(done[2]))
	assert.Equal(t, int64(1), d.Counters().Held)
	d.Release()
	require.NoError(t, result(t, done[2], "the third TRIM"))
	var offs []int64
	for _, tr := range d.Trims() {
		offs = append(offs, tr.Off)
	}
	assert.Equal(t, []int64{0, BlockSize, 2 * BlockSize}, offs, "TRIMs leave the gate in arrival order")
	_, err = d.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, make([]byte, len(data)), got)
	assert.Zero(t, d.Counters().Held)

	// Open, the gate stops nothing.
	require.NoError(t, d.Discard(0, BlockSize))
}

// TestGateReleaseNAhead: passes ReleaseN gives beyond the TRIMs held go to
// the next ones to arrive; Release forgets them, so a new Hold holds again.
func TestGateReleaseNAhead(t *testing.T) {
	d := newDev(t, Config{Size: 1 << 20, Clock: clock.NewVirtual(time.Unix(0, 0))})
	d.Hold()
	d.ReleaseN(2)
	require.NoError(t, d.Discard(0, BlockSize))
	require.NoError(t, d.Discard(BlockSize, BlockSize))
	third := async(func() error { return d.Discard(2*BlockSize, BlockSize) })
	require.NoError(t, d.WaitHeld(ctxPatience(t), 1))
	assert.Equal(t, int64(2), d.Counters().Trims)
	d.ReleaseN(0) // no-op
	d.ReleaseN(-1)
	assert.True(t, pending(third))
	d.Release()
	require.NoError(t, result(t, third, "the third TRIM"))

	d.Hold()
	d.ReleaseN(5)
	d.Release()
	d.Hold()
	held := async(func() error { return d.Discard(0, BlockSize) })
	require.NoError(t, d.WaitHeld(ctxPatience(t), 1), "Release forgot the passes ReleaseN gave ahead")
	d.Hold() // idempotent
	assert.Equal(t, int64(1), d.Counters().Held)
	d.Release()
	require.NoError(t, result(t, held, "the TRIM after Release"))
}

// TestWaitHeldGivesUp: WaitHeld ends with its context and says how many
// TRIMs it saw held.
func TestWaitHeldGivesUp(t *testing.T) {
	d := newDev(t, Config{Size: 1 << 20, Clock: clock.NewVirtual(time.Unix(0, 0))})
	d.Hold()
	trim := async(func() error { return d.Discard(0, BlockSize) })
	require.NoError(t, d.WaitHeld(ctxPatience(t), 1))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := d.WaitHeld(ctx, 2)
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "1 TRIMs held at the gate, waiting for 2")
	assert.NoError(t, d.WaitHeld(ctx, 0), "nothing to wait for")
	d.Release()
	require.NoError(t, result(t, trim, "the TRIM"))
}

// TestHeldTrimLeavesTheDriveFree: a TRIM at the gate has not taken the
// drive, so a SATA-like drive's reads and writes go on, and so do the other
// TRIMs already past the gate.
func TestHeldTrimLeavesTheDriveFree(t *testing.T) {
	clk := testutil.NewPausingClock()
	d := newDev(t, Config{Size: 1 << 20, TrimLatency: time.Millisecond, Exclusive: true, Clock: clk})
	first := async(func() error { return d.Discard(0, BlockSize) })
	<-clk.Slept // past the gate, on the drive
	d.Hold()
	second := async(func() error { return d.Discard(BlockSize, BlockSize) })
	require.NoError(t, d.WaitHeld(ctxPatience(t), 1))
	clk.Wake <- struct{}{}
	require.NoError(t, result(t, first, "the TRIM that passed before Hold"))
	rw := async(func() error {
		if _, err := d.WriteAt([]byte{1}, 3*BlockSize); err != nil {
			return err
		}
		_, err := d.ReadAt(make([]byte, 1), 3*BlockSize)
		return err
	})
	require.NoError(t, result(t, rw, "I/O beside a held TRIM"))
	assert.Zero(t, d.Counters().Stalled)
	d.Release()
	assert.Equal(t, time.Millisecond, <-clk.Slept)
	clk.Wake <- struct{}{}
	require.NoError(t, result(t, second, "the released TRIM"))
}

// TestSetTrimLatency: a new latency applies to the TRIMs after it.
func TestSetTrimLatency(t *testing.T) {
	d := newDev(t, Config{Size: 1 << 20, TrimLatency: 50 * time.Millisecond, Record: true,
		Clock: clock.NewVirtual(time.Unix(0, 0))})
	require.NoError(t, d.Discard(0, BlockSize))
	require.NoError(t, d.SetTrimLatency(0))
	require.NoError(t, d.Discard(0, BlockSize))
	assert.Error(t, d.SetTrimLatency(-time.Second))
	tr := d.Trims()
	require.Len(t, tr, 2)
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 0}, []time.Duration{tr[0].Latency, tr[1].Latency})
}
