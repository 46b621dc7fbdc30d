package raid

import (
	"encoding/binary"
	"errors"
	"fmt"

	"uraid/mapping"
	"uraid/reshape"
)

// A member of an array whose reshape (uraid grow --add on raid0 or raid10) is under way carries
// the reshape's state in the reserved space after the whole-events field, and is written with
// major version VersionMajorReshape, so that a uraid that knows no reshape refuses the member
// ("version 3.x, this uraid reads 1.x to 2.x: upgrade uraid") rather than assembling it by the
// new member count, whose layout holds only the bytes below the cursor. The reshape's last
// superblock update clears the state and writes major VersionMajor again.
//
//	offset size field (major 3 only)
//	  2200    4 old member count: the members before the reshape (slots 0 to old-1); the member
//	          count field holds the new count
//	  2204    4 flags: bit 0 done (the cursor reached the end and the new space is discarded)
//	  2208    8 cursor, array bytes: below it the new layout, at or above it the old one
//	  2216    8 backup from, array bytes (0 with backup to: no backup)
//	  2224    8 backup to, array bytes
//	  2232    8 backup row: the first chunk row of the backup area on the new members
//	  2240    4 backup checksum: CRC32C of the backed-up bytes in array order
//	  2244    4 window, KiB: the most array bytes one step moves (reshape.Config), which places
//	          the backup area, so a resume plans with the same
const (
	// VersionMajorReshape is the major version of a superblock that carries a reshape.
	VersionMajorReshape = 3

	offReshapeOld    = offReserved
	offReshapeFlags  = offReshapeOld + 4
	offReshapeCursor = offReshapeFlags + 4
	offReshapeFrom   = offReshapeCursor + 8
	offReshapeTo     = offReshapeFrom + 8
	offReshapeRow    = offReshapeTo + 8
	offReshapeSum    = offReshapeRow + 8
	offReshapeWindow = offReshapeSum + 4
	offReshapeEnd    = offReshapeWindow + 4

	reshapeFlagDone = 1
)

// ReshapeInfo is a reshape under way, as the superblocks persist it: one record, written to every
// member (old and new) in one superblock update per step.
type ReshapeInfo struct {
	// OldMembers is the member count before the reshape; Superblock.Members is the count after.
	OldMembers uint32
	// WindowKiB is the planner's window (reshape.Config.MaxWindowBytes) in KiB: it decides
	// where the backup goes, so a resume must plan with the same.
	WindowKiB uint32
	// State is the planner's persisted state (package reshape): the cursor, the backup
	// descriptor, done.
	State reshape.State
}

// validateReshape checks the reshape fields as far as the superblock alone can: the planner
// checks the rest against the geometry (reshape.Reshape.Check) when the reshape resumes.
func (sb *Superblock) validateReshape() error {
	r := sb.Reshape
	if r == nil {
		return nil
	}
	if sb.Level != mapping.RAID0 && !(sb.Level == mapping.RAID10 && (sb.Layout == mapping.Near2 || sb.Layout == mapping.Offset2)) {
		return fmt.Errorf("a reshape of level %s %s: only raid0 and raid10 n2 and o2 are reshaped", sb.Level.ShortName(), sb.Layout)
	}
	if r.OldMembers == 0 || r.OldMembers >= sb.Members {
		return fmt.Errorf("a reshape from %d members to %d: want 1 to %d old members", r.OldMembers, sb.Members, sb.Members-1)
	}
	if r.WindowKiB == 0 {
		return errors.New("a reshape with a window of 0 KiB")
	}
	st := r.State
	if st.Cursor < 0 || st.Cursor%mapping.SectorBytes != 0 {
		return fmt.Errorf("reshape cursor %d: want a non-negative multiple of %d", st.Cursor, mapping.SectorBytes)
	}
	b := st.Backup
	if b != (reshape.Backup{}) && (b.From != st.Cursor || b.To <= b.From || b.Row < 0) {
		return fmt.Errorf("reshape backup [%d, %d) at row %d with cursor %d: want a range from the cursor", b.From, b.To, b.Row, st.Cursor)
	}
	if st.Done && b != (reshape.Backup{}) {
		return errors.New("a reshape done with a backup pending")
	}
	return nil
}

// marshalReshape encodes sb.Reshape into block; Validate passed.
func (sb *Superblock) marshalReshape(block []byte) {
	r := sb.Reshape
	if r == nil {
		return
	}
	le := binary.LittleEndian
	le.PutUint16(block[offMajor:], VersionMajorReshape)
	le.PutUint32(block[offReshapeOld:], r.OldMembers)
	var flags uint32
	if r.State.Done {
		flags |= reshapeFlagDone
	}
	le.PutUint32(block[offReshapeFlags:], flags)
	le.PutUint64(block[offReshapeCursor:], uint64(r.State.Cursor))
	le.PutUint64(block[offReshapeFrom:], uint64(r.State.Backup.From))
	le.PutUint64(block[offReshapeTo:], uint64(r.State.Backup.To))
	le.PutUint64(block[offReshapeRow:], uint64(r.State.Backup.Row))
	le.PutUint32(block[offReshapeSum:], r.State.Backup.Sum)
	le.PutUint32(block[offReshapeWindow:], r.WindowKiB)
}

// unmarshalReshape decodes the reshape fields of a major-3 block into d.
func unmarshalReshape(block []byte, d *Superblock) error {
	le := binary.LittleEndian
	if le.Uint16(block[offMajor:]) != VersionMajorReshape {
		return nil
	}
	flags := le.Uint32(block[offReshapeFlags:])
	if flags&^reshapeFlagDone != 0 {
		return fmt.Errorf("%w: unknown reshape flags %#x (written by a newer uraid? upgrade it)", ErrInvalid, flags)
	}
	d.Reshape = &ReshapeInfo{
		OldMembers: le.Uint32(block[offReshapeOld:]),
		WindowKiB:  le.Uint32(block[offReshapeWindow:]),
		State: reshape.State{
			Cursor: int64(le.Uint64(block[offReshapeCursor:])),
			Backup: reshape.Backup{
				From: int64(le.Uint64(block[offReshapeFrom:])),
				To:   int64(le.Uint64(block[offReshapeTo:])),
				Row:  int64(le.Uint64(block[offReshapeRow:])),
				Sum:  le.Uint32(block[offReshapeSum:]),
			},
			Done: flags&reshapeFlagDone != 0,
		},
	}
	return nil
}

// MapGeometry is the geometry sb describes, every member holding its data size: what MapOf maps.
// A reshape builds its old and new geometries from it.
func MapGeometry(sb *Superblock) mapping.Geometry {
	return mappingGeometry(sb.Level, sb.Layout, int64(sb.ChunkSize), int(sb.Members), int64(sb.DataSize))
}
