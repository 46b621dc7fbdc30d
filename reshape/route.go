package reshape

import (
	"fmt"

	"uraid/mapping"
)

// Zone is where an array byte lives during a reshape.
type Zone int

// Zones.
const (
	// ZoneNew: below the cursor; the new map places it.
	ZoneNew Zone = iota + 1
	// ZoneOld: at or past the window's end; the old map places it.
	ZoneOld
	// ZoneWait: in the window a step is moving (or a persisted backup holds);
	// reads and writes park until the step's state is persisted, as they do
	// for a region a sync job holds.
	ZoneWait
)

// String names the zone.
func (z Zone) String() string {
	switch z {
	case ZoneNew:
		return "new"
	case ZoneOld:
		return "old"
	case ZoneWait:
		return "wait"
	}
	return fmt.Sprintf("Zone(%d)", int(z))
}

// Position is where the reshape stands for I/O: bytes below Cursor are in the
// new layout, [Cursor, WindowEnd) are in flight, WindowEnd and above are in the
// old layout. State.Position gives it at rest, Step.Position while a step runs.
type Position struct {
	Cursor, WindowEnd int64
}

// Route returns the zone of array offset off at position p, and how many of
// the length bytes from off lie in that zone: the caller maps that much with
// Map(zone) (or parks it), then routes the rest. It allocates nothing.
func (r *Reshape) Route(p Position, off, length int64) (Zone, int64, error) {
	if p.Cursor < 0 || p.WindowEnd < p.Cursor || p.WindowEnd > r.end {
		return 0, 0, fmt.Errorf("route: %w: position [%d, %d) outside [0, %d]", ErrState, p.Cursor, p.WindowEnd, r.end)
	}
	if off < 0 || length <= 0 || off > r.from.Size()-length {
		return 0, 0, fmt.Errorf("route %d+%d: %w of %d bytes", off, length, mapping.ErrRange, r.from.Size())
	}
	end := off + length
	switch {
	case off < p.Cursor:
		return ZoneNew, min(end, p.Cursor) - off, nil
	case off < p.WindowEnd:
		return ZoneWait, min(end, p.WindowEnd) - off, nil
	}
	return ZoneOld, length, nil
}

// Map returns the map that places the bytes of zone z: the new one for ZoneNew,
// the old one for ZoneOld, nil for ZoneWait.
func (r *Reshape) Map(z Zone) *mapping.Map {
	switch z {
	case ZoneNew:
		return r.to
	case ZoneOld:
		return r.from
	}
	return nil
}
