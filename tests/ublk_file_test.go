package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil"
	"uraid/ublk"
)

// backingSize keeps backing files small: the guest's /tmp is RAM.
const backingSize = 256 << 20

func backingFile(t *testing.T) string {
	t.Helper()
	return testutil.SparseFile(t, t.TempDir(), "backing", backingSize)
}

// sh runs a command and returns its output, failing the test with the
// output when it fails. Like the CLI's calls it is bounded: a command stuck
// on a device whose I/O nobody serves fails its test and names itself.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd, done := boundedCommand(name, args...)
	out, err := cmd.CombinedOutput()
	err = done(err)
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

// dmsetup runs dmsetup without udev synchronisation: the guest runs no udev, except while the
// scan suite runs one of its own, and a dmsetup that believes udev is there waits for good on a
// cookie no udev will ever release.
func dmsetup(t *testing.T, args ...string) string {
	t.Helper()
	return sh(t, "dmsetup", append([]string{"--noudevsync"}, args...)...)
}

// dmRemove removes device-mapper device name for a test's cleanup. The device can stay busy for
// a moment after the array over it stopped; a device left behind would carry its superblock
// into later tests (an assemble --scan would start its array), so it tries for a while, and says
// so if it fails.
func dmRemove(t *testing.T, name string) {
	deadline := time.Now().Add(slow * 3 * time.Second)
	for {
		out, err := exec.Command("dmsetup", "--noudevsync", "remove", "--retry", name).CombinedOutput()
		if err == nil || strings.Contains(string(out), "No such device") {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("dmsetup remove %s: %v: %s", name, err, out)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dropCaches(t *testing.T) {
	t.Helper()
	unix.Sync()
	require.NoError(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0))
}

// A filesystem on the device keeps every file intact across cache drops and
// remounts, and deleting files discards through to the backing file.
func TestE2EUblkFilesystem(t *testing.T) {
	needGuest(t)
	backing := backingFile(t)
	srv := startUblkServer(t, backing)
	mnt := t.TempDir()

	sh(t, "mkfs.ext4", "-q", "-F", srv.Path)
	sh(t, "mount", "-o", "discard", srv.Path, mnt)
	mounted := true
	defer func() {
		if mounted {
			cleanupUnmount(mnt)
		}
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	sums := map[string][32]byte{}
	for i := range 24 {
		data := make([]byte, 1+rng.IntN(4<<20))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		name := filepath.Join(mnt, fmt.Sprintf("f%02d", i))
		require.NoError(t, os.WriteFile(name, data, 0o600))
		sums[name] = sha256.Sum256(data)
	}
	check := func(when string) {
		t.Helper()
		for name, want := range sums {
			got, err := os.ReadFile(name)
			require.NoError(t, err, when)
			require.Equal(t, want, sha256.Sum256(got), "%s: %s", when, name)
		}
	}
	dropCaches(t)
	check("after drop_caches")

	sh(t, "umount", mnt)
	sh(t, "mount", "-o", "discard", srv.Path, mnt)
	check("after remount")

	full := testutil.Allocated(t, backing)
	for name := range sums {
		if name[len(name)-1]%2 == 0 {
			require.NoError(t, os.Remove(name))
			delete(sums, name)
		}
	}
	unix.Sync()
	check("after deleting half")
	sh(t, "umount", mnt)
	mounted = false
	assert.Less(t, testutil.Allocated(t, backing), full, "deleted files were discarded from the backing file")
	sh(t, "e2fsck", "-fn", srv.Path)

	st := srv.Stats()
	assert.NotZero(t, st.Flushes, "ext4 journal commits flush the cache")
	assert.NotZero(t, st.Discards, "mount -o discard discards freed blocks")
	srv.Stop()
}

// fio writes random blocks with checksums and verifies them, then a
// separate verify-only pass checks them again.
func TestE2EUblkFioVerify(t *testing.T) {
	needGuest(t)
	srv := startUblkServer(t, backingFile(t))
	fioVerify(t, srv.Path, "64M")
	srv.Stop()
}

// A discard of the device punches a hole of that range in the backing file
// and reads back as zeroes; the data around it stays.
func TestE2EUblkDiscardPunchesHole(t *testing.T) {
	needGuest(t)
	backing := backingFile(t)
	srv := startUblkServer(t, backing)

	data, dev := writePattern(t, srv.Path)
	defer dev.Close()
	buf := alignedBuf(len(data)) // for reading back
	before := testutil.Allocated(t, backing)
	require.GreaterOrEqual(t, before, int64(8<<20))

	sh(t, "blkdiscard", "-o", "1048576", "-l", "4194304", srv.Path)

	after := testutil.Allocated(t, backing)
	assert.LessOrEqual(t, after, before-(4<<20), "allocated bytes drop by the discarded range")
	f, err := os.Open(backing)
	require.NoError(t, err)
	defer f.Close()
	hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), hole, "first hole of the backing file is the discarded range")

	_, err = dev.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data[:1<<20], buf[:1<<20]), "data before the range survives")
	assert.True(t, bytes.Equal(make([]byte, 4<<20), buf[1<<20:5<<20]), "discarded range reads as zeroes")
	assert.True(t, bytes.Equal(data[5<<20:], buf[5<<20:]), "data after the range survives")

	st := srv.Stats()
	assert.NotZero(t, st.Discards)
	assert.Equal(t, uint64(4<<20), st.DiscardedBytes)
	require.NoError(t, dev.Close())
	srv.Stop()
}

