package raid

import (
	"errors"
	"fmt"

	"uraid/internal/bytesize"
	"uraid/mapping"
)

// Appending members (uraid grow --add) makes a linear array longer without moving a byte: linear
// places member i's data area after member i-1's, each DataSize bytes, so a member put after the
// last one holds the bytes past the old end and every old byte stays where it was. Only linear
// can: raid0 and raid10 stripe every byte over all members, and a wider stripe moves nearly every
// one of them (a reshape: array/reshape.go, offline for now); a raid1 gains copies, not size
// (--copies).
//
// A linear array whose superblocks disagree about the member count is an append cut short
// (docs/design.md, Appending members): the new device's superblock is written first, claiming
// the slot past the old last one with the events of the update before the commit, then the old
// members' superblocks commit with the next events. CheckAssembly therefore takes a device that
// claims a slot past the newest superblock's member count, with no more events than it, as not
// a member (NotMembers): the append never committed, or the array moved on without it.

// ErrAppend is wrapped by every refusal of PlanAppend: members cannot be appended to the array.
var ErrAppend = errors.New("cannot append members")

// AppendPlan is what appending members to a linear array comes to. It is plain data: Array.Append
// does it.
type AppendPlan struct {
	OldMembers, NewMembers int
	OldSize, NewSize       int64 // bytes of the array
	DataSize               int64 // bytes of each member's data area, old and new alike
	Added                  []string
	// Committed is set by Array.Append once the old members' superblocks took the append (some
	// of them at least): the array assembles with the new members from then on.
	Committed bool
}

// Appendable reports whether members can be appended to an array of this level, and why not.
func Appendable(level mapping.Level) error {
	switch level {
	case mapping.Linear:
		return nil
	case mapping.RAID0, mapping.RAID10:
		return fmt.Errorf("%w: a %s stripes every byte over all its members, so a member more moves nearly all of them "+
			"(a reshape), which uraid does offline for now: stop the array, then grow --add again (uraid stop NAME; "+
			"uraid grow NAME --add DEV...; uraid assemble --scan NAME)", ErrAppend, level.ShortName())
	case mapping.RAID1:
		return fmt.Errorf("%w: every member of a raid1 is a copy of the whole array: add a copy with --copies N --add DEV", ErrAppend)
	}
	return fmt.Errorf("%w: level %v", ErrAppend, level)
}

// PlanAppend works out the array sb describes with the devices added appended as members, from
// their sizes. It changes nothing; every refusal wraps ErrAppend or ErrTooSmall and says what to
// do.
func PlanAppend(sb *Superblock, added []MemberSize) (AppendPlan, error) {
	p := AppendPlan{OldMembers: int(sb.Members), DataSize: int64(sb.DataSize)}
	if err := Appendable(sb.Level); err != nil {
		return p, err
	}
	if len(added) == 0 {
		return p, fmt.Errorf("%w: no device given: name each with --add DEV", ErrAppend)
	}
	p.NewMembers = p.OldMembers + len(added)
	if p.NewMembers > mapping.MaxMembers {
		return p, fmt.Errorf("%w: %d members and %d more is past the %d an array can have", ErrAppend, p.OldMembers, len(added), mapping.MaxMembers)
	}
	need := int64(sb.DataOffset + sb.DataSize)
	for _, d := range added {
		if d.Size < need {
			return p, fmt.Errorf("%w: %s holds %s (%d bytes), and a member of this array needs %d (data offset %d + data size %d): "+
				"give a device of at least %s", ErrTooSmall, d.Path, bytesize.Format(d.Size), d.Size, need, sb.DataOffset, sb.DataSize,
				bytesize.Format(need))
		}
		p.Added = append(p.Added, d.Path)
	}
	var err error
	if p.OldSize, err = arraySizeAt(sb, p.DataSize); err != nil {
		return p, fmt.Errorf("%w: the superblock's geometry: %v", ErrAppend, err)
	}
	m, err := mapping.New(mappingGeometry(sb.Level, sb.Layout, int64(sb.ChunkSize), p.NewMembers, p.DataSize))
	if err != nil {
		return p, fmt.Errorf("%w: %v", ErrAppend, err)
	}
	p.NewSize = m.Size()
	return p, nil
}

// AppendedPastEnd reports whether sb is of a device prepared for an append to the array ref
// describes that ref does not count: it claims a slot past ref's last, and has no more events
// than ref, so the commit that would have made it a member is not in ref (cut short, or the
// array assembled and ran on without it).
func AppendedPastEnd(sb, ref *Superblock) bool {
	return ref.Level == mapping.Linear && sb.Level == mapping.Linear && sb.Role == RoleActive &&
		sb.Index >= ref.Members && sb.Members > ref.Members && sb.Events <= ref.Events
}
