package raid

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"uraid/mapping"
)

// validSB returns a superblock that passes Validate, for tests to break.
func validSB() Superblock {
	return Superblock{
		ArrayUUID:  UUID{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0x47, 0xa8, 0x89, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0},
		Name:       "fast_scratch-1.0",
		Level:      mapping.RAID10,
		Layout:     mapping.Far2,
		ChunkSize:  512 << 10,
		Members:    4,
		Index:      2,
		MemberUUID: UUID{0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0x47, 0xc8, 0x89, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0},
		DataOffset: DefaultDataOffset,
		DataSize:   1 << 40,
		Events:     57,
		State:      StateDirty,
		CreateTime: 1_700_000_000_123_456_789,
		UpdateTime: 1_790_000_000_987_654_321,
	}
}

func mustMarshal(t testing.TB, sb Superblock) []byte {
	t.Helper()
	b, err := sb.MarshalBinary()
	require.NoError(t, err)
	return b
}

// reseal recomputes the checksum so a test can reach the checks behind it.
func reseal(block []byte) {
	binary.LittleEndian.PutUint32(block[offChecksum:],
		crc32.Checksum(block[:offChecksum], crc32.MakeTable(crc32.Castagnoli)))
}

// TestSuperblockLayout pins every field to the offset the layout table in
// superblock.go and docs/superblock.md promise.
func TestSuperblockLayout(t *testing.T) {
	sb := validSB()
	b := mustMarshal(t, sb)
	le := binary.LittleEndian

	require.Len(t, b, 4096)
	assert.Equal(t, []byte("URAIDSB\x00"), b[0:8], "magic")
	assert.Equal(t, uint16(2), le.Uint16(b[8:]), "major")
	assert.Equal(t, uint16(2), le.Uint16(b[10:]), "minor")
	assert.Equal(t, byte(4), b[12], "level raid10")
	assert.Equal(t, byte(2), b[13], "layout f2")
	assert.Equal(t, byte(2), b[14], "state dirty")
	assert.Equal(t, byte(0), b[15], "reserved")
	assert.Equal(t, sb.ArrayUUID[:], b[16:32], "array uuid")
	assert.Equal(t, sb.MemberUUID[:], b[32:48], "member uuid")
	assert.Equal(t, append([]byte(sb.Name), make([]byte, 32-len(sb.Name))...), b[48:80], "name")
	assert.Equal(t, uint32(4), le.Uint32(b[80:]), "member count")
	assert.Equal(t, uint32(2), le.Uint32(b[84:]), "index")
	assert.Equal(t, uint64(512<<10), le.Uint64(b[88:]), "chunk")
	assert.Equal(t, uint64(1<<20), le.Uint64(b[96:]), "data offset")
	assert.Equal(t, uint64(1<<40), le.Uint64(b[104:]), "data size")
	assert.Equal(t, uint64(57), le.Uint64(b[112:]), "events")
	assert.Equal(t, uint64(sb.CreateTime), le.Uint64(b[120:]), "ctime")
	assert.Equal(t, uint64(sb.UpdateTime), le.Uint64(b[128:]), "utime")
	assert.Equal(t, byte(0), b[136], "role active")
	assert.Equal(t, make([]byte, 144-137), b[137:144], "reserved")
	assert.Equal(t, make([]byte, 8*256), b[144:2192], "no slot table")
	assert.Equal(t, make([]byte, 8), b[2192:2200], "never made whole again")
	assert.Equal(t, make([]byte, 4092-2200), b[offReserved:4092], "reserved area is zero")
	assert.Equal(t, crc32.Checksum(b[:4092], crc32.MakeTable(crc32.Castagnoli)), le.Uint32(b[4092:]), "crc32c")

	// A value a human can check against a hex dump: the first bytes of the
	// block as md's docs would show them.
	assert.Equal(t, "55524149445342000200020004020200", strings.ToLower(sbHexString(b[:16])))
}

// A version 1 member (before region maps) still reads, and is written back as version 2.
func TestSuperblockReadsVersion1(t *testing.T) {
	sb := validSB()
	b := mustMarshal(t, sb)
	le := binary.LittleEndian
	le.PutUint16(b[8:], 1)
	le.PutUint32(b[4092:], crc32.Checksum(b[:4092], crc32.MakeTable(crc32.Castagnoli)))
	var got Superblock
	require.NoError(t, got.UnmarshalBinary(b))
	assert.Equal(t, sb, got)
	assert.Equal(t, uint16(2), le.Uint16(mustMarshal(t, got)[8:]))
}

