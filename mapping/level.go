package mapping

import (
	"fmt"
	"strings"
)

// Level is the RAID level of an array. The zero value is not a level, so a
// Geometry whose level was never set is rejected rather than taken as linear.
//
// A level has two names. String gives the long one ("raid10"), which the
// text views of the command line print; ShortName gives the one mdadm users
// type to --level ("10"), which the JSON status and examine output carry.
// ParseLevel accepts both.
type Level int

// Levels.
const (
	Linear Level = iota + 1 // concatenation of members of any size
	RAID0                   // striping in chunks over equal members
	RAID1                   // N-way mirror
	RAID10                  // two copies of every chunk, near, far or offset
)

// String returns the long name: "linear", "raid0", "raid1" or "raid10".
func (l Level) String() string {
	switch l {
	case Linear:
		return "linear"
	case RAID0:
		return "raid0"
	case RAID1:
		return "raid1"
	case RAID10:
		return "raid10"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ShortName returns the name mdadm users type to --level: "linear", "0",
// "1" or "10".
func (l Level) ShortName() string {
	switch l {
	case Linear:
		return "linear"
	case RAID0:
		return "0"
	case RAID1:
		return "1"
	case RAID10:
		return "10"
	}
	return l.String()
}

// ParseLevel accepts the names mdadm users type: "linear", "0", "1", "10",
// and the same with a "raid" prefix, in any case.
func ParseLevel(s string) (Level, error) {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "raid") {
	case "linear":
		return Linear, nil
	case "0":
		return RAID0, nil
	case "1":
		return RAID1, nil
	case "10":
		return RAID10, nil
	}
	return 0, fmt.Errorf("raid level %q: %w (use linear, 0, 1 or 10)", s, ErrParse)
}

// Set parses s into l, so a *Level can serve as a command-line flag value.
func (l *Level) Set(s string) error {
	v, err := ParseLevel(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Type names the flag value type for command-line help.
func (l *Level) Type() string { return "level" }

// Valid reports whether l is one of the defined levels.
func (l Level) Valid() bool { return l >= Linear && l <= RAID10 }

// Striped reports whether the level splits its address space into chunks:
// only raid0 and raid10 have a chunk size.
func (l Level) Striped() bool { return l == RAID0 || l == RAID10 }

// Redundant reports whether the level keeps more than one copy of every
// byte, and so can keep serving data with a member gone.
func (l Level) Redundant() bool { return l == RAID1 || l == RAID10 }

// HasLayout reports whether the level places its copies by a Layout: only
// raid10 does, every other level has NoLayout.
func (l Level) HasLayout() bool { return l == RAID10 }

// Layout is the placement of the two copies in a RAID10 array, as md
// defines it. The zero value, NoLayout, is the layout of every other level;
// a raid10 Geometry without a layout is rejected rather than guessed.
type Layout int

// Layouts.
const (
	// NoLayout is the layout of linear, raid0 and raid1, which have no
	// copies to place or place them the one way there is.
	NoLayout Layout = iota
	// Near2 ("n2", md's default) stores the two copies of a chunk in
	// consecutive slots of a stripe, so they sit on neighbouring members,
	// usually in the same row.
	Near2
	// Far2 ("f2") stripes all chunks raid0-style over the first half of
	// every member and repeats the stripe in the second half, shifted by
	// one member.
	Far2
	// Offset2 ("o2") follows every raid0 row of chunks with a copy of that
	// row rotated by one member.
	Offset2
)

// String returns "n2", "f2" or "o2", and "none" for NoLayout.
func (l Layout) String() string {
	switch l {
	case NoLayout:
		return "none"
	case Near2:
		return "n2"
	case Far2:
		return "f2"
	case Offset2:
		return "o2"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// ParseLayout accepts "n2", "f2" and "o2" (mdadm's --layout names) and the
// words "near", "far" and "offset", in any case.
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "n2", "near", "near2":
		return Near2, nil
	case "f2", "far", "far2":
		return Far2, nil
	case "o2", "offset", "offset2":
		return Offset2, nil
	}
	return 0, fmt.Errorf("raid10 layout %q: %w (use n2, f2 or o2)", s, ErrParse)
}

// Set parses s into l, so a *Layout can serve as a command-line flag value.
func (l *Layout) Set(s string) error {
	v, err := ParseLayout(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Type names the flag value type for command-line help.
func (l *Layout) Type() string { return "layout" }

// Valid reports whether l is NoLayout or one of the raid10 layouts.
func (l Layout) Valid() bool { return l >= NoLayout && l <= Offset2 }

// checkLevelLayout enforces the one rule tying a layout to its level: raid10 has
// one of n2, f2 and o2, every other level has none.
func checkLevelLayout(level Level, layout Layout) error {
	switch {
	case !layout.Valid():
		return fmt.Errorf("%w: layout %v is not n2, f2 or o2", ErrGeometry, layout)
	case level.HasLayout() && layout == NoLayout:
		return fmt.Errorf("%w: %v needs a layout: n2, f2 or o2 (n2 is md's default)", ErrGeometry, level)
	case !level.HasLayout() && layout != NoLayout:
		return fmt.Errorf("%w: layout %v given for %v; only raid10 has a layout", ErrGeometry, layout, level)
	}
	return nil
}
