package region

import (
	"fmt"
	"math/bits"
)

// State is what the map says of a region. The codes are the on-disk values.
type State uint8

// Region states.
const (
	// InSync: every copy holds the same bytes.
	InSync State = 0
	// Dirty: a write may be in flight or unacknowledged on some copy, or
	// was not known to reach every copy; the copies may differ.
	Dirty State = 1
	// Trimmed: a discard covering the whole region completed on every
	// copy and nothing was written to it since. Its bytes are free space
	// to the array's user and mean nothing: a check skips it, a rebuild
	// trims it on the new member instead of copying it.
	Trimmed State = 2
)

func (s State) String() string {
	switch s {
	case InSync:
		return "in-sync"
	case Dirty:
		return "dirty"
	case Trimmed:
		return "trimmed"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Packed images: two bits per region, 32 regions per word, region r at
// word r/32, bits 2*(r%32). The same layout is used on disk (in little-
// endian words), so a block is encoded by copying its words.

// lowBits has the low bit of every two-bit field set.
const lowBits = 0x5555555555555555

func get(img []uint64, r int) State { return State(img[r>>5] >> (uint(r&31) * 2) & 3) }

func put(img []uint64, r int, s State) {
	sh := uint(r&31) * 2
	w := &img[r>>5]
	*w = *w&^(3<<sh) | uint64(s)<<sh
}

// dirtyBits returns the low bit of each field of w whose code reads as
// dirty: 1, or 3, which is never written and errs on the safe side.
func dirtyBits(w uint64) uint64 { return w & lowBits }

// trimmedBits returns the low bit of each field of w that is exactly
// Trimmed.
func trimmedBits(w uint64) uint64 { return w >> 1 & lowBits &^ w }

// normal maps every field of w to InSync, Dirty or Trimmed.
func normal(w uint64) uint64 { return dirtyBits(w) | trimmedBits(w)<<1 }

// matching returns the low bit of each field of w equal to s.
func matching(w uint64, s State) uint64 {
	x := w ^ uint64(s)*lowBits
	return ^(x | x>>1) & lowBits
}

// Bitmaps: one bit per region, region r at word r/64, bit r%64.

func testBit(bm []uint64, r int) bool { return bm[r>>6]>>(uint(r)&63)&1 != 0 }
func setBit(bm []uint64, r int)       { bm[r>>6] |= 1 << (uint(r) & 63) }
func clearBit(bm []uint64, r int)     { bm[r>>6] &^= 1 << (uint(r) & 63) }

// nextBit returns the first set bit in [from, to), or -1.
func nextBit(bm []uint64, from, to int) int {
	for from < to {
		w := bm[from>>6] >> (uint(from) & 63)
		if w != 0 {
			if r := from + bits.TrailingZeros64(w); r < to {
				return r
			}
			return -1
		}
		from = (from | 63) + 1
	}
	return -1
}

// nextState returns the first region in [from, to) of img in state s, or
// -1.
func nextState(img []uint64, s State, from, to int) int {
	for from < to {
		w := matching(img[from>>5], s) >> (uint(from&31) * 2)
		if w != 0 {
			if r := from + bits.TrailingZeros64(w)/2; r < to {
				return r
			}
			return -1
		}
		from = (from | 31) + 1
	}
	return -1
}