// FLUSH and FUA reach the target: the device advertises a volatile cache.
func TestE2EUblkFlushReachesTarget(t *testing.T) {
	needGuest(t)
	srv := startUblkServer(t, backingFile(t))
	before := srv.Stats()

	dev, err := os.OpenFile(srv.Path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	buf := alignedBuf(4096)
	for i := range 3 {
		_, err := dev.WriteAt(buf, int64(i)*4096)
		require.NoError(t, err)
		require.NoError(t, dev.Sync()) // fsync on a block device is a cache flush
	}
	require.NoError(t, dev.Close())
	sync, err := os.OpenFile(srv.Path, os.O_RDWR|unix.O_DIRECT|unix.O_DSYNC, 0)
	require.NoError(t, err)
	_, err = sync.WriteAt(buf, 65536) // O_DSYNC direct writes are FUA
	require.NoError(t, err)
	require.NoError(t, sync.Close())

	after := srv.Stats()
	assert.GreaterOrEqual(t, after.Flushes-before.Flushes, uint64(3))
	assert.GreaterOrEqual(t, after.FUAWrites-before.FUAWrites, uint64(1))
	srv.Stop()
}

// A killed server leaves its device behind; the orphan cleanup removes it,
// and leaves devices with a live server alone.
func TestE2EUblkOrphanCleanup(t *testing.T) {
	needGuest(t)
	live := startUblkServer(t, backingFile(t))
	dead := startUblkServer(t, backingFile(t))
	deadChar := ublk.CharPath(uint32(dead.ID))
	dead.Kill()
	_, err := os.Stat(deadChar)
	require.NoError(t, err, "the kernel keeps a killed server's device")

	err = ublk.RemoveOrphan(uint32(live.ID))
	require.ErrorIs(t, err, ublk.ErrDaemonAlive)

	removed, err := ublk.RemoveOrphans()
	require.NoError(t, err)
	if !slices.Contains(removed, uint32(dead.ID)) {
		info, ierr := ublk.Info(uint32(dead.ID))
		t.Fatalf("the cleanup removed %v, not the dead server's device %d (%+v, %v); removing it alone: %v",
			removed, dead.ID, info, ierr, ublk.RemoveOrphan(uint32(dead.ID)))
	}
	require.Eventually(t, func() bool {
		_, err := os.Stat(deadChar)
		return errors.Is(err, os.ErrNotExist)
	}, slow*5*time.Second, 10*time.Millisecond, "%s is gone", deadChar)

	_, err = os.Stat(live.Path)
	require.NoError(t, err, "the live device is untouched")
	info, err := ublk.Info(uint32(live.ID))
	require.NoError(t, err)
	assert.Equal(t, "live", info.State)
	assert.Equal(t, live.cmd.Process.Pid, info.PID)
	live.Stop()
	// Other tests' devices may be coming and going: only this test's two must be gone.
	for _, id := range []int{live.ID, dead.ID} {
		_, err := ublk.Info(uint32(id))
		assert.ErrorIs(t, err, unix.ENODEV, "ublk device %d is left", id)
	}
}

// Stopping the server while writes are in flight loses no write it
// acknowledged: after a restart on the same file every block holds its last
// acknowledged contents (or the write that was in flight, if it landed).
func TestE2EUblkStopUnderLoad(t *testing.T) {
	needGuest(t)
	backing := backingFile(t)
	srv := startUblkServer(t, backing)

	const writers, bs, blocks = 8, 4096, 4096 // the first 16 MiB
	acked := make([]uint64, blocks)
	inflight := make([]uint64, blocks)
	dev, err := os.OpenFile(srv.Path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	var count atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			buf := alignedBuf(bs)
			for gen := uint64(1); ; gen++ {
				// Writer w owns the blocks b with b%writers == w, so
				// no block has two writes in flight.
				b := rng.IntN(blocks/writers)*writers + w
				fillBlock(buf, b, gen)
				inflight[b] = gen
				if _, err := dev.WriteAt(buf, int64(b)*bs); err != nil {
					return
				}
				acked[b], inflight[b] = gen, 0
				count.Add(1)
			}
		}()
	}
	require.Eventually(t, func() bool { return count.Load() > 2000 }, slow*30*time.Second, 10*time.Millisecond)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.Stop()
	}()
	wg.Wait()
	// The server's DEL_DEV waits for this descriptor.
	require.NoError(t, dev.Close())
	<-stopped
	t.Logf("%d writes acknowledged before the stop", count.Load())

	srv = startUblkServer(t, backing)
	dev, err = os.OpenFile(srv.Path, os.O_RDONLY|unix.O_DIRECT, 0)
	require.NoError(t, err)
	got, want := alignedBuf(bs), alignedBuf(bs)
	checked := 0
	for b := range blocks {
		if acked[b] == 0 {
			continue
		}
		_, err := dev.ReadAt(got, int64(b)*bs)
		require.NoError(t, err)
		fillBlock(want, b, acked[b])
		if bytes.Equal(got, want) {
			checked++
			continue
		}
		if inflight[b] != 0 {
			fillBlock(want, b, inflight[b])
			if bytes.Equal(got, want) {
				checked++
				continue
			}
		}
		t.Fatalf("block %d: acknowledged generation %d lost (in flight: %d; block says block %d gen %d)",
			b, acked[b], inflight[b], binary.LittleEndian.Uint64(got), binary.LittleEndian.Uint64(got[8:]))
	}
	t.Logf("%d blocks verified", checked)
	require.NoError(t, dev.Close())
	srv.Stop()
}

