package array

// copies.go changes how many copies a raid1 keeps (uraid grow --copies).

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
)

// FailpointCopiesCommit: every check of a change of copies passed; the superblocks of the new slot
// count are about to be written.
const FailpointCopiesCommit = "copies-commit"

// ErrCopies means a change of copies cannot be made as asked; the error says why and what to do.
var ErrCopies = errors.New("cannot change the copies")

// errSuperseded: a change of copies rewrote the superblocks with another slot count, which this
// Array, built for the old one, must no longer write over.
var errSuperseded = errors.New("the superblocks were rewritten for another number of copies: assemble the array again")

// CopiesPlan is what SetCopies did; the zero plan when it wrote nothing.
type CopiesPlan struct {
	Old, New int
	// Spares are the devices added as spares: once the array is assembled again each fills one of
	// the new slots by a rebuild, which copies only the regions not trimmed.
	Spares []string
	// Dropped are the empty slots taken away, by their numbers before the change.
	Dropped []int
}

// SetCopies makes a raid1 keep n copies: more slots, each filled by one of the devices at add
// (as a spare, which a rebuild puts in the slot) or left empty for uraid add; or fewer, by taking
// away slots left empty by uraid fail and remove. It checks everything first and writes nothing
// on a refusal. The change is one superblock update of every member, its commit (the data stays
// where it is: every copy of a raid1 is the whole array at the same offset); the devices at add
// become spares after it. A crash between members leaves some one update behind, which assemble
// takes as current in the slot the newest table names them in (raid.CheckAssembly).
//
// This Array was built for the old slot count: from the commit on it writes no superblock, and
// must be closed, with nothing in flight (after MarkClean, in a hand-over or a stop), and the
// array assembled again. There the rebuilds of the new slots start.
func (a *Array) SetCopies(n int, add []string, force bool) (CopiesPlan, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	p, keep, adds, err := a.vetCopies(n, add, force)
	if err != nil {
		return CopiesPlan{}, err
	}
	hit(FailpointCopiesCommit)
	if err := a.commitCopies(n, keep); err != nil {
		closeAdditions(adds)
		if !a.superseded.Load() {
			return CopiesPlan{}, fmt.Errorf("array %s: %d copies: %w (nothing written)", a.Name, n, err)
		}
		return p, fmt.Errorf("array %s: %d copies: %w", a.Name, n, err)
	}
	var errs []error
	for _, c := range adds {
		if err := a.writeSpare(c.m); err != nil {
			c.m.Close()
			errs = append(errs, fmt.Errorf("spare %s: %w (add it once the array is assembled again)", c.m.Path, err))
			continue
		}
		a.membersMu.Lock()
		a.spares = append(a.spares, c.m)
		a.membersMu.Unlock()
		p.Spares = append(p.Spares, c.m.Path)
	}
	return p, errors.Join(errs...)
}

// CheckCopies makes every check SetCopies would and writes nothing: a daemon asks it before it
// lets its device go for the change.
func (a *Array) CheckCopies(n int, add []string, force bool) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	_, _, adds, err := a.vetCopies(n, add, force)
	closeAdditions(adds)
	return err
}

// closeAdditions lets go of devices vetted for an add that will not be made.
func closeAdditions(adds []addition) {
	for _, c := range adds {
		c.m.Close()
	}
}

// vetCopies checks a change to n copies with the devices at add, and returns the plan, the slots
// kept in their new order and the devices, open; adminMu held.
func (a *Array) vetCopies(n int, add []string, force bool) (CopiesPlan, []int, []addition, error) {
	p, keep, err := a.planCopies(n, len(add))
	if err != nil {
		return p, nil, nil, fmt.Errorf("array %s: %w", a.Name, err)
	}
	if err := raid.CheckNamedOnce(add); err != nil {
		return p, nil, nil, fmt.Errorf("array %s: %w", a.Name, err)
	}
	var adds []addition
	for _, path := range add {
		c, err := a.vetAdd(path, force)
		if err != nil {
			closeAdditions(adds)
			return p, nil, nil, err
		}
		adds = append(adds, c)
	}
	return p, keep, adds, nil
}

