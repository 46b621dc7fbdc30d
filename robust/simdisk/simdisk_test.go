package simdisk

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil"
)

// mountT mounts a file system for a test, or says why it cannot (testutil.NeedFUSE).
func mountT(t *testing.T) *Disks {
	t.Helper()
	testutil.NeedFUSE(t)
	fs, err := Start(os.TempDir(), 1, nil)
	require.NoError(t, err)
	t.Cleanup(func() { fs.Close() })
	return fs
}

func openDisk(t *testing.T, fs *Disks, name string) int {
	t.Helper()
	fd, err := unix.Open(fs.Path(name), unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// noServeEnv makes this binary a child that does not serve, for the test of Start's refusal.
const noServeEnv = "URAID_SIMDISK_TEST_NOSERVE"

func TestMain(m *testing.M) {
	if os.Getenv(noServeEnv) == "" {
		ServeChild()
	}
	os.Exit(m.Run())
}

func aligned(n int, b byte) []byte {
	buf := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafePointer(buf))%4096)
	out := buf[off%4096 : off%4096+n]
	for i := range out {
		out[i] = b
	}
	return out
}

// TestVolatileCache: a write is lost by a power loss unless a flush followed it or it was FUA;
// a kill keeps it; a file opened before either is dead after it.
func TestVolatileCache(t *testing.T) {
	fs := mountT(t)
	fs.Add("d", 1<<20, 0)
	fd := openDisk(t, fs, "d")
	_, err := unix.Pwrite(fd, aligned(4096, 1), 0)
	require.NoError(t, err)
	require.NoError(t, unix.Fdatasync(fd))
	_, err = unix.Pwritev2(fd, [][]byte{aligned(4096, 2)}, 4096, unix.RWF_DSYNC)
	require.NoError(t, err)
	_, err = unix.Pwrite(fd, aligned(64<<10, 3), 8192) // 16 sectors, not durable
	require.NoError(t, err)
	fs.Kill()
	_, err = unix.Pread(fd, aligned(4096, 0), 0)
	assert.True(t, errors.Is(err, unix.EIO), "a file opened before a kill still works: %v", err)
	assert.Equal(t, aligned(64<<10, 3), fs.Snapshot("d")[8192:8192+64<<10], "a kill lost what the disk took")

	fs.PowerLoss()
	img := fs.Snapshot("d")
	assert.Equal(t, aligned(4096, 1), img[:4096], "a flushed write was lost")
	assert.Equal(t, aligned(4096, 2), img[4096:8192], "a FUA write was lost")
	kept := 0
	for s := 0; s < 16; s++ {
		sec := img[8192+s*4096 : 8192+(s+1)*4096]
		switch {
		case bytes.Equal(sec, aligned(4096, 3)):
			kept++
		case bytes.Equal(sec, make([]byte, 4096)):
		default:
			t.Fatalf("sector %d is neither the write nor what was there", s)
		}
	}
	assert.Greater(t, kept, 0, "no sector of 16 kept: not torn, or the seed is odd")
	assert.Less(t, kept, 16, "every sector of 16 kept: not torn, or the seed is odd")
	assert.EqualValues(t, 16, fs.Stats().KeptSectors+fs.Stats().DroppedSectors)
}

// TestDownUntilResume: after a kill or a power loss no file opens (the process that was served
// is dead) until the disks resume for its successor, which sees what the cut left.
func TestDownUntilResume(t *testing.T) {
	fs := mountT(t)
	fs.Add("d", 1<<20, 0)
	fd := openDisk(t, fs, "d")
	_, err := unix.Pwrite(fd, aligned(4096, 1), 0)
	require.NoError(t, err)
	for _, cut := range []func() uint64{fs.Kill, fs.PowerLoss} {
		cut()
		_, err := os.OpenFile(fs.Path("d"), os.O_RDWR, 0)
		assert.True(t, errors.Is(err, unix.EIO), "a file opened between a cut and the successor: %v", err)
		fs.Resume()
		f, err := os.OpenFile(fs.Path("d"), os.O_RDWR, 0)
		require.NoError(t, err, "the successor cannot open the disk")
		f.Close()
	}
}

// TestCutIf: a cut asked for an earlier generation does nothing (a rule cut the disks first):
// a kill must not be recorded over a power loss that lost the caches.
func TestCutIf(t *testing.T) {
	fs := mountT(t)
	fs.Add("d", 1<<20, 0)
	fd := openDisk(t, fs, "d")
	_, err := unix.Pwrite(fd, aligned(4096, 1), 0)
	require.NoError(t, err)
	gen := fs.Gen()
	lost := fs.PowerLoss() // as a rule would, unknown to the caller
	got, cut := fs.CutIf(gen, true)
	assert.False(t, cut, "a kill for a generation already cut")
	assert.Equal(t, lost, got)
	got, cut = fs.CutIf(got, true)
	assert.True(t, cut)
	assert.Equal(t, lost+1, got)
	assert.EqualValues(t, 1, fs.Stats().Kills)
}

