package region

import (
	"encoding/binary"
	"testing"
	"time"
)

// FuzzDecodeHeader feeds arbitrary blocks to the header decoder, which must
// never panic. Each input is zero padded or cut to BlockSize and decoded as
// it is; random bytes rarely carry the magic and almost never a valid
// checksum, so it is then decoded again with the magic set and the
// checksum recomputed, which lets the fuzzer reach the field checks. What
// the decoder accepts must survive an encode/decode round trip unchanged.
func FuzzDecodeHeader(f *testing.F) {
	f.Add(fuzzHeader(geom(40), Cursor{Action: ActionResync, Position: 7, Started: 3}))
	f.Add(fuzzHeader(Geometry{ArrayUUID: testUUID, ArraySize: 64 * tib, RegionSize: 256 * mib}, Cursor{}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		block := make([]byte, BlockSize)
		copy(block, data)
		checkHeaderRoundTrip(t, block)
		copy(block, Magic[:])
		seal(block)
		checkHeaderRoundTrip(t, block)
	})
}

func fuzzHeader(g Geometry, c Cursor) []byte {
	b := make([]byte, BlockSize)
	encodeHeader(b, g, 5, c)
	return b[:112] // the rest is zero: padding brings it back
}

func checkHeaderRoundTrip(t *testing.T, block []byte) {
	h, err := DecodeHeader(block)
	if err != nil {
		return
	}
	again := make([]byte, BlockSize)
	encodeHeader(again, h.Geometry, h.Sequence, h.Cursor)
	h2, err := DecodeHeader(again)
	if err != nil {
		t.Fatalf("decoded header %+v does not decode once encoded: %v", h, err)
	}
	h.Minor = 0 // the encoder writes its own minor
	if h2 != h {
		t.Fatalf("round trip changed the header:\n got %+v\nwant %+v", h2, h)
	}
}

// FuzzLoad builds member map areas from arbitrary bytes and loads them.
// Load must never panic, must return a map that passes Verify, and must
// merge safely: a region comes out trimmed only if every copy says
// trimmed, and dirty whenever some copy says dirty or cannot be read.
//
// The first bytes choose the geometry and, per member and block, whether
// the block is written as uraid would (with a valid checksum) from the
// input's bytes, left as raw input, or left empty; so the fuzzer reaches
// the merge, not only the checksum.
func FuzzLoad(f *testing.F) {
	f.Add([]byte{0, 0, 2, 0b0101, 0x55, 0xaa, 0x12})
	f.Add([]byte{0x3f, 0x00, 3, 0b011001, 0xff, 0x00, 0x02, 0x01})
	f.Add([]byte{0x01, 0x40, 2, 0b1111, 0x22, 0x88})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		n := 1 + int(binary.LittleEndian.Uint16(data))%(2*RegionsPerBlock+7)
		members := 1 + int(data[2])%3
		how := data[3]
		payload := data[4:]
		g := geom(n)
		areas := make([][]byte, members)
		var k int
		for i := range areas {
			a := make([]byte, g.AreaBytes())
			for b := range 1 + g.MapBlocks() {
				block := a[b*BlockSize : (b+1)*BlockSize]
				choice := how >> (k % 4 * 2) & 3
				k++
				fill(block, payload, k)
				switch {
				case choice == 0: // empty
					clear(block)
				case choice == 1: // raw input
				case b == 0:
					encodeHeader(block, g, uint64(k), Cursor{})
				default:
					words := make([]uint64, wordsPerBlock)
					for w := range words {
						words[w] = binary.LittleEndian.Uint64(block[blockHeaderSize+w*8%(BlockSize-blockHeaderSize-8):])
					}
					encodeMapBlock(block, g, b-1, uint64(k), words)
				}
			}
			areas[i] = a
		}
		m, _, err := Load(testUUID, g.ArraySize, areas)
		if err != nil {
			return
		}
		if err := m.Verify(); err != nil {
			t.Fatalf("loaded map: %v", err)
		}
		// Each copy of each block, decoded once: nil when unusable.
		copies := make([][][]uint64, len(areas))
		for i, a := range areas {
			for b := range m.Geometry().MapBlocks() {
				words := make([]uint64, wordsPerBlock)
				if _, err := decodeMapBlock(a[(1+b)*BlockSize:(2+b)*BlockSize], m.Geometry(), b, words); err != nil {
					words = nil
				}
				copies[i] = append(copies[i], words)
			}
		}
		for r := range m.Regions() {
			anyDirty, allTrimmed := false, true
			for i := range areas {
				s := Dirty
				if words := copies[i][r/RegionsPerBlock]; words != nil {
					s = State(normal(words[(r%RegionsPerBlock)>>5]) >> (uint(r%32) * 2) & 3)
				}
				anyDirty = anyDirty || s == Dirty
				allTrimmed = allTrimmed && s == Trimmed
			}
			switch s := m.State(r); {
			case s == Trimmed && !allTrimmed:
				t.Fatalf("region %d trimmed, but not on every copy", r)
			case anyDirty && s != Dirty:
				t.Fatalf("region %d is %s, but some copy is dirty or unreadable", r, s)
			case s == Dirty && !m.NeedsResync(r):
				t.Fatalf("region %d loaded dirty and needs no resync", r)
			}
		}
	})
}

