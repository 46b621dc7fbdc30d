package region

import "fmt"

// Action is the array-wide job a Cursor records the progress of.
type Action uint8

// Actions. The codes are the on-disk values.
const (
	// ActionNone: no job is under way.
	ActionNone Action = 0
	// ActionResync brings the copies of every region that needs resync
	// into agreement.
	ActionResync Action = 1
	// ActionCheck compares the copies of every region that is not
	// trimmed.
	ActionCheck Action = 2
	// ActionRebuild fills a replaced member: it copies every region that
	// is not trimmed onto it, and trims the trimmed ones there.
	ActionRebuild Action = 3
	// ActionReAdd fills a member that left and came back: it copies onto it
	// only the regions that need resync (those written while it was away).
	ActionReAdd Action = 4
)

func (a Action) String() string {
	switch a {
	case ActionNone:
		return "none"
	case ActionResync:
		return "resync"
	case ActionCheck:
		return "check"
	case ActionRebuild:
		return "rebuild"
	case ActionReAdd:
		return "re-add"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Valid reports whether a is a known action.
func (a Action) Valid() bool { return a <= ActionReAdd }

// Fills reports whether a is the job of one member (Cursor.Member): a
// rebuild or a re-add.
func (a Action) Fills() bool { return a == ActionRebuild || a == ActionReAdd }

// Cursor is the checkpoint of a resync, check or rebuild, kept in the map's
// header so that the job resumes where it stopped after a crash or a stop.
//
// Position promises that the job has finished every region below it, and
// that what it did there is durable (the caller writes the data before it
// moves the cursor). A lost header update only moves the cursor back, so a
// job redoes work but never skips any. Resync also never depends on the
// cursor for what it must do: the regions that need it are the map's own
// dirty regions, and ResyncFrom visits them all, the cursor only says where
// to begin.
type Cursor struct {
	Action Action
	// Member is the slot an ActionRebuild or ActionReAdd fills; zero otherwise.
	Member uint32
	// Position is the first region the job has not finished.
	Position int
	// Started is the map generation at which the job began, so that a
	// resumed job can tell itself from a new one.
	Started uint64
}

// check reports a cursor no map of regions regions can record.
func (c Cursor) check(regions int) error {
	if !c.Action.Valid() {
		return fmt.Errorf("unknown cursor action %d (written by a newer uraid? upgrade it)", uint8(c.Action))
	}
	if c.Action == ActionNone && c != (Cursor{}) {
		return fmt.Errorf("cursor without an action has fields set: %+v", c)
	}
	if !c.Action.Fills() && c.Member != 0 {
		return fmt.Errorf("cursor member %d set for action %s; only rebuild and re-add have a member", c.Member, c.Action)
	}
	if c.Position < 0 || c.Position > regions {
		return fmt.Errorf("cursor position %d outside 0 to %d regions", c.Position, regions)
	}
	return nil
}

// Cursor returns the job checkpoint, as loaded or last set.
func (m *Map) Cursor() Cursor { return m.cursor }

// SetCursor records a job checkpoint. It reaches the disk with the next
// flush that writes the header (FlushChanged or FlushAll); only then is it
// safe from a crash, and until then the previous one stands.
func (m *Map) SetCursor(c Cursor) error {
	if err := c.check(m.regions); err != nil {
		return fmt.Errorf("%w: set cursor: %w", ErrRange, err)
	}
	if c != m.cursor {
		m.cursor = c
		m.markHeader()
	}
	return nil
}

// ResyncFrom returns the first region at or after from that needs resync,
// wrapping around once to the regions below from; -1 when none does. A job
// that resumes at its cursor and calls ResyncFrom(r+1) after each region it
// resyncs visits every region that needs it: those below the cursor that
// were written since it passed them are found after the wrap.
func (m *Map) ResyncFrom(from int) int {
	if from < 0 || from >= m.regions {
		from = 0
	}
	if r := nextBit(m.resync, from, m.regions); r >= 0 {
		return r
	}
	return nextBit(m.resync, 0, from)
}
