package region

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Every block of the map area starts with the same 64-byte prefix, so each
// is self-describing: which array, which position in the area, which
// region size, which flush wrote it. All integers are little-endian.
//
//	offset size field
//	     0    8 magic "URAIDRM\x00"
//	     8    2 major version (1); a reader refuses any other major
//	    10    2 minor version (0); later minors only add fields in
//	          reserved space, which a reader ignores
//	    12    4 index: the block's position in the area, 0 for the header
//	    16    8 sequence: the generation of the flush that wrote it
//	    24   16 array UUID
//	    40    1 region shift: log2 of the region size, 12 to 62
//	    41   19 reserved, written as zero
//	    60    4 CRC32C (Castagnoli) of bytes 0-59 and 64-4095
//
// The header block (index 0) continues:
//
//	    64    8 array size in bytes
//	    72    8 region count: ceil(array size / region size), <= 2^18
//	    80    4 map blocks: ceil(region count / 16128)
//	    84    4 reserved
//	    88    1 cursor action: 0 none, 1 resync, 2 check, 3 rebuild
//	    89    3 reserved
//	    92    4 cursor member (rebuild)
//	    96    8 cursor position (region index)
//	   104    8 cursor started (generation)
//	   112 3984 reserved, written as zero
//
// A map block (index 1+i) holds regions [i*16128, (i+1)*16128) in bytes
// 64-4095, two bits each, region j of the block at byte 64+j/4, bits
// 2*(j%4): 0 in sync, 1 dirty, 2 trimmed. Code 3 is never written and reads
// as dirty: the low bit alone means dirty, so whatever a reader does not
// understand errs on the safe side.

// Block prefix and header offsets, see the table above.
const (
	offMagic    = 0
	offMajor    = 8
	offMinor    = 10
	offIndex    = 12
	offSequence = 16
	offUUID     = 24
	offShift    = 40
	offChecksum = 60

	offArraySize = 64
	offRegions   = 72
	offMapBlocks = 80
	offAction    = 88
	offMember    = 92
	offPosition  = 96
	offStarted   = 104

	// VersionMajor changes when an older reader would misread a block.
	VersionMajor = 1
	// VersionMinor changes when fields are added in reserved space.
	VersionMinor = 0
)

// Magic identifies a block of a uraid region map.
var Magic = [8]byte{'U', 'R', 'A', 'I', 'D', 'R', 'M', 0}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// checksum covers the whole block but its own field.
func checksum(block []byte) uint32 {
	c := crc32.Update(0, crc32c, block[:offChecksum])
	return crc32.Update(c, crc32c, block[offChecksum+4:BlockSize])
}

// Header is the decoded header block of a map area.
type Header struct {
	Geometry Geometry
	Sequence uint64 // generation of the flush that wrote it
	Minor    uint16 // minor version of the writer
	Cursor   Cursor
}

// prefix is the decoded common prefix of a block.
type prefix struct {
	index    uint32
	sequence uint64
	uuid     [16]byte
	shift    uint
	minor    uint16
}

// decodePrefix checks, in this order, the length, the magic (ErrNotMap),
// the checksum (ErrCorrupt), the major version (ErrUnsupportedVersion) and
// the prefix fields (ErrInvalid), so a damaged block is reported as damaged
// rather than by whichever field the damage hit.
func decodePrefix(block []byte) (prefix, error) {
	var p prefix
	if len(block) != BlockSize {
		return p, fmt.Errorf("%w: block is %d bytes, want %d", ErrCorrupt, len(block), BlockSize)
	}
	if !bytes.Equal(block[offMagic:offMagic+len(Magic)], Magic[:]) {
		return p, fmt.Errorf("%w: no region map magic (never written, wiped, or not a uraid member)", ErrNotMap)
	}
	le := binary.LittleEndian
	if le.Uint32(block[offChecksum:]) != checksum(block) {
		return p, fmt.Errorf("%w: checksum mismatch: torn by a crash during its write, or damaged since", ErrCorrupt)
	}
	p.minor = le.Uint16(block[offMinor:])
	if major := le.Uint16(block[offMajor:]); major != VersionMajor {
		return p, fmt.Errorf("%w: version %d.%d, this uraid reads %d.x: upgrade uraid",
			ErrUnsupportedVersion, major, p.minor, VersionMajor)
	}
	p.index = le.Uint32(block[offIndex:])
	p.sequence = le.Uint64(block[offSequence:])
	copy(p.uuid[:], block[offUUID:])
	p.shift = uint(block[offShift])
	if p.uuid == ([16]byte{}) {
		return p, fmt.Errorf("%w: array UUID is all zeros", ErrInvalid)
	}
	if p.shift < minRegionShift || p.shift > maxRegionShift {
		return p, fmt.Errorf("%w: region shift %d: want %d to %d", ErrInvalid, p.shift, minRegionShift, maxRegionShift)
	}
	return p, nil
}