func sbHexString(b []byte) string {
	const digits = "0123456789abcdef"
	s := make([]byte, 0, 2*len(b))
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}

func TestSuperblockRoundTrip(t *testing.T) {
	want := validSB()
	var got Superblock
	require.NoError(t, got.UnmarshalBinary(mustMarshal(t, want)))
	assert.Equal(t, want, got)
}

// TestUnmarshalRejects breaks one thing in an encoded block and checks the
// decoder names it. mutate works on raw bytes; the checksum is recomputed
// afterwards unless the case is about the checksum or the magic.
func TestUnmarshalRejects(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		name     string
		mutate   func(b []byte)
		noReseal bool
		want     error
		msg      string
	}{
		{name: "wrong magic", mutate: func(b []byte) { b[0] = 'X' }, want: ErrNotMember, msg: "not a uraid member"},
		{name: "zeroed block", mutate: func(b []byte) { clear(b) }, noReseal: true, want: ErrNotMember, msg: "not a uraid member"},
		{name: "bad checksum", mutate: func(b []byte) { b[200] ^= 1 }, noReseal: true, want: ErrCorrupt, msg: "corrupt superblock"},
		{name: "checksum field damaged", mutate: func(b []byte) { b[4095] ^= 0x80 }, noReseal: true, want: ErrCorrupt, msg: "checksum"},
		{name: "unknown major version", mutate: func(b []byte) { le.PutUint16(b[8:], 4) }, want: ErrUnsupportedVersion, msg: "version 4.2"},
		{name: "major version zero", mutate: func(b []byte) { le.PutUint16(b[8:], 0) }, want: ErrUnsupportedVersion, msg: "upgrade uraid"},
		{name: "index equals count", mutate: func(b []byte) { le.PutUint32(b[84:], 4) }, want: ErrInvalid, msg: "member index 4 is not below member count 4"},
		{name: "index above count", mutate: func(b []byte) { le.PutUint32(b[84:], math.MaxUint32) }, want: ErrInvalid, msg: "member index"},
		{name: "member count zero", mutate: func(b []byte) { le.PutUint32(b[80:], 0) }, want: ErrInvalid, msg: "member count 0"},
		{name: "member count huge", mutate: func(b []byte) { le.PutUint32(b[80:], mapping.MaxMembers+1) }, want: ErrInvalid, msg: "member count 257: want 1 to 256"},
		{name: "raid10 with one member", mutate: func(b []byte) { le.PutUint32(b[80:], 1); le.PutUint32(b[84:], 0) }, want: ErrInvalid, msg: "at least 2"},
		{name: "data offset unaligned", mutate: func(b []byte) { le.PutUint64(b[96:], DefaultDataOffset+4096) }, want: ErrInvalid, msg: "data offset 1052672"},
		{name: "data offset zero", mutate: func(b []byte) { le.PutUint64(b[96:], 0) }, want: ErrInvalid, msg: "data offset 0"},
		{name: "data size zero", mutate: func(b []byte) { le.PutUint64(b[104:], 0) }, want: ErrInvalid, msg: "data size is zero"},
		{name: "data size not sectors", mutate: func(b []byte) { le.PutUint64(b[104:], 1<<30+100) }, want: ErrInvalid, msg: "not a multiple of 512"},
		{name: "data end overflows", mutate: func(b []byte) { le.PutUint64(b[104:], math.MaxUint64-511) }, want: ErrInvalid, msg: "largest file offset"},
		{name: "level zero", mutate: func(b []byte) { b[12] = 0 }, want: ErrInvalid, msg: "unknown level code 0"},
		{name: "level unknown", mutate: func(b []byte) { b[12] = 5 }, want: ErrInvalid, msg: "unknown level code 5"},
		{name: "layout unknown", mutate: func(b []byte) { b[13] = 4 }, want: ErrInvalid, msg: "unknown layout code 4"},
		{name: "raid10 without layout", mutate: func(b []byte) { b[13] = 0 }, want: ErrInvalid, msg: "level 10 needs a layout"},
		{name: "raid0 with layout", mutate: func(b []byte) { b[12] = byte(mapping.RAID0) }, want: ErrInvalid, msg: "only level 10 has a layout"},
		{name: "state zero", mutate: func(b []byte) { b[14] = 0 }, want: ErrInvalid, msg: "unknown state code 0"},
		{name: "state unknown", mutate: func(b []byte) { b[14] = 3 }, want: ErrInvalid, msg: "unknown state code 3"},
		{name: "chunk not power of two", mutate: func(b []byte) { le.PutUint64(b[88:], 3<<12) }, want: ErrInvalid, msg: "chunk size 12288"},
		{name: "chunk below 4K", mutate: func(b []byte) { le.PutUint64(b[88:], 2048) }, want: ErrInvalid, msg: "chunk size 2048"},
		{name: "chunk zero on striped level", mutate: func(b []byte) { le.PutUint64(b[88:], 0) }, want: ErrInvalid, msg: "chunk size 0"},
		{name: "chunk above 1G", mutate: func(b []byte) { le.PutUint64(b[88:], 2<<30) }, want: ErrInvalid, msg: "power of two from 4096 to 1073741824"},
		{name: "chunk on raid1", mutate: func(b []byte) { b[12] = byte(mapping.RAID1); b[13] = 0 }, want: ErrInvalid, msg: "which does not stripe"},
		{name: "array uuid zero", mutate: func(b []byte) { clear(b[16:32]) }, want: ErrInvalid, msg: "array UUID is all zeros"},
		{name: "member uuid zero", mutate: func(b []byte) { clear(b[32:48]) }, want: ErrInvalid, msg: "member UUID is all zeros"},
		{name: "name empty", mutate: func(b []byte) { clear(b[48:80]) }, want: ErrInvalid, msg: "name is empty"},
		{name: "name bad byte", mutate: func(b []byte) { b[50] = '/' }, want: ErrInvalid, msg: "has byte '/' at 2"},
		{name: "name high byte", mutate: func(b []byte) { b[48] = 0xff }, want: ErrInvalid, msg: "has byte"},
		{name: "name bytes after NUL", mutate: func(b []byte) { b[79] = 'x' }, want: ErrInvalid, msg: "after its NUL"},
		{name: "name leading dash", mutate: func(b []byte) { b[48] = '-' }, want: ErrInvalid, msg: "would read as a flag"},
		{name: "name dot dot", mutate: func(b []byte) { clear(b[48:80]); copy(b[48:], "..") }, want: ErrInvalid, msg: "path element"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustMarshal(t, validSB())
			tt.mutate(b)
			if !tt.noReseal {
				reseal(b)
			}
			sb := Superblock{Name: "untouched"}
			err := sb.UnmarshalBinary(b)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.msg)
			assert.Equal(t, Superblock{Name: "untouched"}, sb, "a failed decode leaves the target alone")
		})
	}
}

