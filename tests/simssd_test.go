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

	"uraid/internal/clock"
	"uraid/simssd"
	"uraid/simssd/simblk"
	"uraid/ublk"
)

// startSimSSD serves a simulated drive as /dev/ublkbN for the test's life. Its cleanup opens the
// drive's TRIM gate before it stops the device, which waits for every request.
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
	t.Cleanup(func() {
		drive.Release()
		assert.NoError(t, dev.Stop())
	})
	return drive, dev.Path()
}

// holdTrims shuts drive's TRIM gate until the test ends, or until the test releases it. Call it
// once the array over the drive exists: cleanups run last-registered first, so the gate then opens
// before the array's stop waits for its discards.
func holdTrims(t *testing.T, drive *simssd.Device) {
	t.Helper()
	drive.Hold()
	t.Cleanup(drive.Release)
}

// patient bounds a wait for a state the test has made inevitable: generous, since on any machine
// it is reached long before.
func patient(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), slow*10*time.Second)
	t.Cleanup(cancel)
	return ctx
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

// TestE2ESimSSDDiscard: through the kernel, a BLKDISCARD waits out the TRIM latency and zeroes
// exactly its range, and the drive sees each discard whole.
func TestE2ESimSSDDiscard(t *testing.T) {
	needGuest(t)
	const trim = 150 * time.Millisecond
	drive, path := startSimSSD(t, simssd.Config{Size: 64 << 20, TrimLatency: trim, Record: true})
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	data := alignedBuf(4 << 20)
	for i := range data {
		data[i] = byte(i%251 + 1)
	}
	_, err = f.WriteAt(data, 0)
	require.NoError(t, err)

	// A lower bound only: how much longer the kernel takes depends on the machine.
	assert.GreaterOrEqual(t, blkDiscard(t, f, 1<<20, 1<<20), trim, "a BLKDISCARD waits for the TRIM")
	blkDiscard(t, f, 3<<20, 4096)
	trims := drive.Trims()
	require.Len(t, trims, 2)
	assert.Equal(t, [2]int64{1 << 20, 1 << 20}, [2]int64{trims[0].Off, trims[0].Len})
	assert.Equal(t, [2]int64{3 << 20, 4096}, [2]int64{trims[1].Off, trims[1].Len})

	got := alignedBuf(4 << 20)
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	want := append([]byte(nil), data...)
	clear(want[1<<20 : 2<<20])
	clear(want[3<<20 : 3<<20+4096])
	assert.True(t, bytes.Equal(want, got), "discarded ranges read as zeros, the rest as written")
}

// TestE2ESimSSDBackToBack: a TRIM that follows the previous one within the window pays the
// back-to-back penalty, one after the window does not. The drive runs on a virtual clock that
// moves only by the latencies it spends and by the test, so how far apart the kernel delivers the
// TRIMs in real time cannot change what the drive decides.
func TestE2ESimSSDBackToBack(t *testing.T) {
	needGuest(t)
	const (
		trim   = 150 * time.Millisecond
		b2b    = 900 * time.Millisecond
		window = 1500 * time.Millisecond
	)
	clk := clock.NewVirtual(time.Unix(0, 0))
	drive, path := startSimSSD(t, simssd.Config{Size: 64 << 20, TrimLatency: trim,
		BackToBackLatency: b2b, BackToBackWindow: window, Record: true, Clock: clk})
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	blkDiscard(t, f, 1<<20, 1<<20)
	blkDiscard(t, f, 2<<20, 512<<10)
	clk.Sleep(window)
	blkDiscard(t, f, 3<<20, 4096)
	var got []time.Duration
	for _, tr := range drive.Trims() {
		got = append(got, tr.Latency)
	}
	assert.Equal(t, []time.Duration{trim, b2b, trim}, got, "isolated, back to back, after the window")
}

// TestE2ESimSSDTrimGarbage: through the kernel, a drive with TrimGarbage reads a discarded range
// back as its seed's garbage, and everything else as written.
func TestE2ESimSSDTrimGarbage(t *testing.T) {
	needGuest(t)
	const seed = 11
	_, path := startSimSSD(t, simssd.Config{Size: 64 << 20, Seed: seed, TrimGarbage: true})
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	data := alignedBuf(1 << 20)
	for i := range data {
		data[i] = byte(i%251 + 1)
	}
	_, err = f.WriteAt(data, 0)
	require.NoError(t, err)
	blkDiscard(t, f, 64<<10, 128<<10)

	got := alignedBuf(1 << 20)
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	want := append([]byte(nil), data...)
	simssd.Garbage(seed, 64<<10, want[64<<10:192<<10])
	assert.True(t, bytes.Equal(want, got), "the discarded range reads as garbage, the rest as written")
	assert.False(t, bytes.Equal(make([]byte, 128<<10), got[64<<10:192<<10]), "garbage is not zeros")
}
