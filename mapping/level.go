package mapping

import (
	"fmt"
	"strings"
)

// Level is the RAID level of an array. The zero value is not a level, so a
// Geometry whose level was never set is rejected rather than taken as linear.
type Level int

// Levels.
const (
	Linear Level = iota + 1 // concatenation of members of any size
	RAID0                   // striping in chunks over equal members
	RAID1                   // N-way mirror
	RAID10                  // two copies of every chunk, near, far or offset
)

// String returns the canonical name: "linear", "raid0", "raid1" or "raid10".
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

// valid reports whether l is one of the defined levels.
func (l Level) valid() bool { return l >= Linear && l <= RAID10 }

// Layout10 is the placement of the two copies in a RAID10 array, as md
// defines it. The zero value is Near2, md's default. Other levels ignore it.
type Layout10 int

// RAID10 layouts.
const (
	// Near2 ("n2") stores the two copies of a chunk in consecutive slots of
	// a stripe, so they sit on neighbouring members, usually in the same row.
	Near2 Layout10 = iota
	// Far2 ("f2") stripes all chunks raid0-style over the first half of
	// every member and repeats the stripe in the second half, shifted by
	// one member.
	Far2
	// Offset2 ("o2") follows every raid0 row of chunks with a copy of that
	// row rotated by one member.
	Offset2
)

// String returns "n2", "f2" or "o2".
func (l Layout10) String() string {
	switch l {
	case Near2:
		return "n2"
	case Far2:
		return "f2"
	case Offset2:
		return "o2"
	}
	return fmt.Sprintf("Layout10(%d)", int(l))
}

// ParseLayout10 accepts "n2", "f2" and "o2" (mdadm's --layout names) and the
// words "near", "far" and "offset", in any case.
func ParseLayout10(s string) (Layout10, error) {
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

// Set parses s into l, so a *Layout10 can serve as a command-line flag value.
func (l *Layout10) Set(s string) error {
	v, err := ParseLayout10(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Type names the flag value type for command-line help.
func (l *Layout10) Type() string { return "layout" }

func (l Layout10) valid() bool { return l >= Near2 && l <= Offset2 }