func TestUnmarshalWrongLength(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4097, 8192} {
		var sb Superblock
		err := sb.UnmarshalBinary(make([]byte, n))
		assert.ErrorIs(t, err, ErrCorrupt, "length %d", n)
	}
}

// TestUnmarshalAcceptsNewerMinor checks the compatibility promise: a newer
// minor version only adds fields in reserved space, which this reader
// ignores.
func TestUnmarshalAcceptsNewerMinor(t *testing.T) {
	want := validSB()
	b := mustMarshal(t, want)
	binary.LittleEndian.PutUint16(b[10:], 7)
	b[15] = 0xee
	for i := offReserved; i < offChecksum; i++ {
		b[i] = byte(i)
	}
	reseal(b)
	var got Superblock
	require.NoError(t, got.UnmarshalBinary(b))
	assert.Equal(t, want, got)
}

func TestMarshalRefusesInvalid(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(sb *Superblock)
		msg    string
	}{
		{"zero value", func(sb *Superblock) { *sb = Superblock{} }, "array UUID is all zeros"},
		{"name too long", func(sb *Superblock) { sb.Name = strings.Repeat("a", 33) }, "33 bytes, the limit is 32"},
		{"name with NUL", func(sb *Superblock) { sb.Name = "a\x00b" }, "has byte"},
		{"name with space", func(sb *Superblock) { sb.Name = "my array" }, "has byte ' '"},
		{"index out of range", func(sb *Superblock) { sb.Index = sb.Members }, "not below member count"},
		{"linear with chunk", func(sb *Superblock) { sb.Level, sb.Layout = mapping.Linear, mapping.NoLayout }, "which does not stripe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := validSB()
			tt.mutate(&sb)
			_, err := sb.MarshalBinary()
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tt.msg)
			assert.ErrorIs(t, sb.Validate(), ErrInvalid)
		})
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"Data-01_x.y", true},
		{strings.Repeat("z", 32), true},
		{".hidden", true},
		{"...", true},
		{"", false},
		{strings.Repeat("z", 33), false},
		{".", false},
		{"..", false},
		{"-rf", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		err := ValidateName(tt.name)
		if tt.ok {
			assert.NoError(t, err, "%q", tt.name)
		} else {
			assert.Error(t, err, "%q", tt.name)
		}
	}
}

