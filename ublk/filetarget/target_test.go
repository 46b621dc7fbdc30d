package filetarget

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil"
	"uraid/internal/testutil/ublktest"
	"uraid/ublk"
)

const (
	testSize  = 16 << 20
	testMaxIO = 256 << 10
)

// backing makes a sparse file of testSize in dir.
func backing(t *testing.T, dir string) string {
	t.Helper()
	return testutil.SparseFile(t, dir, "backing", testSize)
}

func open(t *testing.T, path string) (*Target, *ublk.Harness) {
	t.Helper()
	tg, err := Open(path, Options{})
	require.NoError(t, err)
	h, err := ublk.NewHarness(tg, 8, testMaxIO)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		assert.NoError(t, tg.Close())
	})
	return tg, h
}

// dirs are the filesystems to test on: the test's temp dir, and tmpfs,
// which has no FALLOC_FL_ZERO_RANGE (the guest's /tmp is tmpfs).
func dirs(t *testing.T) map[string]string {
	d := map[string]string{"tempdir": t.TempDir()}
	if shm := testutil.TmpfsDir(t); shm != "" {
		d["tmpfs"] = shm
	}
	return d
}

func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestParamsFromFile(t *testing.T) {
	for name, dir := range dirs(t) {
		t.Run(name, func(t *testing.T) {
			path := backing(t, dir)
			tg, _ := open(t, path)
			p := tg.Params()
			var st unix.Stat_t
			require.NoError(t, unix.Stat(path, &st))
			assert.Equal(t, int64(testSize), p.Size)
			assert.Equal(t, uint32(st.Blksize), p.DiscardGranularity, "discard granularity is the filesystem block")
			assert.True(t, p.VolatileCache)
			assert.True(t, p.FUA)
			assert.NotZero(t, p.MaxWriteZeroesSize)
			dev, err := ublk.New(tg, ublk.Options{Queues: 1})
			require.NoError(t, err, "a device accepts the parameters")
			assert.NotNil(t, dev)
		})
	}
}

func TestReadWriteRoundTrip(t *testing.T) {
	for name, dir := range dirs(t) {
		t.Run(name, func(t *testing.T) {
			path := backing(t, dir)
			tg, h := open(t, path)
			want := make([]byte, testSize)
			for i, w := range []struct {
				off int64
				n   int
				fua bool
			}{{0, 4096, false}, {testSize - testMaxIO, testMaxIO, true}, {1 << 20, 64 << 10, false}, {(1 << 20) + 4096, 8192, true}} {
				data := random(w.n, uint64(i))
				write := ublktest.Write
				if w.fua {
					write = ublktest.WriteFUA
				}
				write(t, h, w.off, data)
				copy(want[w.off:], data)
			}
			for _, off := range []int64{0, 1 << 20, testSize - testMaxIO} {
				assert.Equal(t, want[off:off+testMaxIO], ublktest.Read(t, h, off, testMaxIO))
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "backing file holds what was written")
			s := tg.Stats()
			assert.Equal(t, uint64(4), s.Writes)
			assert.Equal(t, uint64(2), s.FUAWrites)
			assert.Equal(t, uint64(3), s.Reads)
		})
	}
}

func TestFlushReachesFile(t *testing.T) {
	tg, h := open(t, backing(t, t.TempDir()))
	ublktest.Write(t, h, 0, random(4096, 1))
	for range 3 {
		assert.Equal(t, int32(0), ublktest.Do(t, h, ublk.HarnessRequest{Op: ublk.OpFlush}))
	}
	assert.Equal(t, uint64(3), tg.Stats().Flushes)
}

