package tests

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/discard/simssd"
	"uraid/discard/simssd/simblk"
	"uraid/ublk"
)

// startSimSSD serves a simulated drive as /dev/ublkbN for the test's life.
func startSimSSD(t *testing.T, cfg simssd.Config) (*simssd.Device, string) {
	t.Helper()
	drive, err := simssd.New(cfg)
	require.NoError(t, err)
	tg, err := simblk.New(drive, simblk.Options{Exclusive: cfg.Exclusive})
	require.NoError(t, err)
	dev, err := ublk.New(tg, ublk.Options{Queues: 1, Depth: 32})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), slow*10*time.Second)
	defer cancel()
	require.NoError(t, dev.Start(ctx))
	t.Cleanup(func() { assert.NoError(t, dev.Stop()) })
	return drive, dev.Path()
}

func queueAttr(t *testing.T, dev, name string) string {
	t.Helper()
	b, err := os.ReadFile("/sys/block/" + strings.TrimPrefix(dev, "/dev/") + "/queue/" + name)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// blkDiscard trims [off, off+n) of f with BLKDISCARD and says how long the
// kernel took to answer.
func blkDiscard(t *testing.T, f *os.File, off, n uint64) time.Duration {
	t.Helper()
	r := [2]uint64{off, n}
	start := time.Now()
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKDISCARD, uintptr(unsafe.Pointer(&r)))
	took := time.Since(start)
	require.Zero(t, errno, "BLKDISCARD [%d, +%d)", off, n)
	return took
}

// TestE2ESimSSDData: what is written reads back, through the kernel, on an
// NVMe-like and a SATA-like drive, and the queue limits say what uraid and
// md need to know about the drive.
func TestE2ESimSSDData(t *testing.T) {
	needGuest(t)
	for _, exclusive := range []bool{false, true} {
		_, path := startSimSSD(t, simssd.Config{Size: 64 << 20, Exclusive: exclusive})
		assert.Equal(t, "4096", queueAttr(t, path, "discard_granularity"))
		assert.Equal(t, "0", queueAttr(t, path, "rotational"), "a SATA-like drive is an SSD: not rotational")

		f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
		require.NoError(t, err)
		defer f.Close()
		want, got := alignedBuf(1<<20), alignedBuf(1<<20)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range want {
			want[i] = byte(rng.Uint32())
		}
		_, err = f.WriteAt(want, 5<<20)
		require.NoError(t, err)
		_, err = f.ReadAt(got, 5<<20)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "exclusive=%v: data read back differs", exclusive)
		_, err = f.ReadAt(got, 0)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(make([]byte, len(got)), got), "never-written data reads as zeros")
	}
}

// TestE2ESimSSDDiscard: a BLKDISCARD takes the configured TRIM latency and
// zeroes exactly its range; one that follows at once pays the back-to-back
// penalty, one that waits past the window does not.
func TestE2ESimSSDDiscard(t *testing.T) {
	needGuest(t)
	const (
		trim = 150 * time.Millisecond
		b2b  = 900 * time.Millisecond
		// Wide, because under emulation the gap between one BLKDISCARD
		// and the next TRIM ranges from milliseconds to hundreds of them.
		window = 1500 * time.Millisecond
	)
	drive, path := startSimSSD(t, simssd.Config{Size: 64 << 20, TrimLatency: trim,
		BackToBackLatency: b2b, BackToBackWindow: window, Record: true})
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	data := alignedBuf(4 << 20)
	for i := range data {
		data[i] = byte(i%251 + 1)
	}
	_, err = f.WriteAt(data, 0)
	require.NoError(t, err)

	first := blkDiscard(t, f, 1<<20, 1<<20)
	second := blkDiscard(t, f, 2<<20, 512<<10)
	time.Sleep(2 * window)
	third := blkDiscard(t, f, 3<<20, 4096)
	assert.GreaterOrEqual(t, first, trim, "an isolated TRIM takes the TRIM latency")
	assert.Less(t, first, b2b, "an isolated TRIM must not pay the back-to-back penalty")
	assert.GreaterOrEqual(t, second, b2b, "a TRIM right after another pays the penalty")
	assert.GreaterOrEqual(t, third, trim)
	assert.Less(t, third, b2b, "a TRIM after the window is isolated again")

	// The drive saw exactly these three TRIMs, whole, with those latencies.
	trims := drive.Trims()
	require.Len(t, trims, 3)
	t.Logf("TRIM latencies %v %v %v; gap before the second %v", trims[0].Latency, trims[1].Latency,
		trims[2].Latency, trims[1].Start.Sub(trims[0].Start.Add(trims[0].Latency)))
	for i, w := range []struct {
		off, n int64
		lat    time.Duration
	}{{1 << 20, 1 << 20, trim}, {2 << 20, 512 << 10, b2b}, {3 << 20, 4096, trim}} {
		assert.Equal(t, w.off, trims[i].Off, "trim %d", i)
		assert.Equal(t, w.n, trims[i].Len, "trim %d", i)
		assert.GreaterOrEqual(t, trims[i].Latency, w.lat, "trim %d", i)
	}

	got := alignedBuf(4 << 20)
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	want := append([]byte(nil), data...)
	clear(want[1<<20 : 2<<20+512<<10])
	clear(want[3<<20 : 3<<20+4096])
	assert.True(t, bytes.Equal(want, got), "discarded ranges read as zeros, the rest as written")
}
