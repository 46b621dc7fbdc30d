package uring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Fixed I/O from and into registered application buffers, at an address
// inside the slot: the data lands where the table says, and an address
// outside the slot fails in the CQE.
func TestFixedBuffers(t *testing.T) {
	r := newRing(t, 8)
	f, _ := openDirect(t)
	fd := int(f.Fd())
	src, dst := mmapBuf(t, 2*block), mmapBuf(t, 2*block)
	for i := range src {
		src[i] = byte(i * 13)
	}
	if err := r.RegisterBuffers([][]byte{src, dst}); err != nil {
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) {
			t.Skipf("cannot pin buffers here: %v", err)
		}
		require.NoError(t, err)
	}

	// The second block of slot 0 to file offset 0, then back into the
	// first block of slot 1.
	sqe := r.NextSQE()
	PrepWriteFixed(sqe, fd, 0, uint64(addr(src))+block, block, 0)
	sqe.UserData = 1
	assert.Equal(t, map[uint64]int32{1: block}, run(t, r, 1))
	sqe = r.NextSQE()
	PrepReadFixed(sqe, fd, 1, uint64(addr(dst)), block, 0)
	sqe.UserData = 2
	assert.Equal(t, map[uint64]int32{2: block}, run(t, r, 1))
	assert.True(t, bytes.Equal(src[block:], dst[:block]))

	sqe = r.NextSQE()
	PrepReadFixed(sqe, fd, 1, uint64(addr(dst))+block, 2*block, 0)
	sqe.UserData = 3
	assert.Equal(t, map[uint64]int32{3: -int32(unix.EFAULT)}, run(t, r, 1), "past the end of the slot")

	require.NoError(t, r.UnregisterBuffers())
}

// A sparse table has slots but no buffers: fixed I/O on an empty slot
// fails, and a slot past the table is refused too.
func TestSparseBuffers(t *testing.T) {
	r := newRing(t, 4)
	f, _ := openDirect(t)
	require.NoError(t, r.RegisterBuffersSparse(4))
	for i, idx := range []uint16{0, 9} {
		sqe := r.NextSQE()
		PrepReadFixed(sqe, int(f.Fd()), idx, 0, block, 0)
		sqe.UserData = uint64(i)
	}
	got := run(t, r, 2)
	assert.Equal(t, -int32(unix.EFAULT), got[0], "empty slot")
	assert.Equal(t, -int32(unix.EFAULT), got[1], "slot past the table")
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.RegisterBuffersSparse(4), ErrClosed)
}