// fillBlock writes a block that names itself and its generation, so a
// misplaced or stale block is recognized.
func fillBlock(buf []byte, block int, gen uint64) {
	binary.LittleEndian.PutUint64(buf, uint64(block))
	binary.LittleEndian.PutUint64(buf[8:], gen)
	x := uint64(block)*0x9E3779B97F4A7C15 ^ gen
	for i := 16; i < len(buf); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(buf[i:], x)
	}
}

// alignedBuf returns page-aligned memory for O_DIRECT.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4096)
	if off == 4096 {
		off = 0
	}
	return b[off : off+n : off+n]
}

// A block device served by the file target (as RAID members are) gets its
// discards through the asynchronous block discard command and its zeroing
// through the kernel's zeroout; a loop device shows both as holes and
// zeroes in its own backing file.
func TestE2EUblkBlockDeviceTarget(t *testing.T) {
	needGuest(t)
	loopFile := testutil.SparseFile(t, t.TempDir(), "loop", 64<<20)
	loop := strings.TrimSpace(sh(t, "losetup", "--find", "--show", loopFile))
	t.Cleanup(func() { cleanupRun("losetup", "-d", loop) })

	srv := startUblkServer(t, loop)
	data, dev := writePattern(t, srv.Path)
	defer dev.Close()
	buf := alignedBuf(len(data)) // for reading back
	before := testutil.Allocated(t, loopFile)
	require.GreaterOrEqual(t, before, int64(8<<20))

	sh(t, "blkdiscard", "-o", "1048576", "-l", "2097152", srv.Path)
	sh(t, "blkdiscard", "-z", "-o", "4194304", "-l", "1048576", srv.Path)

	_, err := dev.ReadAt(buf, 0)
	require.NoError(t, err)
	want := bytes.Clone(data)
	clear(want[1<<20 : 3<<20])
	clear(want[4<<20 : 5<<20])
	assert.True(t, bytes.Equal(want, buf), "discarded and zeroed ranges read as zeroes, the rest survives")
	lf, err := os.Open(loopFile)
	require.NoError(t, err)
	defer lf.Close()
	hole, err := unix.Seek(int(lf.Fd()), 0, unix.SEEK_HOLE)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), hole, "the discard reached the loop device's file as a hole")

	st := srv.Stats()
	assert.Equal(t, uint64(1), st.Discards)
	assert.Zero(t, st.SlowDiscards, "6.12 discards block devices through io_uring")
	assert.Equal(t, uint64(1), st.WriteZeroes)
	require.NoError(t, dev.Close())
	srv.Stop()
}

