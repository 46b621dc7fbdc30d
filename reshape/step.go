package reshape

import (
	"fmt"

	"uraid/mapping"
)

// Live tells the planner which array bytes hold data. Live(off, end), for
// off < end within the old array, reports whether the byte at off is live and
// where that answer may change: a sector-aligned next in (off, end]. The array
// answers from its region map: a trimmed region is dead, any other live. A
// nil Live takes every byte as live.
type Live func(off, end int64) (live bool, next int64)

// Kind says what a step does.
type Kind int

// Kinds of steps.
const (
	// Copy moves a window whose home overwrites only old places below the
	// persisted cursor: a cut anywhere redoes it from the old places.
	Copy Kind = iota + 1
	// BackupCopy moves a window in the critical section, where its home
	// overwrites old places of the window itself: the live bytes go to the
	// backup area first, and the descriptor (Mid) is persisted before any
	// home write.
	BackupCopy
	// Restore writes home the window a persisted backup holds, read from
	// the backup: what follows a cut after a BackupCopy's Mid.
	Restore
	// Finish discards the new space, backup area included, and marks the
	// reshape done.
	Finish
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Copy:
		return "copy"
	case BackupCopy:
		return "backup-copy"
	case Restore:
		return "restore"
	case Finish:
		return "finish"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Step is one step of a reshape, for the array to carry out in this order:
//
//  1. Park I/O in the window (Position) and wait for what is in flight there.
//  2. Read every piece of Reads (any one copy) into a buffer at Logical-From.
//  3. BackupCopy only: write BackupWrites from the buffer, flush the new
//     members, and persist Mid with Mid.Backup.Sum set.
//  4. Write Writes from the buffer and issue Discards; flush every member.
//  5. Persist After, then let the window's I/O go (to the new places).
//
// A cut anywhere leaves a persisted state from which Next plans this step
// again (or, after Mid, its Restore), with the same result. A Step is reused
// from call to call: its slices keep their room.
//
// The window need not be buffered whole: a Copy's writes never land on its
// reads, so it may be carried out a piece at a time in any order, and a
// BackupCopy's or Restore's home writes may take their bytes from the backup
// area, where the reads of a Restore are. Only the persists are ordered.
type Step struct {
	Kind Kind
	// From and To bound the window: the array bytes in flight.
	From, To int64
	// Reads are the bytes of the window to move, where they are now: the
	// live ones at their old places for a Copy, the whole window (below the
	// old size) at its old places for a BackupCopy and in the backup area
	// for a Restore.
	Reads []mapping.Piece
	// BackupWrites put a BackupCopy's whole window (below the old size) in
	// the backup area: one copy, on the new members.
	BackupWrites []mapping.Extent
	// Mid is the state to persist between BackupWrites and Writes.
	Mid State
	// Writes are the live bytes' new places, every copy.
	Writes []mapping.Extent
	// Discards are the new places of the window's dead bytes, every copy
	// (for Finish: the whole new space), unrounded.
	Discards []mapping.Extent
	// After is the state to persist once Writes and Discards are flushed.
	After State
	// ReadBytes and WriteBytes count the data the step moves (backup
	// included); DiscardBytes what it discards.
	ReadBytes, WriteBytes, DiscardBytes int64
}

// Position returns where I/O goes while the step runs.
func (s *Step) Position() Position { return Position{Cursor: s.From, WindowEnd: s.To} }

// ReadsOld reports whether reads in the window may be served from the old
// places while the step runs, so that only writes there wait: true for a
// Copy, whose writes never reach its window's old places (the safety rule
// keeps them to old bytes below the cursor). A BackupCopy overwrites them
// after Mid, and a Restore's are already gone.
func (s *Step) ReadsOld() bool { return s.Kind == Copy }

func (s *Step) reset() {
	*s = Step{Reads: s.Reads[:0], BackupWrites: s.BackupWrites[:0], Writes: s.Writes[:0], Discards: s.Discards[:0]}
}

// Next plans into s the step that follows the persisted state st. It
// allocates nothing once s has held a step as large.
func (r *Reshape) Next(st State, live Live, s *Step) error {
	if err := r.Check(st); err != nil {
		return err
	}
	if st.Done {
		return fmt.Errorf("reshape: %w", ErrDone)
	}
	s.reset()
	c := st.Cursor
	s.From = c
	switch {
	case st.Backup.Length() != 0:
		s.Kind, s.To = Restore, st.Backup.To
	case c == r.end:
		s.Kind, s.To = Finish, c
		s.After = State{Cursor: c, Done: true}
		if size := r.to.Size(); size > c {
			var err error
			if s.Discards, err = r.to.Discard(c, size-c, nil, s.Discards); err != nil {
				return fmt.Errorf("reshape: finish: %w", err)
			}
		}
		s.count()
		return nil
	default:
		w := min(r.safeUnits(c), r.maxWindow)
		s.Kind = Copy
		if w == 0 {
			s.Kind, w = BackupCopy, min(r.backupUnits, (r.end-c)/r.unit)
			s.Mid = State{Cursor: c, Backup: Backup{From: c, To: c + w*r.unit, Row: r.backupRow}}
		}
		s.To = c + w*r.unit
	}
	s.After = State{Cursor: s.To}
	if err := r.planBackupIO(s); err != nil {
		return err
	}
	for off := s.From; off < s.To; {
		isLive, next, err := r.run(live, off, s.To)
		if err != nil {
			return err
		}
		if err := r.plan(s, isLive, off, next-off); err != nil {
			return err
		}
		off = next
	}
	s.count()
	return nil
}

// planBackupIO adds the reads and writes of a backup: a BackupCopy reads the
// whole window (below the old size) from its old places and writes it to the
// backup area, a Restore reads it back. Whole, dead bytes too, so that what a
// backup holds does not depend on the liveness: the region map may answer
// differently after a cut (a torn map block reads as dirty), and the caller's
// Sum must cover the same bytes when it is checked as when it was made. The
// cost is bounded by BackupBytes, and paid in the critical section only.
func (r *Reshape) planBackupIO(s *Step) error {
	n := min(s.To, r.from.Size()) - s.From
	if n <= 0 || (s.Kind != BackupCopy && s.Kind != Restore) {
		return nil
	}
	if s.Kind == Restore {
		s.Reads = r.backupReads(s.From, s.From, n, s.Reads)
		return nil
	}
	var err error
	if s.Reads, err = r.from.Read(s.From, n, s.Reads); err != nil {
		return fmt.Errorf("reshape: read %d+%d: %w", s.From, n, err)
	}
	s.BackupWrites = r.backupWrites(s.From, s.From, n, s.BackupWrites)
	return nil
}

// plan adds to s the work for n bytes at off that are all live or all dead:
// a live run is read (unless a backup step read the window whole) and
// written at its new places, a dead one discarded there.
func (r *Reshape) plan(s *Step, live bool, off, n int64) error {
	var err error
	if !live {
		if s.Discards, err = r.to.Discard(off, n, nil, s.Discards); err != nil {
			return fmt.Errorf("reshape: discard %d+%d: %w", off, n, err)
		}
		return nil
	}
	if s.Kind == Copy {
		if s.Reads, err = r.from.Read(off, n, s.Reads); err != nil {
			return fmt.Errorf("reshape: read %d+%d: %w", off, n, err)
		}
	}
	if s.Writes, err = r.to.Write(off, n, s.Writes); err != nil {
		return fmt.Errorf("reshape: write %d+%d: %w", off, n, err)
	}
	return nil
}

// run returns whether the byte at off is live and where the answer may
// change, before end. Bytes past the old array are new space: dead.
func (r *Reshape) run(live Live, off, end int64) (bool, int64, error) {
	size := r.from.Size()
	if off >= size {
		return false, end, nil
	}
	limit := min(end, size)
	if live == nil {
		return true, limit, nil
	}
	isLive, next := live(off, limit)
	if next <= off || next > limit || next%mapping.SectorBytes != 0 {
		return false, 0, fmt.Errorf("reshape: %w: at %d (before %d) the run ends at %d; want a sector boundary in (%d, %d]", ErrLive, off, limit, next, off, limit)
	}
	return isLive, next, nil
}

// backupExtent appends the place of the backup copy of n bytes at array
// offset off, for a window from from, split at chunks: backup chunk k of the
// window is on new member k mod (new members), row BackupRow + k div that.
func (r *Reshape) backupWrites(from, off, n int64, dst []mapping.Extent) []mapping.Extent {
	k := int64(r.newN - r.oldN)
	for end := off + n; off < end; {
		rel := off - from
		b, in := rel/r.chunk, rel%r.chunk
		l := min(end-off, r.chunk-in)
		dst = append(dst, mapping.Extent{
			Member:  r.oldN + int(b%k),
			Offset:  (r.backupRow+b/k)*r.chunk + in,
			Length:  l,
			Logical: off,
		})
		off += l
	}
	return dst
}

// backupReads appends the backup's places of n bytes at off as read pieces,
// one copy each.
func (r *Reshape) backupReads(from, off, n int64, dst []mapping.Piece) []mapping.Piece {
	var one [1]mapping.Extent
	for end := off + n; off < end; {
		e := r.backupWrites(from, off, min(end-off, r.chunk-(off-from)%r.chunk), one[:0])[0]
		dst = append(dst, mapping.Piece{Logical: off, Length: e.Length, N: 1})
		dst[len(dst)-1].Copies[0] = e
		off += e.Length
	}
	return dst
}

// count sums the step's bytes.
func (s *Step) count() {
	for _, p := range s.Reads {
		s.ReadBytes += p.Length
	}
	for _, e := range s.BackupWrites {
		s.WriteBytes += e.Length
	}
	for _, e := range s.Writes {
		s.WriteBytes += e.Length
	}
	for _, e := range s.Discards {
		s.DiscardBytes += e.Length
	}
}
