package region

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	kib = int64(1) << 10
	mib = kib << 10
	gib = mib << 10
	tib = gib << 10
	pib = tib << 10
)

// defaultArea is the map area of a member with the default 1 MiB data
// offset: from the end of the superblock (8 KiB) to the data.
const defaultArea = 1*mib - 8*kib

func TestChooseRegionSize(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size, area  int64
		region      int64
		regions     int
		mapBlocks   int
		description string
	}{
		{"one sector", 512, defaultArea, 1 * mib, 1, 1, "the minimum region"},
		{"64 MiB test array", 64 * mib, defaultArea, 1 * mib, 64, 1, ""},
		{"1 GiB test array", 1 * gib, defaultArea, 1 * mib, 1024, 1, "still 1024 regions"},
		{"256 GiB", 256 * gib, defaultArea, 1 * mib, MaxRegions, 17, "largest array at the minimum region"},
		{"256 GiB and a sector", 256*gib + 512, defaultArea, 2 * mib, MaxRegions/2 + 1, 9, ""},
		{"1 TiB", 1 * tib, defaultArea, 4 * mib, MaxRegions, 17, ""},
		{"64 TiB member of a raid1", 64 * tib, defaultArea, 256 * mib, MaxRegions, 17, "fits with 236 blocks to spare"},
		{"64 TiB and a MiB", 64*tib + mib, defaultArea, 512 * mib, MaxRegions/2 + 1, 9, ""},
		{"1024 members of 64 TiB, raid0", 64 * pib, defaultArea, 256 * gib, MaxRegions, 17, ""},
		{"largest offset", math.MaxInt64, defaultArea, 1 << 45, MaxRegions, 17, ""},
		{"two blocks: 1 GiB", 1 * gib, 2 * BlockSize, 1 * mib, 1024, 1, "one map block is enough"},
		{"two blocks: 64 TiB", 64 * tib, 2 * BlockSize, 8 * gib, 8192, 1, "one map block holds 16128 regions"},
		{"three blocks: 64 TiB", 64 * tib, 3 * BlockSize, 4 * gib, 16384, 2, ""},
		{"two blocks and a half", 64 * tib, 2*BlockSize + 2048, 8 * gib, 8192, 1, "a partial block is no block"},
		{"a huge area", 64 * tib, 1 * gib, 256 * mib, MaxRegions, 17, "MaxRegions bounds memory, not the area"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseRegionSize(tc.size, tc.area)
			require.NoError(t, err)
			assert.Equal(t, tc.region, got, "region size")
			g := Geometry{ArrayUUID: testUUID, ArraySize: tc.size, RegionSize: got}
			require.NoError(t, g.Check())
			assert.Equal(t, tc.regions, g.Regions(), "regions")
			assert.Equal(t, tc.mapBlocks, g.MapBlocks(), "map blocks")
			assert.LessOrEqual(t, g.AreaBytes(), tc.area, "the map fits the area")
			// The smallest that fits: half the size would not.
			if got > MinRegionSize {
				half := Geometry{ArrayUUID: testUUID, ArraySize: tc.size, RegionSize: got / 2}
				assert.True(t, half.Check() != nil || half.AreaBytes() > tc.area, "half the region size would fit too")
			}
		})
	}
}

func TestChooseRegionSizeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		size, area int64
		want       string
	}{
		{"empty array", 0, defaultArea, "array size 0"},
		{"negative array", -1, defaultArea, "array size -1"},
		{"one block", 1 * gib, BlockSize, "hold 1 map blocks"},
		{"no area", 1 * gib, 0, "hold 0 map blocks"},
		{"negative area", 1 * gib, -BlockSize, "hold 0 map blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ChooseRegionSize(tc.size, tc.area)
			require.ErrorIs(t, err, ErrGeometry)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestGeometryCheck(t *testing.T) {
	ok := Geometry{ArrayUUID: testUUID, ArraySize: gib, RegionSize: mib}
	require.NoError(t, ok.Check())
	for _, tc := range []struct {
		name string
		edit func(*Geometry)
		want string
	}{
		{"zero UUID", func(g *Geometry) { g.ArrayUUID = [16]byte{} }, "UUID is all zeros"},
		{"zero size", func(g *Geometry) { g.ArraySize = 0 }, "array size 0"},
		{"region not a power of two", func(g *Geometry) { g.RegionSize = 3 * mib }, "power of two"},
		{"region below a page", func(g *Geometry) { g.RegionSize = 2048 }, "power of two from 4 KiB"},
		{"region zero", func(g *Geometry) { g.RegionSize = 0 }, "power of two"},
		{"too many regions", func(g *Geometry) { g.ArraySize, g.RegionSize = gib+1, 4*kib }, "262145 regions of 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := ok
			tc.edit(&g)
			err := g.Check()
			require.True(t, errors.Is(err, ErrGeometry), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = New(g, InSync)
			assert.ErrorIs(t, err, ErrGeometry)
		})
	}
	_, err := New(ok, State(3))
	assert.ErrorIs(t, err, ErrGeometry, "an initial state that is none")
}
