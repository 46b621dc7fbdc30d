package region

import (
	"bytes"
	"errors"
	"fmt"
)

// Report says what Load found on the members.
type Report struct {
	// Header is the index of the area whose header was used: the valid one
	// with the highest sequence. -1 when none was usable; the region size
	// then came from the map blocks, and the cursor starts empty.
	Header int
	// Problems lists every header or block copy that could not be used,
	// naming its area and block.
	Problems []error
	// BadBlocks counts map blocks made dirty whole because some copy of
	// them could not be used.
	BadBlocks int
	// Disagree counts map blocks whose copies decoded but differed; they
	// were merged region by region, pessimistically.
	Disagree int
	// Resync is the number of regions that need resync, Trimmed the number
	// trimmed on every member.
	Resync, Trimmed int
}

// Load rebuilds the map of the array uuid of arraySize bytes from its
// members' map areas (one byte slice per member, each the area from its
// start, at least Geometry.AreaBytes long). Pass every member that is in
// the array, stale ones too: their maps are merged pessimistically, region
// by region, so a member that missed updates can only add dirt:
//
//   - a region is Dirty if any copy says so, or if any copy of its block is
//     torn, corrupt, missing or of another array;
//   - it is Trimmed only if every copy says so;
//   - otherwise it is InSync.
//
// Every region that comes out Dirty needs resync: on disk, dirty means some
// write may have reached one copy and not another when the array stopped —
// a crash, a kill, a failed write, or writes while a member was away. A
// clean stop leaves no region dirty except those.
//
// It fails with ErrNoMap when no area holds a usable map of this array (an
// array made before region maps, or wiped: make one with New, every region
// Dirty unless the array is known to have stopped cleanly), and with
// ErrUnsupportedVersion when a newer uraid wrote one. A damaged copy is not
// an error: it is merged as dirty and listed in the Report.
func Load(uuid [16]byte, arraySize int64, areas [][]byte) (*Map, Report, error) {
	rep := Report{Header: -1}
	problem := func(area, block int, err error) {
		if block == 0 {
			rep.Problems = append(rep.Problems, fmt.Errorf("area %d, header: %w", area, err))
		} else {
			rep.Problems = append(rep.Problems, fmt.Errorf("area %d, map block %d: %w", area, block-1, err))
		}
	}
	var hdr Header
	for i, a := range areas {
		if len(a) < BlockSize {
			problem(i, 0, fmt.Errorf("%w: area is %d bytes, shorter than a block", ErrCorrupt, len(a)))
			continue
		}
		h, err := DecodeHeader(a[:BlockSize])
		switch {
		case errors.Is(err, ErrUnsupportedVersion):
			return nil, rep, fmt.Errorf("load region map: area %d: %w", i, err)
		case err != nil:
			problem(i, 0, err)
			continue
		case h.Geometry.ArrayUUID != uuid:
			problem(i, 0, fmt.Errorf("%w: header of array %x, not of this array %x", ErrInvalid, h.Geometry.ArrayUUID, uuid))
			continue
		case h.Geometry.ArraySize != arraySize:
			problem(i, 0, fmt.Errorf("%w: header describes %d bytes, the array has %d", ErrInvalid, h.Geometry.ArraySize, arraySize))
			continue
		}
		if rep.Header < 0 || h.Sequence > hdr.Sequence {
			hdr, rep.Header = h, i
		}
	}
	g := hdr.Geometry
	if rep.Header < 0 {
		var ok bool
		if g, ok = geometryFromBlocks(uuid, arraySize, areas); !ok {
			return nil, rep, fmt.Errorf("load region map: %w of array %x in %d member areas: %w "+
				"(an array made before region maps, or wiped: make a new map, every region dirty unless the array stopped cleanly)",
				ErrNotMap, uuid, len(areas), errors.Join(rep.Problems...))
		}
	}
	m := alloc(g)
	m.cursor = hdr.Cursor
	// Rewrite the header unless every member holds the one chosen: a
	// member that lost the newer one would bring an older cursor back if
	// the others failed.
	if rep.Header < 0 || len(rep.Problems) > 0 {
		m.markHeader()
	}
	for _, a := range areas {
		if rep.Header >= 0 && len(a) >= BlockSize && !bytes.Equal(a[:BlockSize], areas[rep.Header][:BlockSize]) {
			m.markHeader()
		}
	}
	seq := hdr.Sequence
	copyWords := make([]uint64, wordsPerBlock)
	first := make([]uint64, wordsPerBlock)
	// Accumulated over the copies of a block: dirty on any (in mem's low
	// bits), dirty on all, trimmed on all.
	allDirty := make([]uint64, wordsPerBlock)
	allTrim := make([]uint64, wordsPerBlock)
	for b := range m.blocks {
		mem := m.mem[b*wordsPerBlock : (b+1)*wordsPerBlock]
		disk := m.onDisk[b*wordsPerBlock/2 : (b+1)*wordsPerBlock/2]
		bad, differ, copies := false, false, 0
		for i, a := range areas {
			lo, hi := (1+b)*BlockSize, (2+b)*BlockSize
			if len(a) < hi {
				problem(i, 1+b, fmt.Errorf("%w: area is %d bytes, the map needs %d", ErrCorrupt, len(a), g.AreaBytes()))
				bad = true
				continue
			}
			s, err := decodeMapBlock(a[lo:hi], g, b, copyWords)
			if err != nil {
				problem(i, 1+b, err)
				bad = true
				continue
			}
			seq = max(seq, s)
			for w, x := range copyWords {
				if copies == 0 {
					first[w] = x
					mem[w], allDirty[w], allTrim[w] = dirtyBits(x), dirtyBits(x), trimmedBits(x)
					continue
				}
				differ = differ || x != first[w]
				mem[w] |= dirtyBits(x)
				allDirty[w] &= dirtyBits(x)
				allTrim[w] &= trimmedBits(x)
			}
			copies++
		}
		switch {
		case bad || copies == 0:
			rep.BadBlocks++
			for w := range mem {
				mem[w] = lowBits
			}
			clear(disk)
		default:
			if differ {
				rep.Disagree++
			}
			for w := range mem {
				mem[w] |= (allTrim[w] &^ mem[w]) << 1
			}
			for w := range disk {
				disk[w] = packLow(allDirty[2*w]) | packLow(allDirty[2*w+1])<<32
			}
		}
		if bad || differ {
			m.markChanged(b)
		}
	}
	m.trimTail()
	copy(m.flight, m.mem)
	for w := range m.resync {
		m.resync[w] = packLow(dirtyBits(m.mem[2*w])) | packLow(dirtyBits(m.mem[2*w+1]))<<32
	}
	for r := range m.regions {
		m.counts[get(m.mem, r)]++
	}
	m.resyncs = m.counts[Dirty]
	m.gen, m.durable = seq, seq
	rep.Resync, rep.Trimmed = m.resyncs, m.counts[Trimmed]
	return m, rep, nil
}

