package array

// append.go appends members to a linear array (uraid grow --add): the array grows by a member's
// data size, and no byte moves.

import (
	"errors"
	"fmt"
	"time"

	"uraid/internal/plant"
	"uraid/raid"
)

// Failpoints of an append, one before each of its writes (docs/design.md, Appending members).
const (
	// FailpointAppendTrim: every check passed; the new devices' data areas are about to be
	// trimmed.
	FailpointAppendTrim = "append-trim"
	// FailpointAppendMember: the new devices' data areas are trimmed; their superblocks, as
	// members of the longer array, are about to be written.
	FailpointAppendMember = "append-member"
	// FailpointAppendCommit: the new devices' superblocks are durable; the old members' are
	// about to be written (the commit point).
	FailpointAppendCommit = "append-commit"
	// FailpointAppendSettle: the old members' superblocks are written; the new devices' are about
	// to take the commit's events.
	FailpointAppendSettle = "append-settle"
)

// AppendOptions say what Append is to do.
type AppendOptions struct {
	// Add are the devices to append, in order: each becomes the member after the last.
	Add []string
	// Force uses devices that hold data (a filesystem, another array's superblock).
	Force bool
	// BeforeCommit, if set, is called with every member of the longer array, in slot order, once
	// the new devices' superblocks are durable and before the commit: a daemon records its
	// members there, so that an assembly from its record after a cut finds the new ones whether
	// or not the commit happened (a device whose append did not commit is left out). An error
	// stops the append before the commit.
	BeforeCommit func(members []string) error
}

// Append appends the devices o names to a linear array as new members after its last: the array
// grows by their data areas, each as large as an old member's, and every old byte stays where it
// is. It checks everything first and writes nothing on a refusal. Then, in this order, each step
// durable before the next:
//
//  1. the new devices' data areas are trimmed;
//  2. their superblocks are written as members of the longer array, with the events of the
//     update now on the members (assemble leaves such a device out while no old member counts
//     it: raid.AppendPlan);
//  3. the old members' superblocks take the new member count and the next events: the commit
//     point. A crash between members leaves some one update behind, which assemble takes as
//     current because the newest slot table names them;
//  4. the new devices' superblocks take the commit's events too.
//
// A linear array has no region map, so there is no map to resize. This Array was built for the
// old members: from the commit on it writes no superblock, and must be closed, with nothing in
// flight (after MarkClean, in a hand-over or a stop), and the array assembled again.
func (a *Array) Append(o AppendOptions) (raid.AppendPlan, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	p, adds, err := a.vetAppend(o.Add, o.Force)
	if err != nil {
		return p, err
	}
	defer closeAdditions(adds)
	sb := a.Superblock()
	hit(FailpointAppendTrim)
	for _, c := range adds {
		if err := a.trimAt(c.m, int64(sb.DataOffset), int64(sb.DataSize)); err != nil {
			return p, fmt.Errorf("array %s: append %s: %w (nothing written to the members)", a.Name, c.m.Path, err)
		}
		if err := c.m.File.Sync(); err != nil {
			return p, fmt.Errorf("array %s: append %s: %w (nothing written to the members)", a.Name, c.m.Path, err)
		}
	}
	hit(FailpointAppendMember)
	newSBs, members, err := a.appendedSuperblocks(p, adds)
	if err != nil {
		return p, fmt.Errorf("array %s: append: %w (nothing written to the members)", a.Name, err)
	}
	if plant.Is("appendorder") {
		// The planted defect: the old members commit before the new members' superblocks are
		// written, so a cut between leaves a committed array with a slot no device claims.
		if err := a.commitAppend(newSBs); err != nil {
			p.Committed = a.superseded.Load()
			return p, fmt.Errorf("array %s: append: %w", a.Name, err)
		}
	}
	for i, c := range adds {
		if err := raid.WriteSuperblock(c.m.File, newSBs[i]); err != nil {
			return p, fmt.Errorf("array %s: append %s: superblock: %w (the old members are not changed: the array keeps its members)", a.Name, c.m.Path, err)
		}
	}
	if o.BeforeCommit != nil {
		if err := o.BeforeCommit(members); err != nil {
			return p, fmt.Errorf("array %s: append: %w (not committed: the array keeps its members)", a.Name, err)
		}
	}
	if !plant.Is("appendorder") {
		hit(FailpointAppendCommit)
		if err := a.commitAppend(newSBs); err != nil {
			p.Committed = a.superseded.Load()
			return p, fmt.Errorf("array %s: append: %w", a.Name, err)
		}
	}
	p.Committed = true
	hit(FailpointAppendSettle)
	var errs []error
	for i, c := range adds {
		newSBs[i].Events, newSBs[i].UpdateTime = a.sb.Events, a.sb.UpdateTime
		if err := raid.WriteSuperblock(c.m.File, newSBs[i]); err != nil {
			// The commit stands: the member is one update behind, which assemble takes as
			// current, and its next update brings it level.
			errs = append(errs, fmt.Errorf("member %s: %w", c.m.Path, err))
		}
	}
	a.log.Info("members appended", "added", p.Added, "old_size", p.OldSize, "new_size", p.NewSize, "members", p.NewMembers)
	if err := errors.Join(errs...); err != nil {
		return p, fmt.Errorf("array %s: appended, but the new members' last superblock update: %w (assemble the array again)", a.Name, err)
	}
	return p, nil
}

