package region

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildArea encodes a member's whole map area: a header of sequence hseq
// with cursor c, and map blocks of sequence bseq holding st (raw two-bit
// codes, so that code 3 can be written too).
func buildArea(g Geometry, hseq uint64, c Cursor, bseq uint64, st []uint8) []byte {
	area := make([]byte, g.AreaBytes())
	encodeHeader(area[:BlockSize], g, hseq, c)
	words := make([]uint64, g.MapBlocks()*wordsPerBlock)
	for r, s := range st {
		put(words, r, State(s))
	}
	for b := range g.MapBlocks() {
		encodeMapBlock(area[(1+b)*BlockSize:(2+b)*BlockSize], g, b, bseq, words[b*wordsPerBlock:])
	}
	return area
}

func loadAreas(t *testing.T, g Geometry, areas ...[]byte) (*Map, Report) {
	t.Helper()
	m, rep, err := Load(g.ArrayUUID, g.ArraySize, areas)
	require.NoError(t, err)
	require.NoError(t, m.Verify())
	return m, rep
}

// TestLoadMerge: per region, dirty if any copy says so, trimmed only if all
// do; so a member that missed updates can only add dirt.
func TestLoadMerge(t *testing.T) {
	g := geom(1)
	names := []string{"in-sync", "dirty", "trimmed", "code 3"}
	want := [4][4]State{
		//        in-sync  dirty  trimmed  code 3
		/* in-sync */ {InSync, Dirty, InSync, Dirty},
		/* dirty   */ {Dirty, Dirty, Dirty, Dirty},
		/* trimmed */ {InSync, Dirty, Trimmed, Dirty},
		/* code 3  */ {Dirty, Dirty, Dirty, Dirty},
	}
	for a := range 4 {
		for b := range 4 {
			t.Run(fmt.Sprintf("%s+%s", names[a], names[b]), func(t *testing.T) {
				m, rep := loadAreas(t, g,
					buildArea(g, 5, Cursor{}, 5, []uint8{uint8(a)}),
					buildArea(g, 5, Cursor{}, 4, []uint8{uint8(b)}))
				assert.Equal(t, want[a][b], m.State(0))
				assert.Equal(t, want[a][b] == Dirty, m.NeedsResync(0), "dirty on disk means resync")
				assert.Equal(t, a != b, rep.Disagree == 1, "disagreement reported")
				assert.Equal(t, a != b, m.Changed(), "a disagreement is written back")
				// Alone, each copy is read as it is (code 3 as dirty).
				alone, _ := loadAreas(t, g, buildArea(g, 5, Cursor{}, 5, []uint8{uint8(a)}))
				assert.Equal(t, want[a][a], alone.State(0))
			})
		}
	}
}

// TestLoadBadCopyMakesBlockDirty: a torn, damaged, missing or foreign copy
// of a block makes every region of that block dirty, and only of that block.
func TestLoadBadCopyMakesBlockDirty(t *testing.T) {
	g := Geometry{ArrayUUID: testUUID, ArraySize: (RegionsPerBlock + 10) << 12, RegionSize: 1 << 12}
	st := make([]uint8, g.Regions())
	for r := range st {
		st[r] = uint8(r % 3)
	}
	foreign := g
	foreign.ArrayUUID[15] ^= 1
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"torn", func(a []byte) []byte {
			copy(a[BlockSize+512:BlockSize+1024], make([]byte, 512))
			return a
		}},
		{"damaged", func(a []byte) []byte { a[BlockSize+3000] ^= 0x10; return a }},
		{"never written", func(a []byte) []byte { clear(a[BlockSize : 2*BlockSize]); return a }},
		{"another array's", func(a []byte) []byte {
			encodeMapBlock(a[BlockSize:2*BlockSize], foreign, 0, 9, make([]uint64, wordsPerBlock))
			return a
		}},
		{"another region size", func(a []byte) []byte {
			coarse := g
			coarse.RegionSize *= 2
			encodeMapBlock(a[BlockSize:2*BlockSize], coarse, 0, 9, make([]uint64, wordsPerBlock))
			return a
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := buildArea(g, 3, Cursor{}, 3, st)
			bad := tc.edit(buildArea(g, 3, Cursor{}, 3, st))
			m, rep := loadAreas(t, g, good, bad)
			assert.Equal(t, 1, rep.BadBlocks)
			require.Len(t, rep.Problems, 1)
			assert.Contains(t, rep.Problems[0].Error(), "area 1, map block 0")
			for r := range g.Regions() {
				want := State(st[r])
				if r < RegionsPerBlock {
					want = Dirty
				}
				if m.State(r) != want {
					t.Fatalf("region %d is %s, want %s", r, m.State(r), want)
				}
			}
			assert.True(t, m.Changed())
		})
	}
	t.Run("area too short", func(t *testing.T) {
		good := buildArea(g, 3, Cursor{}, 3, st)
		m, rep := loadAreas(t, g, good, good[:2*BlockSize])
		assert.Equal(t, 1, rep.BadBlocks)
		assert.Equal(t, Dirty, m.State(RegionsPerBlock+1), "the block it lacks")
		assert.Equal(t, State(st[1]), m.State(1), "the block it has")
	})
}

