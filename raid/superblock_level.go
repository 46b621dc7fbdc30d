package raid

import (
	"fmt"

	"uraid/mapping"
)

// The level and layout bytes of the superblock. These codes are the on-disk
// format, not mapping's numbering: existing members carry them, so a code is
// never reused or renumbered, only added. A level code starts at 1 so that a
// zeroed field never reads as a level; layout 0 is the "none" of every level
// but raid10.
var (
	levelCodes = []struct {
		code  uint8
		level mapping.Level
	}{
		{1, mapping.Linear},
		{2, mapping.RAID0},
		{3, mapping.RAID1},
		{4, mapping.RAID10},
	}
	layoutCodes = []struct {
		code   uint8
		layout mapping.Layout
	}{
		{0, mapping.NoLayout},
		{1, mapping.Near2},
		{2, mapping.Far2},
		{3, mapping.Offset2},
	}
)

// levelCode is the on-disk code of l; ok is false for a value that is not a
// level.
func levelCode(l mapping.Level) (code uint8, ok bool) {
	for _, c := range levelCodes {
		if c.level == l {
			return c.code, true
		}
	}
	return 0, false
}

// levelOfCode is the level an on-disk code stands for; ok is false for a
// code this version does not know.
func levelOfCode(code uint8) (l mapping.Level, ok bool) {
	for _, c := range levelCodes {
		if c.code == code {
			return c.level, true
		}
	}
	return 0, false
}

// layoutCode is the on-disk code of l; ok is false for a value that is not a
// layout.
func layoutCode(l mapping.Layout) (code uint8, ok bool) {
	for _, c := range layoutCodes {
		if c.layout == l {
			return c.code, true
		}
	}
	return 0, false
}

// layoutOfCode is the layout an on-disk code stands for; ok is false for a
// code this version does not know.
func layoutOfCode(code uint8) (l mapping.Layout, ok bool) {
	for _, c := range layoutCodes {
		if c.code == code {
			return c.layout, true
		}
	}
	return 0, false
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

// Role is what a member is to its array (superblock minor version 1; zero in older members, which
// are all in their slots).
type Role uint8

// Member roles.
const (
	RoleActive     Role = 0 // in its slot, in step with the others
	RoleSpare      Role = 1 // waiting to take a failed member's place
	RoleRebuilding Role = 2 // in its slot, its data being rebuilt
)

// String returns "active", "spare" or "rebuilding".
func (r Role) String() string {
	switch r {
	case RoleActive:
		return "active"
	case RoleSpare:
		return "spare"
	case RoleRebuilding:
		return "rebuilding"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r <= RoleRebuilding }