// CheckAppend makes every check Append would and writes nothing: a daemon asks it before it lets
// its device go for the append.
func (a *Array) CheckAppend(add []string, force bool) (raid.AppendPlan, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	p, adds, err := a.vetAppend(add, force)
	closeAdditions(adds)
	return p, err
}

// vetAppend checks an append of the devices at add and returns the plan and the devices, open;
// adminMu held. It reuses an add's vetting of each device (vetAdd): not in the array already, no
// signature or superblock of another array unless force, large enough.
func (a *Array) vetAppend(add []string, force bool) (raid.AppendPlan, []addition, error) {
	sb := a.Superblock()
	if err := raid.Appendable(sb.Level); err != nil {
		return raid.AppendPlan{}, nil, fmt.Errorf("array %s: %w", a.Name, err)
	}
	if a.superseded.Load() {
		return raid.AppendPlan{}, nil, fmt.Errorf("array %s: %w", a.Name, errSuperseded)
	}
	if a.Degraded() {
		return raid.AppendPlan{}, nil, fmt.Errorf("array %s: %w: a member has failed or is missing: a linear array has no copy of it to rebuild from; "+
			"bring it back (stop and assemble with every member) first", a.Name, ErrGrowBusy)
	}
	if err := raid.CheckNamedOnce(add); err != nil {
		return raid.AppendPlan{}, nil, fmt.Errorf("array %s: %w", a.Name, err)
	}
	var adds []addition
	var sizes []raid.MemberSize
	for _, path := range add {
		c, err := a.vetAdd(path, force)
		if err != nil {
			closeAdditions(adds)
			return raid.AppendPlan{}, nil, err
		}
		adds = append(adds, c)
		sizes = append(sizes, raid.MemberSize{Path: c.m.Path, Size: c.m.Size})
	}
	p, err := raid.PlanAppend(&sb, sizes)
	if err != nil {
		closeAdditions(adds)
		return p, nil, fmt.Errorf("array %s: %w", a.Name, err)
	}
	return p, adds, nil
}

// appendedSuperblocks are the superblocks of the devices adds as members after the last, and
// the paths of every member of the longer array. The slot table names every member, old and
// new; the events are those on the members now, which the commit raises.
func (a *Array) appendedSuperblocks(p raid.AppendPlan, adds []addition) ([]*raid.Superblock, []string, error) {
	a.sbMu.Lock()
	defer a.sbMu.Unlock()
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	slots := make([]uint64, 0, p.NewMembers)
	var members []string
	for _, m := range a.members {
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil {
			return nil, nil, fmt.Errorf("member %s: %w", m.Path, err)
		}
		slots = append(slots, sb.MemberUUID.Tag())
		members = append(members, m.Path)
	}
	var sbs []*raid.Superblock
	for i, c := range adds {
		id, err := raid.NewUUID()
		if err != nil {
			return nil, nil, err
		}
		sb := a.sb
		sb.MemberUUID, sb.Index, sb.Members, sb.Role = id, uint32(p.OldMembers+i), uint32(p.NewMembers), raid.RoleActive
		sb.UpdateTime = time.Now().UnixNano()
		sbs = append(sbs, &sb)
		slots = append(slots, id.Tag())
		members = append(members, c.m.Path)
	}
	for _, sb := range sbs {
		sb.Slots = slots
	}
	return sbs, members, nil
}

// commitAppend writes the old members' superblocks with the member count and slot table of the
// new ones and the next events: the append's commit. From here on this Array writes no
// superblock.
func (a *Array) commitAppend(newSBs []*raid.Superblock) error {
	a.sbMu.Lock()
	defer a.sbMu.Unlock()
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	sbs := make([]*raid.Superblock, len(a.members))
	var errs []error
	for i, m := range a.members {
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", m.Path, err))
		}
		sbs[i] = sb
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (not committed: the array keeps its members)", errors.Join(errs...))
	}
	a.superseded.Store(true)
	ref := newSBs[0]
	old := a.sb
	a.sb.Events++
	a.sb.Members, a.sb.Slots = ref.Members, ref.Slots
	a.sb.UpdateTime = time.Now().UnixNano()
	wrote := 0
	for i, sb := range sbs {
		sb.Members, sb.Index, sb.Slots = a.sb.Members, uint32(i), a.sb.Slots
		sb.Events, sb.State, sb.UpdateTime, sb.WholeEvents = a.sb.Events, a.sb.State, a.sb.UpdateTime, a.sb.WholeEvents
		if err := raid.WriteSuperblock(a.members[i].File, sb); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", a.members[i].Path, err))
			continue
		}
		wrote++
	}
	if len(errs) > 0 {
		if wrote == 0 {
			a.superseded.Store(false)
			a.sb = old
			return fmt.Errorf("the commit reached no member: %w (not committed: the array keeps its members)", errors.Join(errs...))
		}
		return fmt.Errorf("the commit reached %d of %d members (assemble the array again: a linear array needs every member, and one it missed cannot be rebuilt): %w",
			wrote, len(sbs), errors.Join(errs...))
	}
	return nil
}