// With user recovery a killed server's device stays, quiesced, with its
// number; a new server takes it over and serves the same data. In every
// zero-copy mode: the new server's ring has none of the dead one's buffer
// registrations.
func TestE2EUblkUserRecovery(t *testing.T) {
	needFeature(t, ublk.FeatureUserRecovery)
	for _, zc := range zeroCopyModes {
		t.Run(zc, func(t *testing.T) { userRecovery(t, zc) })
	}
}

func userRecovery(t *testing.T, zc string) {
	backing := backingFile(t)
	first := startUblkServer(t, backing, "-recovery", "-zerocopy", zc)
	z := first.ZeroCopy
	checkZeroCopy(t, zc, z.On, z.Mode, z.Reason, z.BufferBytes)
	data := alignedBuf(1 << 20)
	for i := range data {
		data[i] = byte(i/512) ^ 0x5a
	}
	dev, err := os.OpenFile(first.Path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	_, err = dev.WriteAt(data, 4<<20)
	require.NoError(t, err)
	require.NoError(t, dev.Close())

	first.Kill()
	require.Eventually(t, func() bool {
		info, err := ublk.Info(uint32(first.ID))
		return err == nil && info.State == "quiesced"
	}, slow*5*time.Second, 10*time.Millisecond, "the device waits for a new server")
	_, err = os.Stat(first.Path)
	require.NoError(t, err, "the block device survives its server")

	second := startUblkServer(t, backing, "-recovery", "-zerocopy", zc, "-recover", fmt.Sprint(first.ID))
	require.Equal(t, first.ID, second.ID)
	assert.Equal(t, first.ZeroCopy.Mode, second.ZeroCopy.Mode)
	info, err := ublk.Info(uint32(second.ID))
	require.NoError(t, err)
	assert.Equal(t, "live", info.State)
	assert.Equal(t, second.cmd.Process.Pid, info.PID)

	dev, err = os.OpenFile(second.Path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	got := alignedBuf(1 << 20)
	_, err = dev.ReadAt(got, 4<<20)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "data written through the first server reads back through the second")
	_, err = dev.WriteAt(data, 0)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	second.Stop()
	_, err = os.Stat(ublk.CharPath(uint32(second.ID)))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// writePattern writes 8 MiB whose every 4 KiB block is non-zero and distinct at the start of the
// device with O_DIRECT, syncs, and returns the data and the open device.
func writePattern(t *testing.T, path string) ([]byte, *os.File) {
	t.Helper()
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i/4096) | 1
	}
	dev, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	buf := alignedBuf(len(data))
	copy(buf, data)
	_, err = dev.WriteAt(buf, 0)
	require.NoError(t, err)
	require.NoError(t, dev.Sync())
	return data, dev
}
