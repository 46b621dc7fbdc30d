package raid

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"uraid/mapping"
	"uraid/reshape"
)

// genReshapeSuperblock draws a superblock of a raid0 or raid10 n2/o2 array with a reshape under
// way: any old count below the new one, any cursor on the sector grid, with or without a backup
// from it, done or not.
var genReshapeSuperblock = rapid.Custom(func(t *rapid.T) Superblock {
	sb := genSuperblock.Filter(func(sb Superblock) bool {
		return sb.Members >= 2 && (sb.Level == mapping.RAID0 || sb.Level == mapping.RAID10 && sb.Layout != mapping.Far2)
	}).Draw(t, "sb")
	r := &ReshapeInfo{OldMembers: rapid.Uint32Range(1, sb.Members-1).Draw(t, "old"), WindowKiB: rapid.Uint32Min(1).Draw(t, "window")}
	r.State.Cursor = rapid.Int64Range(0, 1<<50).Draw(t, "cursorSectors") * mapping.SectorBytes
	switch rapid.IntRange(0, 2).Draw(t, "kind") {
	case 1:
		r.State.Backup = reshape.Backup{
			From: r.State.Cursor,
			To:   r.State.Cursor + rapid.Int64Range(1, 1<<30).Draw(t, "backupSectors")*mapping.SectorBytes,
			Row:  rapid.Int64Range(0, 1<<40).Draw(t, "row"),
			Sum:  rapid.Uint32().Draw(t, "sum"),
		}
	case 2:
		r.State.Done = true
	}
	sb.Reshape = r
	return sb
})

// TestPropertyReshapeRoundTrip: a superblock with a reshape encodes as major 3 with every field
// at its documented offset, and decodes to itself.
func TestPropertyReshapeRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := genReshapeSuperblock.Draw(t, "sb")
		b, err := want.MarshalBinary()
		require.NoError(t, err)
		le := binary.LittleEndian
		require.Equal(t, uint16(VersionMajorReshape), le.Uint16(b[8:]), "major")
		require.Equal(t, want.Reshape.OldMembers, le.Uint32(b[2200:]), "old members")
		require.Equal(t, uint64(want.Reshape.State.Cursor), le.Uint64(b[2208:]), "cursor")
		require.Equal(t, uint64(want.Reshape.State.Backup.To), le.Uint64(b[2224:]), "backup to")
		require.Equal(t, want.Reshape.State.Backup.Sum, le.Uint32(b[2240:]), "backup sum")
		require.Equal(t, want.Reshape.WindowKiB, le.Uint32(b[2244:]), "window")
		require.Equal(t, make([]byte, 8), b[offReshapeEnd:offReshapeEnd+8], "reserved after")
		var got Superblock
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, want, got)
		again, err := got.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, b, again)

		// The reshape's last update clears it: major 2 again, the fields zero.
		got.Reshape = nil
		b, err = got.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, uint16(VersionMajor), le.Uint16(b[8:]))
		require.Equal(t, make([]byte, offReshapeEnd-offReshapeOld), b[offReshapeOld:offReshapeEnd])
	})
}

// TestPropertyReshapeBitFlip: a flipped bit in a reshape superblock is caught, as in any other.
func TestPropertyReshapeBitFlip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, err := new(genReshapeSuperblock.Draw(t, "sb")).MarshalBinary()
		require.NoError(t, err)
		bit := rapid.IntRange(0, SuperblockSize*8-1).Draw(t, "bit")
		b[bit/8] ^= 1 << (bit % 8)
		var got Superblock
		require.ErrorIs(t, got.UnmarshalBinary(b), flipErr(bit))
	})
}

// TestReshapeSuperblockRefusals: fields no reshape can have are refused on write and on read,
// and a uraid that reads only major 2 (as every uraid before reshape did) refuses the block as
// too new rather than misreading its member count.
func TestReshapeSuperblockRefusals(t *testing.T) {
	base := validSB()
	base.Layout = mapping.Near2
	base.Reshape = &ReshapeInfo{OldMembers: 3, WindowKiB: 1024, State: reshape.State{Cursor: 1 << 20}}
	b := mustMarshal(t, base)

	for _, c := range []struct {
		name string
		edit func(sb *Superblock)
		want string
	}{
		{"f2", func(sb *Superblock) { sb.Layout = mapping.Far2 }, "only raid0 and raid10 n2 and o2"},
		{"raid1", func(sb *Superblock) { sb.Level, sb.Layout, sb.ChunkSize = mapping.RAID1, mapping.NoLayout, 0 }, "only raid0"},
		{"no old", func(sb *Superblock) { sb.Reshape.OldMembers = 0 }, "want 1 to 3 old members"},
		{"old = new", func(sb *Superblock) { sb.Reshape.OldMembers = 4 }, "want 1 to 3 old members"},
		{"no window", func(sb *Superblock) { sb.Reshape.WindowKiB = 0 }, "window of 0 KiB"},
		{"cursor off grid", func(sb *Superblock) { sb.Reshape.State.Cursor = 100 }, "reshape cursor 100"},
		{"backup elsewhere", func(sb *Superblock) { sb.Reshape.State.Backup = reshape.Backup{From: 0, To: 4096} }, "want a range from the cursor"},
		{"done with backup", func(sb *Superblock) {
			sb.Reshape.State.Done = true
			sb.Reshape.State.Backup = reshape.Backup{From: 1 << 20, To: 2 << 20}
		}, "done with a backup"},
	} {
		sb := base
		r := *base.Reshape
		sb.Reshape = &r
		c.edit(&sb)
		_, err := sb.MarshalBinary()
		require.ErrorIs(t, err, ErrInvalid, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}

	flags := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(flags[offReshapeFlags:], 2)
	reseal(flags)
	var got Superblock
	err := got.UnmarshalBinary(flags)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "unknown reshape flags")

	// A reader of major 2 at most: the check every uraid before this one made.
	major := binary.LittleEndian.Uint16(b[offMajor:])
	assert.Greater(t, major, uint16(VersionMajor), "a reshape superblock is beyond what a major-2 reader accepts")
	next := append([]byte(nil), b...)
	binary.LittleEndian.PutUint16(next[offMajor:], VersionMajorReshape+1)
	reseal(next)
	err = got.UnmarshalBinary(next)
	require.ErrorIs(t, err, ErrUnsupportedVersion)
	assert.Contains(t, err.Error(), "upgrade uraid")
}
