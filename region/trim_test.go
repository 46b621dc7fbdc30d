package region

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startTrim(t *testing.T, m *Map, off, n int64) Trim {
	t.Helper()
	tr, err := m.StartTrim(off, n)
	require.NoError(t, err)
	return tr
}

func TestTrim(t *testing.T) {
	const r = 4096
	t.Run("whole regions", func(t *testing.T) {
		rg := newRig(t, geom(4), InSync, 2)
		tr := startTrim(t, rg.m, r/2, 3*r) // regions 1 and 2 whole
		f, e := tr.Regions()
		assert.Equal(t, [2]int{1, 3}, [2]int{f, e})
		assert.Equal(t, InSync, rg.m.State(1), "not before it completes")
		assert.Equal(t, 2, rg.m.EndTrim(tr))
		assert.Equal(t, []State{InSync, Trimmed, Trimmed, InSync}, states(rg.m))
		assert.Equal(t, 0, rg.m.EndTrim(tr), "twice is harmless")
		assert.True(t, rg.m.RangeTrimmed(r, 2*r))
		assert.False(t, rg.m.RangeTrimmed(r, 3*r))
		assert.False(t, rg.m.Urgent(), "trims are lazy")
		rg.flush(FlushChanged)
		m, _ := rg.load()
		assert.Equal(t, Trimmed, m.State(2), "on disk after the flush")
	})
	t.Run("partial region", func(t *testing.T) {
		rg := newRig(t, geom(4), InSync, 1)
		tr := startTrim(t, rg.m, 512, r)
		assert.Equal(t, Trim{}, tr)
		assert.Equal(t, 0, rg.m.EndTrim(tr))
	})
	t.Run("the partial last region, to the end", func(t *testing.T) {
		g := geom(3)
		g.ArraySize -= 1024
		rg := newRig(t, g, InSync, 1)
		assert.Equal(t, 1, rg.m.EndTrim(startTrim(t, rg.m, 2*r, r-1024)))
		assert.Equal(t, Trimmed, rg.m.State(2))
	})
	t.Run("a write between arrival and completion cancels", func(t *testing.T) {
		rg := newRig(t, geom(2), InSync, 1)
		tr := startTrim(t, rg.m, 0, 2*r)
		rg.write(0, true)
		assert.Equal(t, 1, rg.m.EndTrim(tr))
		assert.Equal(t, []State{Dirty, Trimmed}, states(rg.m))
	})
	t.Run("a write in flight at arrival cancels", func(t *testing.T) {
		rg := newRig(t, geom(1), InSync, 1)
		_, err := rg.m.BeginWrite(0, 512)
		require.NoError(t, err)
		tr := startTrim(t, rg.m, 0, r)
		rg.flush(FlushUrgent)
		require.NoError(t, rg.m.EndWrite(0, 512, true))
		assert.Equal(t, 0, rg.m.EndTrim(tr))
		assert.Equal(t, Dirty, rg.m.State(0))
	})
	t.Run("overlapping discards", func(t *testing.T) {
		rg := newRig(t, geom(1), InSync, 1)
		d1 := startTrim(t, rg.m, 0, r)
		rg.write(0, true)
		d2 := startTrim(t, rg.m, 0, r)
		assert.Equal(t, 0, rg.m.EndTrim(d1), "a write came after d1 arrived")
		assert.Equal(t, 1, rg.m.EndTrim(d2), "none after d2 did")
		d3 := startTrim(t, rg.m, 0, r)
		d4 := startTrim(t, rg.m, 0, r)
		rg.write(0, true)
		d5 := startTrim(t, rg.m, 0, r)
		assert.Equal(t, 0, rg.m.EndTrim(d4))
		assert.Equal(t, 0, rg.m.EndTrim(d3))
		assert.Equal(t, 1, rg.m.EndTrim(d5))
	})
	t.Run("a trim that completes makes a region need no resync", func(t *testing.T) {
		rg := newRig(t, geom(2), Dirty, 1)
		assert.Equal(t, 2, rg.m.EndTrim(startTrim(t, rg.m, 0, 2*r)))
		assert.Equal(t, 0, rg.m.Resyncs())
	})
	t.Run("a write makes a trimmed region dirty on disk first", func(t *testing.T) {
		rg := newRig(t, geom(1), Trimmed, 2)
		gen, err := rg.m.BeginWrite(0, 512)
		require.NoError(t, err)
		assert.NotZero(t, gen)
		assert.True(t, rg.m.Urgent())
	})
}

// TestTrimDegraded: no trim while a member is away, nor from a discard that
// arrived before it left, even if it is back when the discard completes.
func TestTrimDegraded(t *testing.T) {
	const r = 4096
	rg := newRig(t, geom(2), InSync, 2)
	m := rg.m
	before := startTrim(t, m, 0, 2*r)
	m.SetDegraded(true)
	assert.Equal(t, Trim{}, startTrim(t, m, 0, 2*r), "the absent member does not trim")
	assert.Equal(t, 0, m.EndTrim(before), "ends while degraded")
	m.SetDegraded(false)
	assert.Equal(t, 0, m.EndTrim(before), "arrived before the member left")
	assert.Equal(t, []State{InSync, InSync}, states(m))
	after := startTrim(t, m, 0, 2*r)
	assert.Equal(t, 2, m.EndTrim(after))
}

func TestPending(t *testing.T) {
	const r = 4096
	rg := newRig(t, geom(4), InSync, 1)
	p := NewPending[int](2)
	assert.True(t, p.Add(Trim{}, 9), "nothing to keep")
	assert.True(t, p.Add(startTrim(t, rg.m, 0, r), 1))
	assert.True(t, p.Add(startTrim(t, rg.m, r, r), 2))
	assert.False(t, p.Add(startTrim(t, rg.m, 2*r, r), 3), "full: forgotten")
	assert.Equal(t, 2, p.Len())
	assert.Equal(t, 1, p.Poll(rg.m, func(tk int) bool { return tk == 2 }))
	assert.Equal(t, 1, p.Len())
	assert.Equal(t, []State{InSync, Trimmed, InSync, InSync}, states(rg.m))
	assert.Equal(t, 1, p.Poll(rg.m, func(int) bool { return true }))
	assert.Equal(t, 0, p.Len())
	assert.Equal(t, []State{Trimmed, Trimmed, InSync, InSync}, states(rg.m))
}

// TestTrimLargestArray: rounding to whole regions must not overflow at the
// end of the largest array.
func TestTrimLargestArray(t *testing.T) {
	g := Geometry{ArrayUUID: testUUID, ArraySize: 1<<63 - 1, RegionSize: 1 << 45}
	m, err := New(g, InSync)
	require.NoError(t, err)
	last := int64(m.Regions()-1) << 45
	tr := startTrim(t, m, last+512, g.ArraySize-last-512)
	assert.Equal(t, Trim{}, tr, "the last region is not covered whole")
	tr = startTrim(t, m, last, g.ArraySize-last)
	f, e := tr.Regions()
	assert.Equal(t, [2]int{m.Regions() - 1, m.Regions()}, [2]int{f, e})
	assert.Equal(t, 1, m.EndTrim(tr))
	gen, err := m.BeginWrite(g.ArraySize-512, 512)
	require.NoError(t, err)
	assert.NotZero(t, gen)
	require.NoError(t, m.Verify())
}
