package robust

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seq is a history of operations one after another, on block 0.
type seq struct{ h *history }

func (s seq) op(kind opKind, val uint64, out uint64) seq {
	c := s.h.now()
	in := blockIn{kind: kind, val: val}
	if kind == kFlush || kind == kPowerLoss || kind == kKill {
		s.h.addGlobal(0, in, c, s.h.now())
		return s
	}
	s.h.add(0, in, out, c, s.h.now())
	return s
}

func linearizable(t *testing.T, s seq) bool {
	t.Helper()
	v, err := s.h.check(10 * time.Second)
	require.NoError(t, err)
	return v == nil
}

// TestBlockModel: the model accepts what a block device with a volatile cache may do and
// refuses what it may not.
func TestBlockModel(t *testing.T) {
	n := func() seq { return seq{newHistory()} }
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kRead, 0, 1)))
	assert.False(t, linearizable(t, n().op(kWrite, 1, 0).op(kRead, 0, 2)), "a read of a value never written")
	assert.False(t, linearizable(t, n().op(kWrite, 1, 0).op(kWrite, 2, 0).op(kRead, 0, 1)), "a read going back")
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kDiscard, 0, 0).op(kRead, 0, 7).op(kRead, 0, 0)), "a discarded block reads as anything")
	// Power loss: what was flushed stays, what was written since may or may not.
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kFlush, 0, 0).op(kWrite, 2, 0).op(kPowerLoss, 0, 0).op(kRead, 0, 1)))
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kFlush, 0, 0).op(kWrite, 2, 0).op(kPowerLoss, 0, 0).op(kRead, 0, 2)))
	assert.False(t, linearizable(t, n().op(kWrite, 1, 0).op(kFlush, 0, 0).op(kPowerLoss, 0, 0).op(kRead, 0, valZero)), "a flushed write lost")
	assert.False(t, linearizable(t, n().op(kWrite, 1, 0).op(kFlush, 0, 0).op(kWrite, 2, 0).op(kPowerLoss, 0, 0).op(kRead, 0, 2).op(kRead, 0, 1)),
		"after a power loss the block holds one value")
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kFlush, 0, 0).op(kWrite, 2, 0).op(kPowerLoss, 0, 0).op(kRead, 0, 1).op(kPowerLoss, 0, 0).op(kRead, 0, 1)))
	assert.False(t, linearizable(t, n().op(kWrite, 1, 0).op(kWrite, 2, 0).op(kKill, 0, 0).op(kRead, 0, 1)), "a kill keeps what the disks took")
	// FUA is durable at once; a write cut off may or may not have happened.
	fua := n()
	c := fua.h.now()
	fua.h.add(0, blockIn{kind: kWrite, val: 1, fua: true}, 0, c, fua.h.now())
	assert.False(t, linearizable(t, fua.op(kPowerLoss, 0, 0).op(kRead, 0, valZero)), "a FUA write lost")
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kWriteMaybe, 2, 0).op(kRead, 0, 1)))
	assert.True(t, linearizable(t, n().op(kWrite, 1, 0).op(kWriteMaybe, 2, 0).op(kRead, 0, 2)))
}

// TestBlockModelConcurrent: a read overlapping a write may see either value; flushes in a quiet
// stretch collapse without changing the verdict.
func TestBlockModelConcurrent(t *testing.T) {
	h := newHistory()
	h.add(0, blockIn{kind: kWrite, val: 1}, 0, 1, 2)
	h.add(1, blockIn{kind: kWrite, val: 2}, 0, 3, 6)
	h.add(2, blockIn{kind: kRead}, 1, 4, 5)
	for i := int64(0); i < 50; i++ {
		h.addGlobal(3, blockIn{kind: kFlush}, 7+2*i, 8+2*i)
	}
	h.addGlobal(3, blockIn{kind: kPowerLoss}, 200, 200)
	h.add(2, blockIn{kind: kRead}, 2, 201, 202)
	assert.Len(t, h.relevant(h.ops[0]), 2, "fifty flushes in one quiet stretch and a power loss")
	v, err := h.check(10 * time.Second)
	require.NoError(t, err)
	assert.Nil(t, v)
	h.add(2, blockIn{kind: kRead}, 1, 203, 204) // w2 was flushed: it cannot read w1 again
	v, err = h.check(10 * time.Second)
	require.NoError(t, err)
	assert.NotNil(t, v)
}

func TestValueOf(t *testing.T) {
	b := make([]byte, Block)
	assert.Equal(t, uint64(valZero), valueOf(b, 3))
	fillBlock(b, 42, 3)
	assert.Equal(t, uint64(42), valueOf(b, 3))
	assert.Equal(t, uint64(valGarbage), valueOf(b, 4), "another block's data")
	b[100] ^= 1
	assert.Equal(t, uint64(valGarbage), valueOf(b, 3), "a torn block")
}