// geometryFromBlocks finds the region size in the map blocks when no header
// is usable: the newest valid block of this array decides.
func geometryFromBlocks(uuid [16]byte, arraySize int64, areas [][]byte) (Geometry, bool) {
	var best prefix
	found := false
	for _, a := range areas {
		for pos := 1; (pos+1)*BlockSize <= len(a); pos++ {
			p, err := decodePrefix(a[pos*BlockSize : (pos+1)*BlockSize])
			if err != nil || p.uuid != uuid || p.index != uint32(pos) {
				continue
			}
			if !found || p.sequence > best.sequence {
				best, found = p, true
			}
		}
	}
	if !found {
		return Geometry{}, false
	}
	g := Geometry{ArrayUUID: uuid, ArraySize: arraySize, RegionSize: 1 << best.shift}
	return g, g.Check() == nil
}

// trimTail clears the fields past the last region in every image: they
// describe no region, and the invariants count on them being zero.
func (m *Map) trimTail() {
	clearFrom(m.mem, m.regions*bitsPerRegion)
	clearFrom(m.flight, m.regions*bitsPerRegion)
	clearFrom(m.onDisk, m.regions)
}

// clearFrom clears every bit of img from bit index from on.
func clearFrom(img []uint64, from int) {
	w := from >> 6
	if w >= len(img) {
		return
	}
	img[w] &= 1<<(uint(from)&63) - 1
	clear(img[w+1:])
}

// zeroFrom reports whether every bit of img from bit index from on is zero.
func zeroFrom(img []uint64, from int) bool {
	w := from >> 6
	if w >= len(img) {
		return true
	}
	if img[w]&^(1<<(uint(from)&63)-1) != 0 {
		return false
	}
	for _, x := range img[w+1:] {
		if x != 0 {
			return false
		}
	}
	return true
}