func TestDiscardPunchesHole(t *testing.T) {
	for name, dir := range dirs(t) {
		t.Run(name, func(t *testing.T) {
			path := backing(t, dir)
			tg, h := open(t, path)
			for off := int64(0); off < 2<<20; off += testMaxIO {
				ublktest.Write(t, h, off, random(testMaxIO, uint64(off)))
			}
			before := testutil.Allocated(t, path)
			require.GreaterOrEqual(t, before, int64(2<<20))

			ublktest.Discard(t, h, 1<<20, 1<<20)

			assert.LessOrEqual(t, testutil.Allocated(t, path), before-(1<<20), "discarded blocks are freed")
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
			require.NoError(t, err)
			assert.Equal(t, int64(1<<20), hole, "first hole is the discarded range")
			assert.Equal(t, make([]byte, testMaxIO), ublktest.Read(t, h, 1<<20, testMaxIO))
			assert.NotEqual(t, make([]byte, 4096), ublktest.Read(t, h, (1<<20)-4096, 4096), "data before the range survives")
			s := tg.Stats()
			assert.Equal(t, uint64(1), s.Discards)
			assert.Equal(t, uint64(1<<20), s.DiscardedBytes)
		})
	}
}

func TestWriteZeroes(t *testing.T) {
	for name, dir := range dirs(t) {
		for _, nounmap := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/unmap", true: "/nounmap"}[nounmap], func(t *testing.T) {
				path := backing(t, dir)
				tg, h := open(t, path)
				for off := int64(0); off < 1<<20; off += testMaxIO {
					ublktest.Write(t, h, off, random(testMaxIO, uint64(off)+7))
				}
				before := testutil.Allocated(t, path)
				res := ublktest.Do(t, h, ublk.HarnessRequest{Op: ublk.OpWriteZeroes, Offset: testMaxIO, Length: testMaxIO, NoUnmap: nounmap})
				require.Equal(t, int32(0), res)
				assert.Equal(t, make([]byte, testMaxIO), ublktest.Read(t, h, testMaxIO, testMaxIO))
				assert.NotEqual(t, make([]byte, 4096), ublktest.Read(t, h, 2*testMaxIO, 4096), "data after the range survives")
				after := testutil.Allocated(t, path)
				if nounmap {
					assert.Equal(t, before, after, "NOUNMAP keeps the range allocated")
				} else {
					assert.LessOrEqual(t, after, before-testMaxIO, "zeroing may deallocate")
				}
				assert.Equal(t, uint64(1), tg.Stats().WriteZeroes)
			})
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for name, path := range map[string]string{
		"missing":   filepath.Join(dir, "nope"),
		"directory": dir,
		"empty":     empty,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(path, Options{})
			assert.Error(t, err)
		})
	}
}

// A request served on the queue ring, from dispatch through the file read
// to the commit, allocates nothing.
func TestRingPathDoesNotAllocate(t *testing.T) {
	_, h := open(t, backing(t, t.TempDir()))
	ublktest.Write(t, h, 0, random(4096, 3))
	allocs := testing.AllocsPerRun(500, func() {
		if res, err := h.Do(ublk.HarnessRequest{Op: ublk.OpRead, Length: 4096}); err != nil || res != 4096 {
			panic("read failed")
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkRead4K(b *testing.B) {
	path := filepath.Join(b.TempDir(), "backing")
	require.NoError(b, os.WriteFile(path, random(testSize, 9), 0o600))
	tg, err := Open(path, Options{})
	require.NoError(b, err)
	defer tg.Close()
	benchReads(b, tg)
}

// In zero-copy mode the file is read into and written from the request's
// own pages (here the harness's registered buffers), with no allocation.
func TestZeroCopyReadWrite(t *testing.T) {
	path := backing(t, t.TempDir())
	tg, err := Open(path, Options{})
	require.NoError(t, err)
	defer tg.Close()
	h, err := ublk.NewZeroCopyHarness(tg, 8, testMaxIO)
	require.NoError(t, err)
	defer h.Close()
	require.True(t, h.ZeroCopy())

	data := random(3*4096, 11)
	ublktest.WriteFUA(t, h, 8192, data)
	onDisk, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, onDisk[8192:8192+len(data)])
	assert.Equal(t, data[4096:], ublktest.Read(t, h, 8192+4096, 2*4096))

	allocs := testing.AllocsPerRun(200, func() {
		if res, err := h.Do(ublk.HarnessRequest{Op: ublk.OpRead, Length: 4096}); err != nil || res != 4096 {
			panic("read failed")
		}
	})
	assert.Zero(t, allocs)
}
