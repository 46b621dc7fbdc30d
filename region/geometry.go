package region

import (
	"fmt"
	"math/bits"
)

// On-disk sizes. The map area is the caller's: the bytes of a member between
// its superblock and its data, read and written in whole blocks.
const (
	// BlockSize is the unit of every map read and write: one aligned
	// block, so that O_DIRECT works and one region update rewrites exactly
	// one block.
	BlockSize = 4096
	// blockHeaderSize is the prefix every block starts with.
	blockHeaderSize = 64
	// RegionsPerBlock is how many regions one map block describes, at two
	// bits each after its header.
	RegionsPerBlock = (BlockSize - blockHeaderSize) * 8 / bitsPerRegion

	bitsPerRegion = 2
	// regions per packed word of the in-memory images: 32 at two bits.
	regionsPerWord = 64 / bitsPerRegion
	wordsPerBlock  = RegionsPerBlock / regionsPerWord

	// MinRegionSize is the smallest region ChooseRegionSize picks. The
	// first write to a clean region waits for one metadata write, so a
	// region should be large against a request (uraid's are 512 KiB at
	// most by default, so one touches at most two regions) and a
	// sequential stream should pay that wait rarely; and a region is only
	// trimmed when a discard covers it whole, so it should be small
	// against the extents a filesystem frees. 1 MiB is the largest size at which a
	// 1 GiB array still has 1024 regions.
	MinRegionSize = 1 << 20
	// MaxRegions bounds the region count, and with it the memory the map
	// takes (about 22 bytes a region: 5.5 MiB at most) and the number of
	// regions a random write load keeps dirty. Past 256 GiB regions grow
	// instead: 4 MiB at 1 TiB, 256 MiB at 64 TiB.
	MaxRegions = 1 << 18

	minRegionShift = 12 // a region is at least a page
	maxRegionShift = 62 // and its size fits an int64
)

// Geometry says which array a map describes and how it is cut into
// regions. Regions are in the array's logical address space: region r holds
// bytes [r*RegionSize, (r+1)*RegionSize) of the array, the last one cut at
// ArraySize.
type Geometry struct {
	// ArrayUUID ties the map to its array: blocks of another array's map,
	// left on a reused device, are never taken for this one's.
	ArrayUUID [16]byte
	// ArraySize is the array's size in bytes.
	ArraySize int64
	// RegionSize is a power of two, at least 4 KiB (ChooseRegionSize picks
	// one).
	RegionSize int64
}

// Regions is the number of regions, the last one possibly partial.
func (g Geometry) Regions() int {
	if g.ArraySize <= 0 || g.RegionSize <= 0 {
		return 0
	}
	return int((g.ArraySize-1)/g.RegionSize + 1)
}

// MapBlocks is the number of map blocks after the header block.
func (g Geometry) MapBlocks() int {
	return (g.Regions() + RegionsPerBlock - 1) / RegionsPerBlock
}

// AreaBytes is how many bytes of the map area the map uses: the header
// block and the map blocks.
func (g Geometry) AreaBytes() int64 { return int64(1+g.MapBlocks()) * BlockSize }

func (g Geometry) shift() uint { return uint(bits.TrailingZeros64(uint64(g.RegionSize))) }

// Check reports the first field no map can have. The error wraps
// ErrGeometry.
func (g Geometry) Check() error {
	if g.ArrayUUID == ([16]byte{}) {
		return fmt.Errorf("%w: array UUID is all zeros", ErrGeometry)
	}
	if g.ArraySize <= 0 {
		return fmt.Errorf("%w: array size %d bytes: want a positive size", ErrGeometry, g.ArraySize)
	}
	r := g.RegionSize
	if r < 1<<minRegionShift || r&(r-1) != 0 || r > 1<<maxRegionShift {
		return fmt.Errorf("%w: region size %d bytes: want a power of two from 4 KiB to 2^%d",
			ErrGeometry, r, maxRegionShift)
	}
	if n := g.Regions(); n > MaxRegions {
		return fmt.Errorf("%w: %d regions of %d bytes for %d bytes; at most %d (choose the region size with ChooseRegionSize)",
			ErrGeometry, n, r, g.ArraySize, MaxRegions)
	}
	return nil
}

// ChooseRegionSize picks the region size of an array of arraySize bytes
// whose members have areaBytes bytes for the map (from the end of the
// superblock to the data offset): the smallest power of two of at least
// MinRegionSize that keeps the region count within MaxRegions and within
// what the area holds, as md sizes its bitmap chunk from the space it has.
func ChooseRegionSize(arraySize, areaBytes int64) (int64, error) {
	if arraySize <= 0 {
		return 0, fmt.Errorf("%w: array size %d bytes: want a positive size", ErrGeometry, arraySize)
	}
	blocks := areaBytes / BlockSize
	if blocks < 2 {
		return 0, fmt.Errorf("%w: %d bytes between the superblock and the data hold %d map blocks; "+
			"the map needs a header and one map block (%d bytes): use a larger data offset",
			ErrGeometry, areaBytes, max(blocks, 0), 2*BlockSize)
	}
	capacity := int64(MaxRegions)
	if fit := (blocks - 1) * RegionsPerBlock; fit < capacity {
		capacity = fit
	}
	for shift := uint(bits.TrailingZeros(MinRegionSize)); shift <= maxRegionShift; shift++ {
		if (arraySize-1)>>shift+1 <= capacity {
			return 1 << shift, nil
		}
	}
	// Unreachable: 2^62-byte regions cut any int64 size into at most two.
	return 0, fmt.Errorf("%w: no region size fits %d bytes in %d map blocks", ErrGeometry, arraySize, blocks-1)
}
