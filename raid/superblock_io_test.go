package raid

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestAlignedBlock(t *testing.T) {
	for range 100 {
		b := AlignedBlock()
		require.Len(t, b, SuperblockSize)
		require.Equal(t, SuperblockSize, cap(b), "append must not reach past the block")
		require.Zero(t, uintptr(unsafe.Pointer(&b[0]))%SuperblockSize)
		require.Equal(t, make([]byte, SuperblockSize), b)
	}
}

// writeRecord is one call to writeRecorder.WriteAt.
type writeRecord struct {
	off     int64
	n       int
	aligned bool
	data    []byte
}

// writeRecorder records every write and sync, to check the write pattern that
// O_DIRECT and crash safety depend on.
type writeRecorder struct {
	writes []writeRecord
	syncs  int
	// syncedAfter is the number of writes seen at the last sync.
	syncedAfter int
}

func (r *writeRecorder) WriteAt(p []byte, off int64) (int, error) {
	r.writes = append(r.writes, writeRecord{
		off:     off,
		n:       len(p),
		aligned: uintptr(unsafe.Pointer(&p[0]))%SuperblockSize == 0,
		data:    bytes.Clone(p),
	})
	return len(p), nil
}

func (r *writeRecorder) Sync() error {
	r.syncs++
	r.syncedAfter = len(r.writes)
	return nil
}

func TestWriteSuperblockIsOneAlignedWrite(t *testing.T) {
	sb := validSB()
	var r writeRecorder
	require.NoError(t, WriteSuperblock(&r, &sb))
	require.Len(t, r.writes, 1)
	w := r.writes[0]
	assert.Equal(t, int64(SuperblockOffset), w.off)
	assert.Equal(t, SuperblockSize, w.n)
	assert.True(t, w.aligned, "buffer must be 4 KiB aligned for O_DIRECT")
	assert.Equal(t, mustMarshal(t, sb), w.data)
	assert.Equal(t, 1, r.syncs)
	assert.Equal(t, 1, r.syncedAfter, "sync comes after the write")
}

func TestWriteSuperblockRefusesInvalid(t *testing.T) {
	sb := validSB()
	sb.Index = 99
	var r writeRecorder
	err := WriteSuperblock(&r, &sb)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Empty(t, r.writes, "nothing reaches the device")
}

func TestWipeSuperblockIsOneAlignedWrite(t *testing.T) {
	var r writeRecorder
	require.NoError(t, WipeSuperblock(&r))
	require.Len(t, r.writes, 1)
	w := r.writes[0]
	assert.Equal(t, int64(SuperblockOffset), w.off)
	assert.Equal(t, make([]byte, SuperblockSize), w.data)
	assert.True(t, w.aligned)
	assert.Equal(t, 1, r.syncs)
}

// sbMemberFile makes a file standing in for a member device, filled with a
// recognisable pattern so tests can see which bytes a write touched.
func sbMemberFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	pattern := make([]byte, size)
	for i := range pattern {
		pattern[i] = byte(i*7 + 3)
	}
	path := filepath.Join(t.TempDir(), "member")
	require.NoError(t, os.WriteFile(path, pattern, 0o600))
	return path, pattern
}

func TestSuperblockFileRoundTrip(t *testing.T) {
	const size = 2 << 20
	path, before := sbMemberFile(t, size)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()

	_, err = ReadSuperblock(f)
	require.ErrorIs(t, err, ErrNotMember, "a device never written by uraid")

	sb := validSB()
	require.NoError(t, WriteSuperblock(f, &sb))
	got, err := ReadSuperblock(f)
	require.NoError(t, err)
	assert.Equal(t, sb, *got)

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before[:SuperblockOffset], after[:SuperblockOffset], "bytes 0-4095 untouched")
	assert.Equal(t, before[SuperblockOffset+SuperblockSize:], after[SuperblockOffset+SuperblockSize:], "rest untouched")

	require.NoError(t, WipeSuperblock(f))
	_, err = ReadSuperblock(f)
	require.ErrorIs(t, err, ErrNotMember, "wiped")
	after, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before[:SuperblockOffset], after[:SuperblockOffset], "bytes 0-4095 untouched by wipe")
	assert.Equal(t, make([]byte, SuperblockSize), after[SuperblockOffset:SuperblockOffset+SuperblockSize])
	assert.Equal(t, before[SuperblockOffset+SuperblockSize:], after[SuperblockOffset+SuperblockSize:], "data untouched by wipe")
}