// planCopies checks a change to n copies with adds new devices, and returns the plan and the
// slots kept, in their new order; adminMu held.
func (a *Array) planCopies(n, adds int) (CopiesPlan, []int, error) {
	sb := a.Superblock()
	old := len(a.members)
	p := CopiesPlan{Old: old, New: n}
	switch {
	case sb.Level == mapping.RAID10:
		return p, nil, fmt.Errorf("%w: a raid10 keeps the copies of its layout (%s): more or fewer would move its data (a reshape)",
			ErrCopies, sb.Layout)
	case sb.Level != mapping.RAID1:
		return p, nil, fmt.Errorf("%w: level %s keeps one copy of each byte", ErrCopies, sb.Level.ShortName())
	case n < 1 || n > mapping.MaxCopies:
		return p, nil, fmt.Errorf("%w: %d copies: a raid1 keeps 1 to %d", ErrCopies, n, mapping.MaxCopies)
	case n == old:
		return p, nil, fmt.Errorf("%w: it keeps %d copies already", ErrCopies, n)
	case n < old && adds > 0:
		return p, nil, fmt.Errorf("%w: devices to add with fewer copies: drop the copies first, then add", ErrCopies)
	case n > old && adds > n-old:
		return p, nil, fmt.Errorf("%w: %d devices for %d new copies: name at most %d", ErrCopies, adds, n-old, n-old)
	}
	if a.syncer != nil {
		if job := a.syncer.busyWith(); job != "" {
			return p, nil, fmt.Errorf("%w: a %s runs: wait for it (uraid wait) first", ErrGrowBusy, job)
		}
		if c := a.regions.cursor(); c.Action.Fills() {
			return p, nil, fmt.Errorf("%w: a %s stopped at region %d is to resume: let it finish first", ErrGrowBusy, c.Action, c.Position)
		}
	}
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	for _, m := range a.shadowMembers {
		if m != nil {
			return p, nil, fmt.Errorf("%w: a replace runs: wait for it (uraid wait) first", ErrGrowBusy)
		}
	}
	var empty, keep []int
	for i, m := range a.members {
		switch {
		case a.writable(i):
			keep = append(keep, i)
		case m == nil:
			empty = append(empty, i)
		default:
			return p, nil, fmt.Errorf("%w: member %d (%s) has failed: remove it (uraid remove) or add it back first", ErrGrowBusy, i, m.Path)
		}
	}
	if n > old {
		if len(empty) > 0 {
			return p, nil, fmt.Errorf("%w: slot %d is empty already: fill it (uraid add) first", ErrGrowBusy, empty[0])
		}
		for i := old; i < n; i++ {
			keep = append(keep, -1) // a new slot, empty
		}
		return p, keep, nil
	}
	if drop := old - n; len(empty) < drop {
		return p, nil, fmt.Errorf("%w: %d fewer copies need %d empty slots, and %d is empty: take the copies to drop out first (uraid fail, then uraid remove)",
			ErrCopies, drop, drop, len(empty))
	}
	// The highest empty slots go, so that as few members as may be change their number.
	p.Dropped = empty[len(empty)-(old-n):]
	for _, i := range empty[:len(empty)-(old-n)] {
		keep = append(keep, i)
	}
	slices.Sort(keep)
	return p, keep, nil
}

// commitCopies writes the superblocks of a raid1 of len(keep) slots: slot j is the old slot
// keep[j] (-1: new, empty). From here on this Array writes no superblock.
func (a *Array) commitCopies(n int, keep []int) error {
	a.sbMu.Lock()
	defer a.sbMu.Unlock()
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	a.superseded.Store(true)
	sbs := make([]*raid.Superblock, n)
	slots := make([]uint64, n)
	var errs []error
	for j, i := range keep {
		if i < 0 || a.members[i] == nil || !a.writable(i) {
			continue
		}
		sb, err := raid.ReadSuperblock(a.members[i].File)
		if err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", a.members[i].Path, err))
			continue
		}
		sbs[j], slots[j] = sb, sb.MemberUUID.Tag()
	}
	if len(errs) > 0 {
		a.superseded.Store(false) // nothing written
		return errors.Join(errs...)
	}
	a.sb.Events++
	// Slots may be renumbered, and a drop makes the array whole without a rebuild, after which the
	// region map forgets what was written while the dropped slot was empty: a device that left
	// before this update comes back by a whole rebuild, not by the map's regions into a slot
	// that may now be another's (found by the robustness harness).
	if !plant.Is("copieswhole") {
		a.sb.WholeEvents = a.sb.Events
	}
	a.sb.Members = uint32(n)
	a.sb.Slots = slots
	a.sb.UpdateTime = time.Now().UnixNano()
	wrote := 0
	for j, sb := range sbs {
		if sb == nil {
			continue
		}
		sb.Members, sb.Index = uint32(n), uint32(j)
		sb.Events, sb.State, sb.UpdateTime, sb.Slots, sb.WholeEvents = a.sb.Events, a.sb.State, a.sb.UpdateTime, a.sb.Slots, a.sb.WholeEvents
		sb.Role = raid.RoleActive
		if err := raid.WriteSuperblock(a.members[keep[j]].File, sb); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", a.members[keep[j]].Path, err))
			continue
		}
		wrote++
	}
	errs = append(errs, a.writeSpareSuperblocks()...)
	if len(errs) > 0 {
		return fmt.Errorf("the change reached %d of %d members (assemble the array again: one it missed is stale, and rebuilt): %w",
			wrote, len(keep), errors.Join(errs...))
	}
	return nil
}
