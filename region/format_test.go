package region

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var le = binary.LittleEndian

// testCursor is a cursor with every field set.
var testCursor = Cursor{Action: ActionRebuild, Member: 3, Position: 17, Started: 0x0102030405060708}

// encodedHeader returns the header block of a map of g with testCursor,
// its position cut to the regions g has.
func encodedHeader(t *testing.T, g Geometry) []byte {
	t.Helper()
	block := make([]byte, BlockSize)
	c := testCursor
	c.Position = min(c.Position, g.Regions())
	encodeHeader(block, g, 0x1122334455667788, c)
	return block
}

func reseal(block []byte) { seal(block) }

// TestLayout pins every field to the offset that format.go and
// docs/superblock.md promise.
func TestLayout(t *testing.T) {
	g := Geometry{ArrayUUID: testUUID, ArraySize: 5*gib + 512, RegionSize: 2 * mib}
	h := encodedHeader(t, g)
	assert.Equal(t, []byte("URAIDRM\x00"), h[0:8], "magic")
	assert.Equal(t, uint16(1), le.Uint16(h[8:]), "major")
	assert.Equal(t, uint16(0), le.Uint16(h[10:]), "minor")
	assert.Equal(t, uint32(0), le.Uint32(h[12:]), "index of the header")
	assert.Equal(t, uint64(0x1122334455667788), le.Uint64(h[16:]), "sequence")
	assert.Equal(t, testUUID[:], h[24:40], "array UUID")
	assert.Equal(t, byte(21), h[40], "region shift")
	assert.Equal(t, make([]byte, 19), h[41:60], "reserved")
	assert.Equal(t, checksum(h), le.Uint32(h[60:]), "checksum")
	assert.Equal(t, uint64(5*gib+512), le.Uint64(h[64:]), "array size")
	assert.Equal(t, uint64(2561), le.Uint64(h[72:]), "region count")
	assert.Equal(t, uint32(1), le.Uint32(h[80:]), "map blocks")
	assert.Equal(t, byte(3), h[88], "cursor action")
	assert.Equal(t, uint32(3), le.Uint32(h[92:]), "cursor member")
	assert.Equal(t, uint64(17), le.Uint64(h[96:]), "cursor position")
	assert.Equal(t, uint64(0x0102030405060708), le.Uint64(h[104:]), "cursor started")
	assert.Equal(t, make([]byte, BlockSize-112), h[112:], "reserved")

	// Map block 1 (the second), regions 16128.. of a three-block map.
	g = Geometry{ArrayUUID: testUUID, ArraySize: 3 * RegionsPerBlock << 12, RegionSize: 4096}
	words := make([]uint64, 3*wordsPerBlock)
	base := RegionsPerBlock
	for j, s := range []State{Dirty, Trimmed, InSync, Dirty, Trimmed} {
		put(words, base+j, s)
	}
	put(words, base+RegionsPerBlock-1, Dirty)
	block := make([]byte, BlockSize)
	encodeMapBlock(block, g, 1, 9, words[wordsPerBlock:])
	assert.Equal(t, []byte("URAIDRM\x00"), block[0:8], "magic")
	assert.Equal(t, uint32(2), le.Uint32(block[12:]), "index: position in the area")
	assert.Equal(t, uint64(9), le.Uint64(block[16:]), "sequence")
	assert.Equal(t, byte(12), block[40], "region shift")
	// Region j of the block at byte 64+j/4, bits 2*(j%4).
	assert.Equal(t, byte(0b01_00_10_01), block[64], "regions 0-3: dirty, trimmed, in sync, dirty")
	assert.Equal(t, byte(0b10), block[65], "region 4: trimmed")
	assert.Equal(t, byte(0b01_000000), block[BlockSize-1], "the block's last region, dirty")
	assert.Equal(t, checksum(block), le.Uint32(block[60:]), "checksum")
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, g := range []Geometry{
		geom(1),
		{ArrayUUID: testUUID, ArraySize: 64 * tib, RegionSize: 256 * mib},
		{ArrayUUID: testUUID, ArraySize: 1<<63 - 1, RegionSize: 1 << 45},
	} {
		h, err := DecodeHeader(encodedHeader(t, g))
		require.NoError(t, err)
		c := testCursor
		c.Position = min(c.Position, g.Regions())
		assert.Equal(t, Header{Geometry: g, Sequence: 0x1122334455667788, Cursor: c}, h)
	}
}

