package uring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/uapi"
)

// fillPastCQ submits batches of NOPs without reaping until total
// completions exist, far more than the CQ holds.
func fillPastCQ(t *testing.T, r *Ring, total int) {
	t.Helper()
	for i := 0; i < total; {
		for i < total {
			sqe := r.NextSQE()
			if sqe == nil {
				break
			}
			PrepNop(sqe)
			sqe.UserData = uint64(i)
			i++
		}
		_, err := r.Submit()
		require.NoError(t, err)
	}
}

func TestOverflowLosesNothingForEach(t *testing.T) {
	r := newRing(t, 4)
	require.Equal(t, uint32(8), r.CQEntries())
	const total = 200
	fillPastCQ(t, r, total)

	assert.Equal(t, r.CQEntries(), r.cqReady(), "the CQ itself is full")
	assert.True(t, r.cqNeedsEnter(), "the kernel flags parked completions")

	seen := make(map[uint64]int)
	n := r.ForEachCQE(func(c *uapi.CQE) {
		assert.Zero(t, c.Res)
		seen[c.UserData]++
	})
	assert.Equal(t, total, n)
	require.Len(t, seen, total)
	for ud, times := range seen {
		assert.Equal(t, 1, times, "user data %d", ud)
	}
	assert.False(t, r.cqNeedsEnter())
	assert.Zero(t, r.Dropped())
}

func TestOverflowLosesNothingPeek(t *testing.T) {
	r := newRing(t, 4, WithCQSize(4))
	const total = 64
	fillPastCQ(t, r, total)
	seen := make(map[uint64]bool)
	for {
		c, ok := r.PeekCQE()
		if !ok {
			break
		}
		seen[c.UserData] = true
		r.AdvanceCQ(1)
	}
	assert.Len(t, seen, total)
}

func TestSubmitAndWaitWithFullCQ(t *testing.T) {
	// With the CQ full and completions parked, a wait must still return
	// (the completions are ready) and new submissions must not be lost.
	r := newRing(t, 4)
	fillPastCQ(t, r, 40)
	sqe := r.NextSQE()
	PrepNop(sqe)
	sqe.UserData = 1000
	_, err := r.SubmitAndWait(1)
	require.NoError(t, err)
	got := map[uint64]bool{}
	for {
		if r.ForEachCQE(func(c *uapi.CQE) { got[c.UserData] = true }) == 0 && r.Queued() == 0 {
			break
		}
		_, err := r.Submit()
		require.NoError(t, err)
	}
	assert.Len(t, got, 41)
	assert.True(t, got[1000])
}