// encodePrefix writes the prefix into block, which it clears first; the
// checksum is sealed after the body is written.
func encodePrefix(block []byte, index uint32, seq uint64, g Geometry) {
	clear(block[:blockHeaderSize])
	le := binary.LittleEndian
	copy(block[offMagic:], Magic[:])
	le.PutUint16(block[offMajor:], VersionMajor)
	le.PutUint16(block[offMinor:], VersionMinor)
	le.PutUint32(block[offIndex:], index)
	le.PutUint64(block[offSequence:], seq)
	copy(block[offUUID:], g.ArrayUUID[:])
	block[offShift] = byte(g.shift())
}

func seal(block []byte) { binary.LittleEndian.PutUint32(block[offChecksum:], checksum(block)) }

// DecodeHeader decodes the header block of a map area. Errors wrap
// ErrNotMap, ErrCorrupt, ErrUnsupportedVersion or ErrInvalid; it never
// panics, whatever the bytes.
func DecodeHeader(block []byte) (Header, error) {
	p, err := decodePrefix(block)
	if err != nil {
		return Header{}, err
	}
	if p.index != 0 {
		return Header{}, fmt.Errorf("%w: block index %d where the header (index 0) belongs", ErrInvalid, p.index)
	}
	le := binary.LittleEndian
	h := Header{Sequence: p.sequence, Minor: p.minor}
	size := le.Uint64(block[offArraySize:])
	if size == 0 || size > 1<<63-1 {
		return Header{}, fmt.Errorf("%w: array size %d bytes", ErrInvalid, size)
	}
	h.Geometry = Geometry{ArrayUUID: p.uuid, ArraySize: int64(size), RegionSize: 1 << p.shift}
	if err := h.Geometry.Check(); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if n := le.Uint64(block[offRegions:]); n != uint64(h.Geometry.Regions()) {
		return Header{}, fmt.Errorf("%w: region count %d, but %d bytes in regions of %d make %d",
			ErrInvalid, n, size, h.Geometry.RegionSize, h.Geometry.Regions())
	}
	if n := le.Uint32(block[offMapBlocks:]); n != uint32(h.Geometry.MapBlocks()) {
		return Header{}, fmt.Errorf("%w: map block count %d, but %d regions need %d",
			ErrInvalid, n, h.Geometry.Regions(), h.Geometry.MapBlocks())
	}
	pos := le.Uint64(block[offPosition:])
	if pos > uint64(h.Geometry.Regions()) {
		return Header{}, fmt.Errorf("%w: cursor position %d past %d regions", ErrInvalid, pos, h.Geometry.Regions())
	}
	h.Cursor = Cursor{
		Action:   Action(block[offAction]),
		Member:   le.Uint32(block[offMember:]),
		Position: int(pos),
		Started:  le.Uint64(block[offStarted:]),
	}
	if err := h.Cursor.check(h.Geometry.Regions()); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return h, nil
}

// encodeHeader fills block with the header of g.
func encodeHeader(block []byte, g Geometry, seq uint64, c Cursor) {
	clear(block)
	encodePrefix(block, 0, seq, g)
	le := binary.LittleEndian
	le.PutUint64(block[offArraySize:], uint64(g.ArraySize))
	le.PutUint64(block[offRegions:], uint64(g.Regions()))
	le.PutUint32(block[offMapBlocks:], uint32(g.MapBlocks()))
	block[offAction] = byte(c.Action)
	le.PutUint32(block[offMember:], c.Member)
	le.PutUint64(block[offPosition:], uint64(c.Position))
	le.PutUint64(block[offStarted:], c.Started)
	seal(block)
}

// encodeMapBlock fills block with map block b of g: its prefix and the
// wordsPerBlock packed words of its regions.
func encodeMapBlock(block []byte, g Geometry, b int, seq uint64, words []uint64) {
	encodePrefix(block, uint32(1+b), seq, g)
	le := binary.LittleEndian
	for i, w := range words[:wordsPerBlock] {
		le.PutUint64(block[blockHeaderSize+8*i:], w)
	}
	seal(block)
}

// decodeMapBlock checks that block is map block b of g and unpacks its
// regions into dst (wordsPerBlock words), returning the block's sequence.
// On error dst is left unchanged.
func decodeMapBlock(block []byte, g Geometry, b int, dst []uint64) (uint64, error) {
	p, err := decodePrefix(block)
	if err != nil {
		return 0, err
	}
	switch {
	case p.index != uint32(1+b):
		return 0, fmt.Errorf("%w: block index %d at position %d", ErrInvalid, p.index, 1+b)
	case p.uuid != g.ArrayUUID:
		return 0, fmt.Errorf("%w: block of array %x, not of this array %x", ErrInvalid, p.uuid, g.ArrayUUID)
	case p.shift != g.shift():
		return 0, fmt.Errorf("%w: region size %d, the map has %d", ErrInvalid, int64(1)<<p.shift, g.RegionSize)
	}
	le := binary.LittleEndian
	for i := range dst[:wordsPerBlock] {
		dst[i] = le.Uint64(block[blockHeaderSize+8*i:])
	}
	return p.sequence, nil
}