// TestDecodeHeaderErrors checks that each way a header can be unusable is
// told apart, and that damage is reported as damage whatever field it hit.
func TestDecodeHeaderErrors(t *testing.T) {
	g := Geometry{ArrayUUID: testUUID, ArraySize: 5 * gib, RegionSize: 2 * mib}
	for _, tc := range []struct {
		name   string
		edit   func([]byte) []byte
		reseal bool
		want   error
		text   string
	}{
		{"short", func(b []byte) []byte { return b[:BlockSize-1] }, false, ErrCorrupt, "4095 bytes"},
		{"long", func(b []byte) []byte { return append(b, 0) }, false, ErrCorrupt, "4097 bytes"},
		{"zeros", func(b []byte) []byte { return make([]byte, BlockSize) }, false, ErrNotMap, "never written"},
		{"superblock magic", func(b []byte) []byte { copy(b, "URAIDSB\x00"); return b }, false, ErrNotMap, ""},
		{"flipped bit", func(b []byte) []byte { b[2000] ^= 4; return b }, false, ErrCorrupt, "torn"},
		{"damage and a bad field", func(b []byte) []byte { b[88] = 9; return b }, false, ErrCorrupt, ""},
		{"newer major", func(b []byte) []byte { le.PutUint16(b[8:], 2); return b }, true, ErrUnsupportedVersion, "upgrade uraid"},
		{"newer major and bad fields", func(b []byte) []byte { le.PutUint16(b[8:], 2); b[88] = 9; b[40] = 0; return b }, true, ErrUnsupportedVersion, ""},
		{"map block at the header's place", func(b []byte) []byte { le.PutUint32(b[12:], 1); return b }, true, ErrInvalid, "index 1"},
		{"zero UUID", func(b []byte) []byte { clear(b[24:40]); return b }, true, ErrInvalid, "UUID"},
		{"region shift 11", func(b []byte) []byte { b[40] = 11; return b }, true, ErrInvalid, "shift 11"},
		{"region shift 63", func(b []byte) []byte { b[40] = 63; return b }, true, ErrInvalid, "shift 63"},
		{"zero array size", func(b []byte) []byte { le.PutUint64(b[64:], 0); return b }, true, ErrInvalid, "array size 0"},
		{"array size past int64", func(b []byte) []byte { le.PutUint64(b[64:], 1<<63); return b }, true, ErrInvalid, "array size"},
		{"too many regions", func(b []byte) []byte { b[40] = 12; return b }, true, ErrInvalid, "at most 262144"},
		{"region count", func(b []byte) []byte { le.PutUint64(b[72:], 2561); return b }, true, ErrInvalid, "region count 2561"},
		{"map blocks", func(b []byte) []byte { le.PutUint32(b[80:], 2); return b }, true, ErrInvalid, "map block count 2"},
		{"cursor action", func(b []byte) []byte { b[88] = 5; return b }, true, ErrInvalid, "action 5"},
		{"cursor position", func(b []byte) []byte { le.PutUint64(b[96:], 2561); return b }, true, ErrInvalid, "position 2561"},
		{"member for a check", func(b []byte) []byte { b[88] = 2; return b }, true, ErrInvalid, "only rebuild and re-add have a member"},
		{"fields without action", func(b []byte) []byte { b[88] = 0; return b }, true, ErrInvalid, "without an action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(encodedHeader(t, g))
			if tc.reseal {
				reseal(b)
			}
			_, err := DecodeHeader(b)
			require.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
			assert.Contains(t, err.Error(), tc.text)
		})
	}
}

// TestMinorVersion: a newer minor only adds fields in reserved space, which
// this reader ignores.
func TestMinorVersion(t *testing.T) {
	g := geom(10)
	b := encodedHeader(t, g)
	le.PutUint16(b[10:], 7)
	b[50], b[85], b[200], b[BlockSize-1] = 1, 2, 3, 4
	reseal(b)
	h, err := DecodeHeader(b)
	require.NoError(t, err)
	assert.Equal(t, uint16(7), h.Minor)
	assert.Equal(t, g, h.Geometry)
}

// TestEveryBitFlip: CRC32C catches every single-bit error, so no flipped
// bit of a header or a map block can decode as valid.
func TestEveryBitFlip(t *testing.T) {
	g := Geometry{ArrayUUID: testUUID, ArraySize: 100 * mib, RegionSize: 1 << 12}
	header := encodedHeader(t, Geometry{ArrayUUID: testUUID, ArraySize: 100 * mib, RegionSize: mib})
	words := make([]uint64, 2*wordsPerBlock)
	for r := range 2 * RegionsPerBlock {
		put(words, r, State(r%3))
	}
	block := make([]byte, BlockSize)
	encodeMapBlock(block, g, 1, 5, words[wordsPerBlock:])
	dst := make([]uint64, wordsPerBlock)
	for i := range BlockSize * 8 {
		header[i/8] ^= 1 << (i % 8)
		_, err := DecodeHeader(header)
		header[i/8] ^= 1 << (i % 8)
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotMap) {
			t.Fatalf("header with bit %d flipped: %v, want corrupt or not a map", i, err)
		}
		block[i/8] ^= 1 << (i % 8)
		_, err = decodeMapBlock(block, g, 1, dst)
		block[i/8] ^= 1 << (i % 8)
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotMap) {
			t.Fatalf("map block with bit %d flipped: %v, want corrupt or not a map", i, err)
		}
	}
	_, err := DecodeHeader(header)
	require.NoError(t, err, "the unflipped header")
	seq, err := decodeMapBlock(block, g, 1, dst)
	require.NoError(t, err, "the unflipped block")
	assert.Equal(t, uint64(5), seq)
	assert.Equal(t, words[wordsPerBlock:], dst)
}

func TestDecodeMapBlockErrors(t *testing.T) {
	g := geom(20)
	words := make([]uint64, wordsPerBlock)
	block := make([]byte, BlockSize)
	encodeMapBlock(block, g, 0, 3, words)
	other := g
	other.ArrayUUID[0] ^= 0xff
	coarse := g
	coarse.RegionSize = 8192
	for _, tc := range []struct {
		name string
		g    Geometry
		b    int
		want string
	}{
		{"another position", g, 1, "index 1 at position 2"},
		{"another array", other, 0, "not of this array"},
		{"another region size", coarse, 0, "region size 4096, the map has 8192"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeMapBlock(block, tc.g, tc.b, words)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestCodeThreeReadsDirty: the code no writer uses errs on the safe side.
func TestCodeThreeReadsDirty(t *testing.T) {
	assert.Equal(t, uint64(0b01_10_01_00), normal(0b11_10_01_00))
	assert.Equal(t, uint64(1), dirtyBits(3))
	assert.Equal(t, uint64(0), trimmedBits(3))
}
