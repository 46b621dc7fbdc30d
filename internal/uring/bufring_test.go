package uring

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// TestBufRingSelectsAndRecycles reads a file through a provided-buffer
// group: each read takes the next listed buffer and says which, a read with
// none left fails with ENOBUFS, and a buffer given back with Add and Advance
// is taken again. A tail published wrongly shows as ENOBUFS or a wrong id.
func TestBufRingSelectsAndRecycles(t *testing.T) {
	r, err := New(8)
	require.NoError(t, err)
	defer r.Close()
	const n, size, bgid = 4, 64, 3
	br, err := r.RegisterBufRing(bgid, n)
	require.NoError(t, err)
	defer func() { assert.NoError(t, br.Close()) }()

	path := filepath.Join(t.TempDir(), "data")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i + 1)
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()

	mem := mmapBuf(t, n*size)
	for bid := range n {
		br.Add(addr(mem[bid*size:]), size, uint16(bid), bid)
	}
	br.Advance(n)

	read := func(ud uint64) uapi.CQE {
		sqe := r.NextSQE()
		require.NotNil(t, sqe)
		PrepRead(sqe, int(f.Fd()), 0, size, 0)
		sqe.Flags |= uapi.IOSQE_BUFFER_SELECT
		sqe.BufIndex = bgid
		sqe.UserData = ud
		_, err := r.SubmitAndWait(1)
		require.NoError(t, err)
		cqe, ok := r.PeekCQE()
		require.True(t, ok)
		c := *cqe
		r.AdvanceCQ(1)
		return c
	}
	seen := map[uint16]bool{}
	for i := range n {
		c := read(uint64(i))
		require.Equal(t, int32(size), c.Res, "read %d", i)
		require.NotZero(t, c.Flags&uapi.IORING_CQE_F_BUFFER, "read %d names no buffer", i)
		bid := uint16(c.Flags >> uapi.IORING_CQE_BUFFER_SHIFT)
		require.Less(t, int(bid), n)
		assert.False(t, seen[bid], "buffer %d taken twice", bid)
		seen[bid] = true
		assert.Equal(t, data, mem[int(bid)*size:int(bid+1)*size], "buffer %d", bid)
		clear(mem[int(bid)*size : int(bid+1)*size])
	}
	c := read(10)
	assert.Equal(t, -int32(unix.ENOBUFS), c.Res, "a read with every buffer taken")

	br.Add(addr(mem[2*size:]), size, 2, 0)
	br.Advance(1)
	c = read(11)
	require.Equal(t, int32(size), c.Res)
	assert.Equal(t, uint16(2), uint16(c.Flags>>uapi.IORING_CQE_BUFFER_SHIFT), "the buffer given back")
	assert.Equal(t, data, mem[2*size:3*size])
}

func TestBufRingRefusesBadSize(t *testing.T) {
	r, err := New(8)
	require.NoError(t, err)
	defer r.Close()
	for _, n := range []int{0, 3, 1 << 16} {
		_, err := r.RegisterBufRing(1, n)
		assert.ErrorContains(t, err, "power of two", "%d entries", n)
	}
}