// TestSuperblockODirect checks that the buffers really satisfy O_DIRECT,
// which rejects unaligned memory with EINVAL.
func TestSuperblockODirect(t *testing.T) {
	path, _ := sbMemberFile(t, 1<<20)
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("%s does not support O_DIRECT; set TMPDIR to a disk file system", filepath.Dir(path))
	}
	require.NoError(t, err)
	defer f.Close()

	sb := validSB()
	require.NoError(t, WriteSuperblock(f, &sb))
	got, err := ReadSuperblock(f)
	require.NoError(t, err)
	assert.Equal(t, sb, *got)
	require.NoError(t, WipeSuperblock(f))
	_, err = ReadSuperblock(f)
	require.ErrorIs(t, err, ErrNotMember)

	// The same file rejects an unaligned buffer, so the checks above
	// would have caught a misaligned AlignedBlock.
	odd := make([]byte, SuperblockSize+1)[1:]
	if uintptr(unsafe.Pointer(&odd[0]))%512 != 0 {
		_, err = f.ReadAt(odd, SuperblockOffset)
		assert.ErrorIs(t, err, unix.EINVAL)
	}
}

func TestReadSuperblockTooSmall(t *testing.T) {
	for _, size := range []int{0, 100, SuperblockOffset, SuperblockOffset + SuperblockSize - 1} {
		_, err := ReadSuperblock(bytes.NewReader(make([]byte, size)))
		require.ErrorIs(t, err, ErrNotMember, "size %d", size)
		assert.Contains(t, err.Error(), "too small")
	}
}

// failingReader fails every read, as a dying disk would.
type failingReader struct{ err error }

func (r failingReader) ReadAt([]byte, int64) (int, error) { return 0, r.err }

func TestReadSuperblockIOError(t *testing.T) {
	_, err := ReadSuperblock(failingReader{unix.EIO})
	require.ErrorIs(t, err, unix.EIO)
	assert.NotErrorIs(t, err, ErrNotMember)
}

// exactReader returns io.EOF together with a full read, which io.ReaderAt
// allows at the end of the input.
type exactReader struct{ b []byte }

func (r exactReader) ReadAt(p []byte, off int64) (int, error) {
	n := copy(p, r.b[off:])
	if off+int64(n) == int64(len(r.b)) {
		return n, io.EOF
	}
	return n, nil
}

func TestReadSuperblockFullReadWithEOF(t *testing.T) {
	sb := validSB()
	dev := append(make([]byte, SuperblockOffset), mustMarshal(t, sb)...)
	got, err := ReadSuperblock(exactReader{dev})
	require.NoError(t, err)
	assert.Equal(t, sb, *got)
}

// shortWriter accepts only part of each write.
type shortWriter struct{}

func (shortWriter) WriteAt(p []byte, _ int64) (int, error) { return len(p) / 2, nil }

type errWriter struct{}

func (errWriter) WriteAt([]byte, int64) (int, error) { return 0, unix.ENOSPC }

func TestWriteSuperblockErrors(t *testing.T) {
	sb := validSB()
	err := WriteSuperblock(shortWriter{}, &sb)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "short write of 2048 of 4096")
	assert.ErrorIs(t, WriteSuperblock(errWriter{}, &sb), unix.ENOSPC)
	assert.ErrorIs(t, WipeSuperblock(errWriter{}), unix.ENOSPC)
}

// syncFailer accepts writes but fails to flush them, as a device that
// dropped off the bus would.
type syncFailer struct{ writeRecorder }

func (*syncFailer) Sync() error { return unix.EIO }

func TestWriteSuperblockSyncError(t *testing.T) {
	sb := validSB()
	var w syncFailer
	err := WriteSuperblock(&w, &sb)
	require.ErrorIs(t, err, unix.EIO, "a superblock that may not be on disk is not written")
	assert.Contains(t, err.Error(), "sync")
	assert.ErrorIs(t, WipeSuperblock(&w), unix.EIO)
}
