package uring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

const block = 4096

// mmapBuf returns page-aligned anonymous memory, the kind of buffer ublk
// hands the kernel: O_DIRECT-safe and invisible to the garbage collector.
func mmapBuf(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// openDirect opens a fresh file in the test directory with O_DIRECT, or
// without it (logged) where the filesystem refuses direct I/O.
func openDirect(t *testing.T) (*os.File, bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_DIRECT, 0o600)
	direct := true
	if errors.Is(err, unix.EINVAL) {
		t.Logf("%s refuses O_DIRECT; testing buffered I/O", filepath.Dir(path))
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		direct = false
	}
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, direct
}

// run submits what is queued, waits for n completions and returns them by
// user data.
func run(t *testing.T, r *Ring, n uint32) map[uint64]int32 {
	t.Helper()
	_, err := r.SubmitAndWait(n)
	require.NoError(t, err)
	got := reapAll(r)
	require.Len(t, got, int(n))
	return got
}

func TestWriteReadDirect(t *testing.T) {
	r := newRing(t, 8)
	f, _ := openDirect(t)
	fd := int(f.Fd())

	const blocks = 4
	src := mmapBuf(t, blocks*block)
	for i := range src {
		src[i] = byte(i*7 + i/block)
	}
	// One write per block, at reversed offsets, all in flight together.
	for i := range blocks {
		sqe := r.NextSQE()
		PrepWrite(sqe, fd, addr(src[i*block:]), block, uint64((blocks-1-i)*block))
		sqe.UserData = uint64(i)
	}
	for ud, res := range run(t, r, blocks) {
		assert.Equal(t, int32(block), res, "write %d", ud)
	}

	sqe := r.NextSQE()
	PrepFsync(sqe, fd, true)
	sqe.UserData = 99
	assert.Equal(t, map[uint64]int32{99: 0}, run(t, r, 1))

	dst := mmapBuf(t, blocks*block)
	sqe = r.NextSQE()
	PrepRead(sqe, fd, addr(dst), blocks*block, 0)
	sqe.UserData = 5
	assert.Equal(t, map[uint64]int32{5: blocks * block}, run(t, r, 1))
	for i := range blocks {
		want := src[(blocks-1-i)*block : (blocks-i)*block]
		assert.True(t, bytes.Equal(want, dst[i*block:(i+1)*block]), "block %d differs", i)
	}

	// Reading past the end returns 0 bytes, not an error.
	sqe = r.NextSQE()
	PrepRead(sqe, fd, addr(dst), block, blocks*block)
	sqe.UserData = 6
	assert.Equal(t, map[uint64]int32{6: 0}, run(t, r, 1))

	// An unaligned O_DIRECT read fails in the CQE, not in the ring.
	if _, direct := openDirect(t); direct {
		sqe = r.NextSQE()
		PrepRead(sqe, fd, addr(dst)+1, block, 0)
		sqe.UserData = 7
		assert.Equal(t, map[uint64]int32{7: -int32(unix.EINVAL)}, run(t, r, 1))
	}
}

func TestFsyncBothKinds(t *testing.T) {
	r := newRing(t, 4)
	f, err := tempFile(t)
	require.NoError(t, err)
	_, err = f.Write([]byte("journal"))
	require.NoError(t, err)
	PrepFsync(r.NextSQE(), int(f.Fd()), false)
	PrepFsync(r.NextSQE(), int(f.Fd()), true)
	sqe := r.NextSQE()
	PrepFsync(sqe, 1<<20, false) // not an open fd
	sqe.UserData = 2
	_, err = r.SubmitAndWait(3)
	require.NoError(t, err)
	var res []int32
	r.ForEachCQE(func(c *uapi.CQE) { res = append(res, c.Res) })
	assert.ElementsMatch(t, []int32{0, 0, -int32(unix.EBADF)}, res)
}

func TestFallocatePunchHole(t *testing.T) {
	r := newRing(t, 4)
	f, err := tempFile(t)
	require.NoError(t, err)
	fd := int(f.Fd())
	const size = 64 * block
	data := bytes.Repeat([]byte{0xAB}, size)
	_, err = f.WriteAt(data, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())

	var before unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &before))

	sqe := r.NextSQE()
	PrepFallocate(sqe, fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 16*block, 32*block)
	sqe.UserData = 1
	res := run(t, r, 1)[1]
	if res == -int32(unix.EOPNOTSUPP) {
		t.Skip("filesystem of the test directory cannot punch holes")
	}
	require.Zero(t, res)

	var after unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &after))
	assert.Equal(t, int64(size), after.Size, "KEEP_SIZE keeps the size")
	assert.Equal(t, before.Blocks-32*block/512, after.Blocks, "the punched blocks are freed")

	hole, err := unix.Seek(fd, 0, unix.SEEK_HOLE)
	require.NoError(t, err)
	assert.Equal(t, int64(16*block), hole)
	dataAt, err := unix.Seek(fd, hole, unix.SEEK_DATA)
	require.NoError(t, err)
	assert.Equal(t, int64(48*block), dataAt)

	got := make([]byte, size)
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, data[:16*block], got[:16*block])
	assert.Equal(t, make([]byte, 32*block), got[16*block:48*block])
	assert.Equal(t, data[48*block:], got[48*block:])
}

func TestDiscardOnRegularFileIsRefused(t *testing.T) {
	// BLOCK_URING_CMD_DISCARD needs a block device; on a regular file the
	// command must come back as a CQE error, proving the SQE layout is
	// accepted by the ring and routed to the file.
	r := newRing(t, 2)
	f, err := tempFile(t)
	require.NoError(t, err)
	sqe := r.NextSQE()
	PrepDiscard(sqe, int(f.Fd()), 0, block)
	assert.Equal(t, uint32(uapi.BLOCK_URING_CMD_DISCARD), sqe.CmdOp())
	assert.Equal(t, uint64(block), sqe.Addr3)
	sqe.UserData = 3
	assert.Equal(t, map[uint64]int32{3: -int32(unix.EOPNOTSUPP)}, run(t, r, 1))
}
