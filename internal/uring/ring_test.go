package uring

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

func newRing(t testing.TB, entries uint32, opts ...Option) *Ring {
	t.Helper()
	r, err := New(entries, opts...)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("io_uring unavailable on this host: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

// reapAll collects every ready completion by user data.
func reapAll(r *Ring) map[uint64]int32 {
	got := map[uint64]int32{}
	r.ForEachCQE(func(c *uapi.CQE) { got[c.UserData] = c.Res })
	return got
}

func TestNewSizes(t *testing.T) {
	tests := []struct {
		name       string
		entries    uint32
		opts       []Option
		wantSQ     uint32
		wantCQ     uint32
		wantSQE128 bool
	}{
		{"default cq is twice sq", 8, nil, 8, 16, false},
		{"entries round up to a power of two", 5, nil, 8, 16, false},
		{"explicit cq size", 4, []Option{WithCQSize(64)}, 4, 64, false},
		{"sqe128", 4, []Option{WithSQE128()}, 4, 8, true},
		{"extra flags", 16, []Option{WithFlags(uapi.IORING_SETUP_COOP_TASKRUN)}, 16, 32, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing(t, tt.entries, tt.opts...)
			assert.Equal(t, tt.wantSQ, r.SQEntries())
			assert.Equal(t, tt.wantCQ, r.CQEntries())
			assert.Equal(t, tt.wantSQE128, r.NextSQE128() != nil)
			assert.NotZero(t, r.Features()&uapi.IORING_FEAT_NODROP)
			assert.Greater(t, r.Fd(), 2)
		})
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name    string
		entries uint32
		opts    []Option
		errno   error
	}{
		{"zero entries", 0, nil, unix.EINVAL},
		{"cq smaller than sq", 16, []Option{WithCQSize(4)}, unix.EINVAL},
		{"too many entries", 1 << 20, nil, unix.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.entries, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, r)
			assert.ErrorIs(t, err, tt.errno)
		})
	}
	_, err := New(4, WithFlags(uapi.IORING_SETUP_SQPOLL))
	assert.ErrorContains(t, err, "not supported")
}

func TestCloseTwiceAndUseAfterClose(t *testing.T) {
	r, err := New(4)
	require.NoError(t, err)
	fd := r.Fd()
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	// The fd really is closed.
	_, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	assert.ErrorIs(t, err, unix.EBADF)

	assert.Nil(t, r.NextSQE())
	_, err = r.Submit()
	assert.ErrorIs(t, err, ErrClosed)
	_, ok := r.PeekCQE()
	assert.False(t, ok)
	assert.Zero(t, r.ForEachCQE(func(*uapi.CQE) {}))
}

func TestNopRoundTrips(t *testing.T) {
	r := newRing(t, 8)
	for round := range 100 {
		for i := range 8 {
			sqe := r.NextSQE()
			require.NotNil(t, sqe, "round %d slot %d", round, i)
			PrepNop(sqe)
			sqe.UserData = uint64(round*8 + i)
		}
		n, err := r.SubmitAndWait(8)
		require.NoError(t, err)
		require.Equal(t, 8, n)
		got := reapAll(r)
		require.Len(t, got, 8)
		for i := range 8 {
			res, ok := got[uint64(round*8+i)]
			require.True(t, ok, "missing user data %d", round*8+i)
			require.Zero(t, res)
		}
	}
	_, ok := r.PeekCQE()
	assert.False(t, ok, "no completion may remain")
}

func TestPeekAndAdvance(t *testing.T) {
	r := newRing(t, 4)
	for i := range 3 {
		sqe := r.NextSQE()
		PrepNop(sqe)
		sqe.UserData = uint64(100 + i)
	}
	_, err := r.SubmitAndWait(3)
	require.NoError(t, err)
	for i := range 3 {
		cqe, ok := r.PeekCQE()
		require.True(t, ok)
		assert.Equal(t, uint64(100+i), cqe.UserData, "completions come in order for inline NOPs")
		// Peeking twice returns the same entry.
		again, _ := r.PeekCQE()
		assert.Equal(t, cqe, again)
		r.CQESeen()
	}
	_, ok := r.PeekCQE()
	assert.False(t, ok)
}

func TestFullSubmissionQueue(t *testing.T) {
	r := newRing(t, 4)
	for i := range 4 {
		sqe := r.NextSQE()
		require.NotNil(t, sqe, "slot %d", i)
		PrepNop(sqe)
		sqe.UserData = uint64(i)
	}
	assert.Nil(t, r.NextSQE(), "a full SQ hands out nothing")
	assert.Equal(t, uint32(4), r.Queued())

	n, err := r.Submit()
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.Zero(t, r.Queued())

	// Consumed slots are free again, even before their CQEs are reaped.
	sqe := r.NextSQE()
	require.NotNil(t, sqe)
	PrepNop(sqe)
	sqe.UserData = 4
	_, err = r.SubmitAndWait(5)
	require.NoError(t, err)
	assert.Len(t, reapAll(r), 5)
}

func TestNextSQEIsZeroed(t *testing.T) {
	r := newRing(t, 2, WithSQE128())
	for range 3 {
		s := r.NextSQE128()
		require.NotNil(t, s)
		// Dirty the whole slot, submit it as a NOP, and check the slot
		// comes back clean next time round.
		for i := range s.Ext {
			s.Ext[i] = 0xFF
		}
		s.Addr3, s.Pad2, s.Off = ^uint64(0), ^uint64(0), ^uint64(0)
		s.Opcode = uapi.IORING_OP_NOP
		s.UserData = 7
		_, err := r.SubmitAndWait(1)
		require.NoError(t, err)
		reapAll(r)
		s2 := r.NextSQE128()
		require.NotNil(t, s2)
		assert.Equal(t, uapi.SQE128{}, *s2)
		PrepNop(&s2.SQE)
		_, err = r.SubmitAndWait(1)
		require.NoError(t, err)
		reapAll(r)
	}
}

func TestSQE128URingCmdReachesKernel(t *testing.T) {
	r := newRing(t, 4, WithSQE128())
	f, err := tempFile(t)
	require.NoError(t, err)
	s := r.NextSQE128()
	require.NotNil(t, s)
	PrepURingCmd(&s.SQE, int(f.Fd()), uapi.UBLK_U_CMD_GET_FEATURES)
	s.CtrlCmd().Len = uapi.UBLK_FEATURES_LEN
	s.UserData = 1
	res, err := r.SubmitAndWaitOne()
	require.NoError(t, err)
	// A regular file has no uring_cmd handler: the kernel parsed the
	// SQE and refused the command rather than the ring.
	assert.Equal(t, -int32(unix.EOPNOTSUPP), res)
	runtime.KeepAlive(f)
}

// The count is of system calls, not of calls to Submit: one with nothing
// queued and nothing to wait for enters nothing, and a caller's counter
// sees what the ring's own would.
func TestEntersCounted(t *testing.T) {
	var n atomic.Uint64
	r := newRing(t, 8, WithEnterCounter(&n))
	_, err := r.Submit()
	require.NoError(t, err)
	assert.Zero(t, r.Enters(), "a submit of nothing enters the kernel")
	for round := range 3 {
		PrepNop(r.NextSQE())
		_, err := r.SubmitAndWait(1)
		require.NoError(t, err)
		reapAll(r)
		assert.EqualValues(t, round+1, r.Enters())
	}
	assert.EqualValues(t, 3, n.Load())

	own := newRing(t, 8)
	PrepNop(own.NextSQE())
	_, err = own.Submit()
	require.NoError(t, err)
	assert.EqualValues(t, 1, own.Enters())
}