// TestPunchAndRules: a punch reads as the disk's filler and is volatile like a write; a rule fails
// the operations it matches, as many as it says.
func TestPunchAndRules(t *testing.T) {
	fs := mountT(t)
	fs.Add("d", 1<<20, 0xee)
	fd := openDisk(t, fs, "d")
	_, err := unix.Pwrite(fd, aligned(8192, 1), 0)
	require.NoError(t, err)
	require.NoError(t, unix.Fsync(fd))
	require.NoError(t, unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096))
	assert.Equal(t, bytes.Repeat([]byte{0xee}, 4096), fs.Snapshot("d")[:4096])
	require.NoError(t, unix.Fsync(fd))
	fs.Arm(Rule{Match: Match{Kind: Write, From: 4096, To: 8192}, N: 1})
	_, err = unix.Pwrite(fd, aligned(4096, 2), 8192)
	assert.NoError(t, err, "a write the rule does not match failed")
	_, err = unix.Pwrite(fd, aligned(4096, 2), 4096)
	assert.True(t, errors.Is(err, unix.EIO), "%v", err)
	fs.Arm(Rule{Match: Match{Disk: "other", Kind: Write}, N: 1})
	_, err = unix.Pwrite(fd, aligned(4096, 2), 8192)
	assert.NoError(t, err, "a rule of another disk failed a write, or a spent rule another")
	assert.EqualValues(t, 1, fs.Stats().Failed)
	fs.PowerLoss()
	assert.Equal(t, bytes.Repeat([]byte{0xee}, 4096), fs.Snapshot("d")[:4096], "a flushed punch was lost")
	assert.Equal(t, aligned(4096, 1), fs.Snapshot("d")[4096:8192])
}

// TestFlushAfterFUA: a flush after a FUA write over an older cached write of the same sector
// keeps the FUA write (the older one must not come back).
func TestFlushAfterFUA(t *testing.T) {
	fs := mountT(t)
	fs.Add("d", 1<<20, 0)
	fd := openDisk(t, fs, "d")
	_, err := unix.Pwrite(fd, aligned(4096, 1), 0)
	require.NoError(t, err)
	_, err = unix.Pwritev2(fd, [][]byte{aligned(4096, 2)}, 0, unix.RWF_DSYNC)
	require.NoError(t, err)
	require.NoError(t, unix.Fdatasync(fd))
	fs.PowerLoss()
	assert.Equal(t, aligned(4096, 2), fs.Snapshot("d")[:4096])
}

// TestCutRule: a cut rule cuts the power just before the N-th operation it matches, fails that
// one, reports the cut with its generation, and leaves every file opened before it dead.
func TestCutRule(t *testing.T) {
	testutil.NeedFUSE(t)
	cuts := make(chan Cut, 1)
	fs, err := Start(os.TempDir(), 1, func(c Cut) { cuts <- c })
	require.NoError(t, err)
	t.Cleanup(func() { fs.Close() })
	fs.Add("d", 1<<20, 0)
	fd := openDisk(t, fs, "d")
	fs.Arm(Rule{Match: Match{Kind: Flush}, N: 2, Cut: true, Why: "second flush"})
	gen := fs.Gen()
	_, err = unix.Pwrite(fd, aligned(4096, 1), 0)
	require.NoError(t, err)
	require.NoError(t, unix.Fdatasync(fd), "the first flush")
	_, err = unix.Pwrite(fd, aligned(4096, 2), 0)
	require.NoError(t, err)
	assert.True(t, errors.Is(unix.Fdatasync(fd), unix.EIO), "the flush the rule cut before did not fail")
	c := <-cuts
	assert.Equal(t, "second flush", c.Why)
	assert.Equal(t, gen+1, c.Gen)
	assert.Equal(t, gen+1, fs.Gen())
	assert.Equal(t, Flush, c.Op.Kind)
	_, err = unix.Pread(fd, aligned(4096, 0), 0)
	assert.True(t, errors.Is(err, unix.EIO), "a file opened before the cut still works: %v", err)
	img := fs.Snapshot("d")[:4096]
	assert.True(t, bytes.Equal(img, aligned(4096, 1)) || bytes.Equal(img, aligned(4096, 2)),
		"after the cut the sector holds neither the flushed write nor the one after it")
	assert.EqualValues(t, 1, fs.Stats().PowerLosses)
}

// TestStartRefusesABinaryThatDoesNotServe: Start names the missing ServeChild instead of hanging.
func TestStartRefusesABinaryThatDoesNotServe(t *testing.T) {
	// The child skips ServeChild (see TestMain), lists no tests and exits without a word.
	_, err := startWith(os.TempDir(), 1, nil, []string{noServeEnv + "=1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ServeChild")
}
