package raid

import "fmt"

// Level is a RAID level as recorded in a superblock. The on-disk codes
// start at 1 so that a zeroed field never reads as a valid level.
type Level uint8

// Levels uraid knows how to run.
const (
	LevelLinear Level = 1 // members concatenated, no striping, no redundancy
	LevelRAID0  Level = 2 // striped, no redundancy
	LevelRAID1  Level = 3 // every member holds every byte
	LevelRAID10 Level = 4 // striped mirrors, see Layout
)

var levelNames = map[Level]string{
	LevelLinear: "linear",
	LevelRAID0:  "0",
	LevelRAID1:  "1",
	LevelRAID10: "10",
}

// String returns the name mdadm users type: "linear", "0", "1" or "10".
func (l Level) String() string {
	if s, ok := levelNames[l]; ok {
		return s
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Valid reports whether l is a level this version of uraid can run.
func (l Level) Valid() bool {
	_, ok := levelNames[l]
	return ok
}

// Striped reports whether the level splits its address space into chunks;
// only striped levels carry a chunk size.
func (l Level) Striped() bool {
	return l == LevelRAID0 || l == LevelRAID10
}

// Redundant reports whether the level can keep serving data with a member
// gone.
func (l Level) Redundant() bool {
	return l == LevelRAID1 || l == LevelRAID10
}

// ParseLevel accepts the names String returns and their "raid" prefixed
// forms ("raid0"), as mdadm does.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "linear":
		return LevelLinear, nil
	case "0", "raid0":
		return LevelRAID0, nil
	case "1", "raid1":
		return LevelRAID1, nil
	case "10", "raid10":
		return LevelRAID10, nil
	}
	return 0, fmt.Errorf("unknown RAID level %q: use linear, 0, 1 or 10", s)
}

// Layout says where RAID10 places the two copies of a chunk. It is
// LayoutNone for every other level. On disk it is one byte; zero is none.
type Layout uint8

// RAID10 layouts, named as in md.
const (
	LayoutNone Layout = 0
	LayoutN2   Layout = 1 // near: copies on adjacent members, same offset
	LayoutF2   Layout = 2 // far: second copy in the far half of every member
	LayoutO2   Layout = 3 // offset: second copy one stripe later, rotated
)

var layoutNames = map[Layout]string{
	LayoutNone: "",
	LayoutN2:   "n2",
	LayoutF2:   "f2",
	LayoutO2:   "o2",
}

// String returns "", "n2", "f2" or "o2".
func (l Layout) String() string {
	if s, ok := layoutNames[l]; ok {
		return s
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// Valid reports whether l is a layout this version of uraid knows.
func (l Layout) Valid() bool {
	_, ok := layoutNames[l]
	return ok
}

// ParseLayout accepts the names String returns.
func ParseLayout(s string) (Layout, error) {
	for l, name := range layoutNames {
		if name == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown RAID10 layout %q: use n2, f2 or o2", s)
}

// State records whether the array was stopped cleanly. A member is marked
// dirty before the first write after assembly and clean again when the
// array stops, so a dirty superblock after a crash says the mirrors may
// disagree. Codes start at 1 so a zeroed field is never a valid state.
type State uint8

// Array states.
const (
	StateClean State = 1
	StateDirty State = 2
)

// String returns "clean" or "dirty".
func (s State) String() string {
	switch s {
	case StateClean:
		return "clean"
	case StateDirty:
		return "dirty"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	return s == StateClean || s == StateDirty
}
