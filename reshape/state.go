package reshape

import "fmt"

// State is what the array persists of a reshape, as one record written in
// one superblock update: the plan resumes from it alone.
type State struct {
	// Cursor: array bytes below it are in the new layout, bytes at or
	// above it in the old one (but see Backup). A multiple of the unit.
	Cursor int64
	// Backup, when its Length is not 0, is a copy of the window starting at
	// the cursor that may already be partly in its new home: the old
	// places of that window are no longer to be trusted.
	Backup Backup
	// Done: the cursor reached End and the new space has been discarded;
	// the array now has the new geometry and may grow to its size.
	Done bool
}

// Backup describes a backup of a window, written to the backup area and
// flushed before the descriptor is persisted.
type Backup struct {
	// From and To bound the array range the backup holds whole, up to the
	// old array's size (From is the cursor), at places fixed by the
	// geometry: Reshape.BackupRow on, a chunk per new member in turn.
	From, To int64
	// Row is where the area starts on the new members, in chunk rows, so a
	// descriptor from another geometry is refused rather than followed.
	Row int64
	// Sum is the caller's: a checksum of the bytes backed up, in array
	// order, which it computes before persisting the descriptor and checks
	// when a Restore has read them back, before writing any home: a backup
	// the members lost is refused, not spread. The planner neither sets nor
	// reads it.
	Sum uint32
}

// Length returns the array bytes the backup holds, 0 for none.
func (b Backup) Length() int64 { return b.To - b.From }

// Position returns where I/O goes while the array rests at st, between
// steps: with a backup persisted, the window it holds waits for its restore.
func (st State) Position() Position {
	if st.Backup.Length() != 0 {
		return Position{Cursor: st.Cursor, WindowEnd: st.Backup.To}
	}
	return Position{Cursor: st.Cursor, WindowEnd: st.Cursor}
}

// Check tells whether st can be a persisted state of this reshape. Next
// checks it too; the array calls it when it reads a state from disk.
func (r *Reshape) Check(st State) error {
	c := st.Cursor
	if c < 0 || c > r.end || c%r.unit != 0 {
		return fmt.Errorf("reshape state: %w: cursor %d is not a multiple of the %d-byte unit in [0, %d]", ErrState, c, r.unit, r.end)
	}
	b := st.Backup
	if st.Done && (c != r.end || b.Length() != 0) {
		return fmt.Errorf("reshape state: %w: done with cursor %d of %d and a backup of %d bytes", ErrState, c, r.end, b.Length())
	}
	if b == (Backup{}) {
		return nil
	}
	if b.From != c || b.To <= b.From || b.Length()%r.unit != 0 || b.Length() > r.BackupBytes() || b.To > r.end {
		return fmt.Errorf("reshape state: %w: backup of [%d, %d) with cursor %d: want a range from the cursor, whole %d-byte units, at most %d bytes, not past %d", ErrState, b.From, b.To, c, r.unit, r.BackupBytes(), r.end)
	}
	if b.Row != r.backupRow {
		return fmt.Errorf("reshape state: %w: backup at row %d, where this geometry puts it at row %d (is the state from another geometry?)", ErrState, b.Row, r.backupRow)
	}
	return nil
}