// genUUID draws a non-zero UUID.
func genUUID(t *rapid.T, label string) UUID {
	var u UUID
	copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
	if u.IsZero() {
		u[15] = 1
	}
	return u
}

// genSuperblock draws any superblock Validate accepts.
var genSuperblock = rapid.Custom(func(t *rapid.T) Superblock {
	var sb Superblock
	sb.Level = rapid.SampledFrom([]mapping.Level{mapping.Linear, mapping.RAID0, mapping.RAID1, mapping.RAID10}).Draw(t, "level")
	if sb.Level == mapping.RAID10 {
		sb.Layout = rapid.SampledFrom([]mapping.Layout{mapping.Near2, mapping.Far2, mapping.Offset2}).Draw(t, "layout")
	}
	if sb.Level.Striped() {
		sb.ChunkSize = 1 << rapid.IntRange(12, 30).Draw(t, "chunkShift")
	}
	minMembers := uint32(1)
	if sb.Level == mapping.RAID10 {
		minMembers = 2
	}
	sb.Members = rapid.Uint32Range(minMembers, mapping.MaxMembers).Draw(t, "members")
	sb.Index = rapid.Uint32Range(0, sb.Members-1).Draw(t, "index")
	sb.ArrayUUID = genUUID(t, "arrayUUID")
	sb.MemberUUID = genUUID(t, "memberUUID")
	sb.Name = rapid.StringMatching(`[A-Za-z0-9_.][A-Za-z0-9._-]{0,31}`).
		Filter(func(s string) bool { return s != "." && s != ".." }).Draw(t, "name")
	sb.DataOffset = rapid.Uint64Range(1, 1<<20).Draw(t, "dataOffsetMiB") << 20
	sb.DataSize = rapid.Uint64Range(1, 1<<40).Draw(t, "dataSectors") * mapping.SectorBytes
	sb.Events = rapid.Uint64().Draw(t, "events")
	sb.State = rapid.SampledFrom([]State{StateClean, StateDirty}).Draw(t, "state")
	sb.CreateTime = rapid.Int64().Draw(t, "ctime")
	sb.UpdateTime = rapid.Int64().Draw(t, "utime")
	sb.WholeEvents = rapid.Uint64().Draw(t, "wholeEvents")
	if rapid.Bool().Draw(t, "hasSlots") {
		sb.Slots = make([]uint64, sb.Members)
		for i := range sb.Slots {
			if rapid.Bool().Draw(t, "inService") {
				sb.Slots[i] = rapid.Uint64().Draw(t, "tag")
			}
		}
		sb.Slots[rapid.IntRange(0, int(sb.Members)-1).Draw(t, "named")] = rapid.Uint64Min(1).Draw(t, "namedTag")
	}
	return sb
})

func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := genSuperblock.Draw(t, "sb")
		b, err := want.MarshalBinary()
		require.NoError(t, err)
		var got Superblock
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, want, got)
		again, err := got.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, b, again, "re-encoding a decoded block reproduces it byte for byte")
	})
}

// flipErr is what a single-bit flip at bit must produce: a flip in the
// magic makes the block not ours, anywhere else the checksum catches it.
func flipErr(bit int) error {
	if bit/8 < len(Magic) {
		return ErrNotMember
	}
	return ErrCorrupt
}

func TestPropertyBitFlipRejected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sb := genSuperblock.Draw(t, "sb")
		b, err := sb.MarshalBinary()
		require.NoError(t, err)
		bit := rapid.IntRange(0, SuperblockSize*8-1).Draw(t, "bit")
		b[bit/8] ^= 1 << (bit % 8)
		var got Superblock
		require.ErrorIs(t, got.UnmarshalBinary(b), flipErr(bit))
	})
}

// TestBitFlipExhaustive flips every one of the 32768 bits of one block.
func TestBitFlipExhaustive(t *testing.T) {
	b := mustMarshal(t, validSB())
	var got Superblock
	for bit := range SuperblockSize * 8 {
		b[bit/8] ^= 1 << (bit % 8)
		if err := got.UnmarshalBinary(b); !errors.Is(err, flipErr(bit)) {
			t.Fatalf("flip of bit %d: got %v, want %v", bit, err, flipErr(bit))
		}
		b[bit/8] ^= 1 << (bit % 8)
	}
	require.NoError(t, got.UnmarshalBinary(b), "flipping back restores the block")
}