// fill copies payload into block, cycling it, shifted by k so that each
// block differs.
func fill(block, payload []byte, k int) {
	if len(payload) == 0 {
		return
	}
	for i := range block {
		block[i] = payload[(i+k)%len(payload)]
	}
}

// FuzzRequests drives the request side of a map of any geometry with any
// offsets and lengths, the largest array included: no call may panic, bad
// ranges must be refused, and the invariants must hold throughout.
func FuzzRequests(f *testing.F) {
	f.Add(uint64(1<<63-1), uint8(45), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint64(1<<30), uint8(20), []byte{9, 200, 3, 0, 0, 1, 255, 255, 255})
	f.Add(uint64(4097), uint8(12), []byte{})
	// A discard inside the last region of the largest array, unaligned:
	// rounding up to a region boundary must not overflow.
	f.Add(uint64(1<<64-1), uint8(45), []byte{0x83, 0xe8, 0x03, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, size uint64, shift uint8, ops []byte) {
		g := Geometry{ArrayUUID: testUUID, ArraySize: int64(size >> 1), RegionSize: 1 << (shift % 64)}
		m, err := New(g, State(shift%3))
		if err != nil {
			return
		}
		var begun [][2]int64
		var trims []Trim
		for len(ops) >= 9 {
			op, x := ops[0], int64(binary.LittleEndian.Uint64(ops[1:9]))
			ops = ops[9:]
			// Offsets near both ends, lengths from one sector to the array.
			off := x % max(g.ArraySize, 1)
			if op&0x80 != 0 {
				off = g.ArraySize - 1 - off
			}
			n := max(1, g.ArraySize-off) >> (op >> 3 & 15)
			if n == 0 {
				n = 1
			}
			switch op & 7 {
			case 0, 1:
				if _, err := m.BeginWrite(off, n); err == nil {
					begun = append(begun, [2]int64{off, n})
				}
			case 2:
				if len(begun) > 0 {
					w := begun[len(begun)-1]
					begun = begun[:len(begun)-1]
					if err := m.EndWrite(w[0], w[1], op&0x40 == 0); err != nil {
						t.Fatalf("EndWrite of a begun write: %v", err)
					}
				}
			case 3:
				if tr, err := m.StartTrim(off, n); err == nil {
					trims = append(trims, tr)
				}
			case 4:
				if len(trims) > 0 {
					m.EndTrim(trims[0])
					trims = trims[1:]
				}
			case 5:
				gen, _, err := m.Flush(FlushMode(op>>3%3), nil)
				if err == nil && gen != 0 {
					_ = m.Flushed(gen)
				}
			case 6:
				m.Clean(time.Duration(x), time.Duration(op))
				m.SetDegraded(op&0x40 != 0)
			default:
				m.RangeTrimmed(x, int64(op)-100)
				m.RangeNeedsResync(x, int64(op))
				m.Resynced(m.RegionOf(x))
				_, _ = m.BeginWrite(x, int64(op)-100)
				_, _ = m.StartTrim(x, -x)
				// EndWrite must name a range begun as one write; with
				// none begun, any range is refused.
				if len(begun) == 0 && m.Writes() == 0 {
					if err := m.EndWrite(off, n, true); err == nil {
						t.Fatalf("EndWrite(%d, %d) with no write begun succeeded", off, n)
					}
				}
			}
		}
		if err := m.Verify(); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	})
}
