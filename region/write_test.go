package region

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteIntent walks the flush protocol: the first write to a clean
// region waits for one metadata write, writes that arrive meanwhile wait for
// the next one, and writes to regions dirty on disk go at once.
func TestWriteIntent(t *testing.T) {
	rg := newRig(t, geom(RegionsPerBlock+2), InSync, 2)
	m := rg.m
	require.Equal(t, uint64(1), m.Durable(), "the new map is written")

	gen, err := m.BeginWrite(0, 4096)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), gen, "a clean region waits for the next flush")
	assert.True(t, m.Urgent())
	gen2, err := m.BeginWrite(512, 512)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), gen2, "a second write to it waits for the same flush")

	g, blocks, err := m.Flush(FlushUrgent, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(2), g)
	require.Len(t, blocks, 1, "one region update rewrites one block")
	assert.Equal(t, int64(BlockSize), blocks[0].Offset)
	assert.False(t, m.Urgent())

	// While it is in flight.
	gen3, err := m.BeginWrite(0, 512)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), gen3, "its region is dirty in the flush in flight")
	gen4, err := m.BeginWrite(RegionsPerBlock<<12, 4096)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), gen4, "a region of another block waits for the next flush")
	gen5, err := m.BeginWrite(4096, 512)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), gen5, "so does another region of the block in flight")
	assert.True(t, m.Urgent())
	_, _, err = m.Flush(FlushUrgent, nil)
	assert.ErrorIs(t, err, ErrProtocol, "one flush at a time")

	require.NoError(t, m.Flushed(2))
	assert.Equal(t, uint64(2), m.Durable())
	gen6, err := m.BeginWrite(0, 4096)
	require.NoError(t, err)
	assert.Zero(t, gen6, "dirty on disk now: the hot path")

	g, blocks, err = m.Flush(FlushUrgent, make([]Block, 0, m.Blocks()))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), g)
	assert.Len(t, blocks, 2, "both blocks the waiting writes need, one flush")
	require.NoError(t, m.Flushed(3))
	rg.verify()

	for _, w := range [][2]int64{{0, 4096}, {512, 512}, {0, 512}, {RegionsPerBlock << 12, 4096}, {4096, 512}, {0, 4096}} {
		require.NoError(t, m.EndWrite(w[0], w[1], true))
	}
	assert.Equal(t, 0, m.Writes())
	rg.verify()
}

func TestWriteErrors(t *testing.T) {
	rg := newRig(t, geom(4), InSync, 1)
	m := rg.m
	for _, w := range [][2]int64{{-512, 512}, {0, 0}, {0, -1}, {4 << 12, 512}, {3 << 12, 4097}, {1, 1<<63 - 1}} {
		_, err := m.BeginWrite(w[0], w[1])
		assert.ErrorIs(t, err, ErrRange, "BeginWrite(%d, %d)", w[0], w[1])
		assert.ErrorIs(t, m.EndWrite(w[0], w[1], true), ErrRange, "EndWrite(%d, %d)", w[0], w[1])
		_, err = m.StartTrim(w[0], w[1])
		assert.ErrorIs(t, err, ErrRange, "StartTrim(%d, %d)", w[0], w[1])
	}
	assert.ErrorIs(t, m.EndWrite(0, 512, true), ErrProtocol, "no write begun")
	_, err := m.BeginWrite(0, 8192)
	require.NoError(t, err)
	assert.ErrorIs(t, m.EndWrite(0, 3*4096, true), ErrProtocol, "a range with no write in its last region")
	assert.Equal(t, 1, m.Writes(), "a refused EndWrite changes nothing")
	require.NoError(t, m.EndWrite(0, 8192, true))
	assert.ErrorIs(t, m.Flushed(m.Gen()), ErrProtocol, "no flush in flight")
	assert.ErrorIs(t, m.FlushFailed(m.Gen()), ErrProtocol, "no flush in flight")
	gen, _, err := m.Flush(FlushAll, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, m.Flushed(gen-1), ErrProtocol, "another generation")
	require.NoError(t, m.Flushed(gen))
	rg.verify()

	m.writes = MaxWrites
	_, err = m.BeginWrite(0, 512)
	assert.ErrorIs(t, err, ErrProtocol, "past MaxWrites")
}

// TestFlushFailed: the writes that waited for a flush that failed wait for
// the next one, which carries its blocks again.
func TestFlushFailed(t *testing.T) {
	rg := newRig(t, geom(4), InSync, 2)
	m := rg.m
	gen, err := m.BeginWrite(0, 512)
	require.NoError(t, err)
	g, _, err := m.Flush(FlushUrgent, nil)
	require.NoError(t, err)
	require.Equal(t, gen, g)
	require.NoError(t, m.FlushFailed(g))
	assert.Less(t, m.Durable(), gen)
	assert.True(t, m.Urgent(), "the block goes out again")
	again, err := m.BeginWrite(0, 512)
	require.NoError(t, err)
	assert.Equal(t, g+1, again, "not dirty on disk for certain")
	rg.flush(FlushUrgent)
	assert.GreaterOrEqual(t, m.Durable(), gen)
	ready, err := m.BeginWrite(0, 512)
	require.NoError(t, err)
	assert.Zero(t, ready)
	for range 3 {
		require.NoError(t, m.EndWrite(0, 512, true))
	}
	rg.verify()
}

// TestFailedWriteNeedsResync: a write that failed on some copy keeps its
// region dirty, on disk, until it is resynced; lazy cleaning leaves it.
func TestFailedWriteNeedsResync(t *testing.T) {
	rg := newRig(t, geom(4), InSync, 2)
	rg.write(2, false)
	assert.True(t, rg.m.NeedsResync(2))
	assert.Equal(t, 0, rg.m.Clean(0, 0))
	rg.flush(FlushChanged)
	m, _ := rg.load()
	assert.Equal(t, Dirty, m.State(2))
	assert.True(t, m.NeedsResync(2))
	require.True(t, rg.m.Resynced(2))
	assert.Equal(t, InSync, rg.m.State(2))
}

// TestNewDirty: a map made with every region dirty needs a full resync and
// makes every write wait for its first flush.
func TestNewDirty(t *testing.T) {
	m, err := New(geom(3), Dirty)
	require.NoError(t, err)
	assert.Equal(t, 3, m.Resyncs())
	gen, err := m.BeginWrite(0, 512)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), gen, "nothing is on disk yet")
	assert.Equal(t, 0, m.ResyncFrom(0))
	assert.Equal(t, 1, m.ResyncFrom(1))
	assert.Equal(t, 0, m.ResyncFrom(99), "out of range starts over")
	require.NoError(t, m.Verify())
}