func TestLoadHeaderChoice(t *testing.T) {
	g := geom(40)
	st := make([]uint8, 40)
	older := Cursor{Action: ActionResync, Position: 3, Started: 2}
	newer := Cursor{Action: ActionResync, Position: 9, Started: 2}

	t.Run("newest header wins and is written back", func(t *testing.T) {
		m, rep := loadAreas(t, g, buildArea(g, 5, older, 5, st), buildArea(g, 7, newer, 7, st))
		assert.Equal(t, 1, rep.Header)
		assert.Equal(t, newer, m.Cursor())
		assert.Equal(t, uint64(7), m.Gen())
		assert.Equal(t, uint64(7), m.Durable())
		assert.True(t, m.Changed(), "the older header is rewritten")
		gen, blocks, err := m.Flush(FlushChanged, nil)
		require.NoError(t, err)
		assert.Equal(t, uint64(8), gen, "generations go on from the newest on disk")
		assert.Equal(t, int64(0), blocks[0].Offset)
	})
	t.Run("agreeing members need no rewrite", func(t *testing.T) {
		m, rep := loadAreas(t, g, buildArea(g, 7, newer, 7, st), buildArea(g, 7, newer, 7, st))
		assert.Equal(t, 0, rep.Header)
		assert.Empty(t, rep.Problems)
		assert.False(t, m.Changed())
	})
	t.Run("block newer than the header", func(t *testing.T) {
		m, _ := loadAreas(t, g, buildArea(g, 5, older, 12, st))
		assert.Equal(t, uint64(12), m.Gen())
	})
	t.Run("headers lost: geometry from the blocks, cursor reset", func(t *testing.T) {
		a, b := buildArea(g, 5, older, 5, st), buildArea(g, 5, older, 5, st)
		a[100] ^= 1
		clear(b[:BlockSize])
		st2 := append([]uint8{}, st...)
		st2[4] = uint8(Trimmed)
		copy(a[BlockSize:], buildArea(g, 5, older, 6, st2)[BlockSize:])
		copy(b[BlockSize:], buildArea(g, 5, older, 6, st2)[BlockSize:])
		m, rep := loadAreas(t, g, a, b)
		assert.Equal(t, -1, rep.Header)
		assert.Len(t, rep.Problems, 2)
		assert.Equal(t, Cursor{}, m.Cursor())
		assert.Equal(t, g, m.Geometry())
		assert.Equal(t, Trimmed, m.State(4))
		assert.True(t, m.Changed(), "the header is rewritten")
	})
	t.Run("a header of another array or size is ignored", func(t *testing.T) {
		foreign := g
		foreign.ArrayUUID[0] ^= 1
		resized := g
		resized.ArraySize -= 4096
		m, rep := loadAreas(t, g, buildArea(foreign, 9, Cursor{}, 9, st), buildArea(resized, 9, Cursor{}, 9, st), buildArea(g, 4, older, 4, st))
		assert.Equal(t, 2, rep.Header)
		assert.Equal(t, older, m.Cursor())
		// The resized area's map block is of this array and region size:
		// its regions still mean the same bytes, so it is merged.
		require.Len(t, rep.Problems, 3, "two headers, and the foreign area's map block")
		assert.Contains(t, rep.Problems[0].Error(), "area 0, header")
		assert.Contains(t, rep.Problems[0].Error(), "not of this array")
		assert.Contains(t, rep.Problems[1].Error(), "the array has 163840")
		assert.Equal(t, Dirty, m.State(0), "the foreign area's block is unusable")
	})
	t.Run("no map anywhere", func(t *testing.T) {
		_, _, err := Load(testUUID, g.ArraySize, [][]byte{make([]byte, g.AreaBytes()), make([]byte, 100)})
		require.ErrorIs(t, err, ErrNotMap)
		assert.Contains(t, err.Error(), "made before region maps")
		_, _, err = Load(testUUID, g.ArraySize, nil)
		require.ErrorIs(t, err, ErrNotMap)
	})
	t.Run("a newer major version is refused", func(t *testing.T) {
		a := buildArea(g, 5, Cursor{}, 5, st)
		le.PutUint16(a[8:], 2)
		reseal(a[:BlockSize])
		_, _, err := Load(testUUID, g.ArraySize, [][]byte{buildArea(g, 5, Cursor{}, 5, st), a})
		require.ErrorIs(t, err, ErrUnsupportedVersion)
		assert.Contains(t, err.Error(), "area 1")
	})
}

// TestLoadAfterCrash: what a dirty load means — every region dirty on disk
// needs resync, and is not cleaned before it is resynced.
func TestLoadAfterCrash(t *testing.T) {
	g := geom(6)
	m, rep := loadAreas(t, g, buildArea(g, 3, Cursor{}, 3, []uint8{0, 1, 2, 1, 0, 0}))
	assert.Equal(t, 2, rep.Resync)
	assert.Equal(t, 1, rep.Trimmed)
	assert.Equal(t, []State{InSync, Dirty, Trimmed, Dirty, InSync, InSync}, states(m))
	assert.Equal(t, 1, m.NextResync(0))
	assert.Equal(t, 3, m.NextResync(2))
	assert.Equal(t, -1, m.NextResync(4))
	assert.Equal(t, 0, m.Clean(0, 0), "a region that needs resync is not cleaned")
	assert.True(t, m.RangeNeedsResync(4096, 1))
	assert.False(t, m.RangeNeedsResync(0, 4096))
	// Writes to loaded dirty regions go at once: they are dirty on disk.
	gen, err := m.BeginWrite(1<<12, 512)
	require.NoError(t, err)
	assert.Zero(t, gen)
	require.True(t, m.Resynced(1))
	assert.Equal(t, Dirty, m.State(1), "still dirty while a write is in flight")
	require.NoError(t, m.EndWrite(1<<12, 512, true))
	require.True(t, m.Resynced(3))
	assert.Equal(t, InSync, m.State(3))
	assert.Equal(t, 0, m.Resyncs())
	require.NoError(t, m.Verify())
}
