package array

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"uraid/internal/blkdiscard"
	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
)

// Membership changes of a running mirrored array, as mdadm's operators know them: fail, remove,
// add (a spare, a new member for an empty slot, or a member that left coming back), replace, and
// hot spares that take a failed member's place by themselves.
//
// A rebuild fills a slot's device online, region by region, with writes to the region locked out
// while it is copied (as resync does), and every write from the start of the rebuild reaching the
// new device too. It copies only live regions: a region the map says is trimmed holds nothing of
// the user's, so it is trimmed on the new device instead. A member coming back after it left
// gets only the regions written meanwhile (the map keeps them dirty while the array is degraded).
// The progress is checkpointed in the map's cursor and the new device's superblock says it is
// being rebuilt, so a rebuild interrupted by a crash or a stop resumes where it was.
//
// A replace rebuilds onto the new device while the old one still serves; at the end the new
// device takes the old one's file descriptor number (dup3), so that no request prepared with the
// old number can reach a closed or reused descriptor, and the old device is let go.

// SyncRebuild is the sync action of a rebuild.
const SyncRebuild = "rebuild"

// Errors of membership changes; the messages say what to do.
var (
	ErrNotInArray  = errors.New("is not in the array")
	ErrLastCopy    = errors.New("holds the last copy of some data")
	ErrInService   = errors.New("is in service")
	ErrNoRedundacy = errors.New("has no redundancy")
)

// rebuildTarget is what a rebuild fills.
type rebuildTarget struct {
	slot int
	dev  *raid.Member // the device written: the slot's own, or the replacement (shadow)
	// shadow: a replace, the slot's old device still serving beside dev.
	shadow bool
	// onlyResync: a member that comes back; only the regions written while it was away.
	onlyResync bool
}

// slotOf returns the slot whose device is at path, -1 when none.
func (a *Array) slotOf(path string) int {
	for i, m := range a.members {
		if m != nil && samePath(m.Path, path) {
			return i
		}
	}
	return -1
}

func (a *Array) redundant() error {
	if !a.sb.Level.Redundant() {
		return fmt.Errorf("array %s: %w: level %s keeps one copy of each byte; members cannot change while it runs",
			a.Name, ErrNoRedundacy, a.sb.Level.ShortName())
	}
	return nil
}

// FailMember takes the member at path out of service, as an I/O error would: it gets no more
// reads or writes and a hot spare, if any, takes its place. It refuses the last copy of some
// data.
func (a *Array) FailMember(path string) error {
	if err := a.redundant(); err != nil {
		return err
	}
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	i := a.slotOf(path)
	if i < 0 {
		return fmt.Errorf("array %s: %s %w (members: %s)", a.Name, path, ErrNotInArray, a.memberList())
	}
	if !a.writable(i) {
		return nil // failed already
	}
	if MemberState(a.state[i].Load()) == MemberActive && !a.readableWithout(i) {
		return fmt.Errorf("array %s: member %s %w: failing it would lose data; add a member first", a.Name, path, ErrLastCopy)
	}
	if a.resyncSource(i) && !plant.Is("source") {
		// Where the copies may differ (an unclean stop), reads come from the copy the resync
		// copies from: what they returned is on that member alone until the resync is done.
		return fmt.Errorf("array %s: member %s %w: regions written when the array stopped uncleanly are read from it until the resync has copied them to the other copies; wait for the resync (uraid status %s)",
			a.Name, path, ErrLastCopy, a.Name)
	}
	a.syncer.cancelRebuildOf(i)
	a.fail(i, errors.New("failed by the administrator"))
	return a.writeSuperblocks(raid.StateDirty) // it reads as stale from now on
}

// readableWithout reports whether every byte keeps a working copy without member i. It asks of
// a copy of the states: the live ones are what the queue goroutine serves by.
func (a *Array) readableWithout(i int) bool {
	if plant.Is("D") {
		old := a.state[i].Load()
		a.state[i].Store(int32(MemberFailed))
		ok := a.readable()
		a.state[i].Store(old)
		return ok
	}
	st := a.states()
	st[i] = MemberFailed
	return a.readableIn(st)
}

// resyncSource reports whether member i is, for some of the array, the copy a resync copies
// from (the first active copy of a piece, as serveRead and the resync pick it) while some region
// still needs the resync.
func (a *Array) resyncSource(i int) bool {
	if a.regions == nil || !a.regions.resync.Load() || !a.regions.needResync() || MemberState(a.state[i].Load()) != MemberActive {
		return false
	}
	st := a.states()
	source := false
	a.probePieces(func(p *mapping.Piece) bool {
		for _, e := range p.Copies[:p.N] {
			if st[e.Member] == MemberActive {
				source = e.Member == i
				break
			}
		}
		return !source
	})
	return source
}

// RemoveMember lets go of a failed member or a spare: its device is closed and its slot is left
// empty for a new member. An active member must be failed first.
func (a *Array) RemoveMember(path string) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	a.membersMu.Lock()
	for k, sp := range a.spares {
		if samePath(sp.Path, path) {
			a.spares = slices.Delete(a.spares, k, k+1)
			a.membersMu.Unlock()
			return sp.Close()
		}
	}
	a.membersMu.Unlock()
	i := a.slotOf(path)
	if i < 0 {
		return fmt.Errorf("array %s: %s %w (members: %s)", a.Name, path, ErrNotInArray, a.memberList())
	}
	if a.writable(i) {
		return fmt.Errorf("array %s: member %s %w: fail it first (uraid fail %s %s)", a.Name, path, ErrInService, a.Name, path)
	}
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	m := a.members[i]
	a.members[i] = nil
	a.state[i].Store(int32(MemberMissing))
	if !plant.Is("refill") {
		a.refilled[i].Add(1) // the number leaves the device
	}
	if err := a.keepNumber(i, m); err != nil {
		a.log.Warn("descriptor number of the removed member not kept; closing it", "member", i, "path", m.Path, "err", err)
		return m.Close()
	}
	return nil
}

// keepNumber lets go of m's device but keeps its descriptor number as slot i's hole; membersMu
// held.
func (a *Array) keepNumber(i int, m *raid.Member) error {
	ph, err := os.OpenFile("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer ph.Close()
	if err := unix.Dup3(int(ph.Fd()), int(m.File.Fd()), unix.O_CLOEXEC); err != nil {
		return os.NewSyscallError("dup3", err)
	}
	a.holes[i] = m.File // the number, now on the placeholder; the device is closed
	return nil
}

// AddMember adds the device at path: a member of this array that left comes back with only the
// regions written meanwhile resynced; a blank device fills an empty (or failed) slot by a
// rebuild, or becomes a spare when no slot is empty. It returns what became of it.
func (a *Array) AddMember(path string, force bool) (string, error) {
	if err := a.redundant(); err != nil {
		return "", err
	}
	if a.reshaping() != nil {
		// A rebuild walks one layout; the reshape moves the bytes from one to another.
		return "", fmt.Errorf("array %s: %w: wait for it to finish (uraid wait %s), then add or replace", a.Name, ErrReshaping, a.Name)
	}
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	c, err := a.vetAdd(path, force)
	if err != nil {
		return "", err
	}
	m, readd, unfinished, before := c.m, c.readd, c.unfinished, c.before
	// Every check passed: what the add writes from here on is put back should it fail before
	// the device serves.
	saved, err := raid.SaveMetadata(m, int64(a.sb.DataOffset))
	if err != nil {
		m.Close()
		return "", fmt.Errorf("array %s: %w", a.Name, err)
	}
	if readd >= 0 {
		if err := a.startRebuild(readd, m, false, !unfinished && !before); err != nil {
			return "", errors.Join(err, a.release(m, saved))
		}
		if unfinished {
			return fmt.Sprintf("re-added as member %d: it left before its rebuild finished, so it is rebuilt whole", readd), nil
		}
		if before {
			return fmt.Sprintf("re-added as member %d: it left before the array was last made whole again, so it is rebuilt whole", readd), nil
		}
		return fmt.Sprintf("re-added as member %d: the regions written since it left are resynced", readd), nil
	}
	slot := a.emptySlot()
	if slot < 0 {
		if err := a.writeSpare(m); err != nil {
			return "", errors.Join(err, a.release(m, saved))
		}
		a.membersMu.Lock()
		a.spares = append(a.spares, m)
		a.membersMu.Unlock()
		return "added as a spare", nil
	}
	if err := a.startRebuild(slot, m, false, false); err != nil {
		return "", errors.Join(err, a.release(m, saved))
	}
	return fmt.Sprintf("added as member %d: rebuilding", slot), nil
}

// addition is a device an add may take, every check passed, and what it would be to the array.
type addition struct {
	m *raid.Member
	// readd is the slot it left and comes back to, -1 for a device new to the array; unfinished
	// and before say why such a device is rebuilt whole (AddMember).
	readd              int
	unfinished, before bool
}

// vetAdd opens the device at path and checks that an add may take it, writing nothing.
// adminMu held.
func (a *Array) vetAdd(path string, force bool) (addition, error) {
	if a.slotOf(path) >= 0 && a.writable(a.slotOf(path)) {
		return addition{}, fmt.Errorf("array %s: %s is a member already", a.Name, path)
	}
	if a.spareOrReplacement(path) {
		return addition{}, fmt.Errorf("array %s: %s is a spare or a replacement of the array already", a.Name, path)
	}
	m, err := raid.OpenMember(path)
	if err != nil {
		return addition{}, err
	}
	need := int64(a.sb.DataOffset + a.sb.DataSize)
	if m.Size < need {
		m.Close()
		return addition{}, fmt.Errorf("array %s: %s: %w: %d bytes, the array's members need %d", a.Name, path, raid.ErrTooSmall, m.Size, need)
	}
	sb, err := raid.ReadSuperblock(m.File)
	c := addition{m: m, readd: -1}
	switch {
	case err == nil && sb.ArrayUUID == a.sb.ArrayUUID:
		if sb.Role != raid.RoleSpare && int(sb.Index) < len(a.members) && !a.writable(int(sb.Index)) && sb.Events <= a.sb.Events {
			c.readd = int(sb.Index) // it left and comes back to its slot
			// A member that left in the middle of its rebuild holds only part of the array:
			// the map's regions written meanwhile are not all it misses. Nor are they for one
			// that left before the array was last made whole again: the map has forgotten
			// what was written between its leaving and then.
			c.unfinished = sb.Role == raid.RoleRebuilding
			c.before = sb.Events < a.sb.WholeEvents
		}
	case err == nil && !force:
		m.Close()
		return addition{}, fmt.Errorf("array %s: %s: %w of array %q (%s); give --force to use it here, losing what it holds",
			a.Name, path, raid.ErrHasSuperblock, sb.Name, sb.ArrayUUID)
	case err != nil && !errors.Is(err, raid.ErrNotMember) && !force:
		m.Close()
		return addition{}, fmt.Errorf("array %s: %s: %w; give --force to overwrite it", a.Name, path, err)
	}
	// A device prepared for an append of this linear array that did not commit is no member: it
	// may be appended again.
	uncommitted := err == nil && raid.AppendedPastEnd(sb, &a.sb)
	if err == nil && c.readd < 0 && !force && sb.ArrayUUID == a.sb.ArrayUUID && sb.Role != raid.RoleSpare && !uncommitted {
		m.Close()
		return addition{}, fmt.Errorf("array %s: %s was member %d of this array, and that slot is taken; give --force to add it as a new device", a.Name, path, sb.Index)
	}
	if err != nil {
		// Not a uraid member: refuse whatever else it carries (a filesystem, LVM, LUKS, swap,
		// a partition table), as create does.
		if serr := raid.CheckSignatures(m, force); serr != nil {
			m.Close()
			return addition{}, fmt.Errorf("array %s: %w", a.Name, serr)
		}
	}
	return c, nil
}

// ReplaceMember rebuilds a copy of the member at old onto the blank device at new while old still
// serves, then puts new in its place and lets old go: the array keeps its redundancy throughout.
func (a *Array) ReplaceMember(old, new string, force bool) error {
	if err := a.redundant(); err != nil {
		return err
	}
	if a.reshaping() != nil {
		// A rebuild walks one layout; the reshape moves the bytes from one to another.
		return fmt.Errorf("array %s: %w: wait for it to finish (uraid wait %s), then add or replace", a.Name, ErrReshaping, a.Name)
	}
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	i := a.slotOf(old)
	if i < 0 {
		return fmt.Errorf("array %s: %s %w (members: %s)", a.Name, old, ErrNotInArray, a.memberList())
	}
	if MemberState(a.state[i].Load()) != MemberActive {
		return fmt.Errorf("array %s: member %s is %v: add the new device instead (uraid add %s %s)", a.Name, old, MemberState(a.state[i].Load()), a.Name, new)
	}
	if a.slotOf(new) >= 0 || a.spareOrReplacement(new) {
		return fmt.Errorf("array %s: %s is in the array already; give a device that is not", a.Name, new)
	}
	m, err := raid.OpenMember(new)
	if err != nil {
		return err
	}
	need := int64(a.sb.DataOffset + a.sb.DataSize)
	if m.Size < need {
		m.Close()
		return fmt.Errorf("array %s: %s: %w: %d bytes, the array's members need %d", a.Name, new, raid.ErrTooSmall, m.Size, need)
	}
	if err := raid.CheckFresh(m, force); err != nil {
		m.Close()
		return err
	}
	saved, err := raid.SaveMetadata(m, int64(a.sb.DataOffset))
	if err != nil {
		m.Close()
		return fmt.Errorf("array %s: %w", a.Name, err)
	}
	if err := a.startRebuild(i, m, true, false); err != nil {
		return errors.Join(err, a.release(m, saved))
	}
	return nil
}

// spareOrReplacement reports whether path is one of the spares or a replace's new device.
func (a *Array) spareOrReplacement(path string) bool {
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	for _, m := range append(slices.Clip(a.spares), a.shadowMembers...) {
		if m != nil && samePath(m.Path, path) {
			return true
		}
	}
	return false
}

// SetRebuildOptions paces the rebuilds started from now on (add, replace, a spare taking over).
func (a *Array) SetRebuildOptions(o SyncOptions) {
	if a.syncer == nil {
		return
	}
	a.syncer.mu.Lock()
	a.syncer.rebuildOpts = o
	a.syncer.mu.Unlock()
}

// OnMembershipChange sets f to hear, from a goroutine of its own, that the devices the array
// uses may have changed: a member failed, a spare took over, a replace ended. The daemon keeps
// its record of the members with it.
func (a *Array) OnMembershipChange(f func()) {
	a.membersMu.Lock()
	a.changed = f
	a.membersMu.Unlock()
}

// membershipChanged tells the OnMembershipChange hook.
func (a *Array) membershipChanged() {
	a.membersMu.Lock()
	f := a.changed
	a.membersMu.Unlock()
	if f != nil {
		go f()
	}
}

// emptySlot returns a slot with no member in service, -1 when none.
func (a *Array) emptySlot() int {
	for i := range a.members {
		if !a.writable(i) {
			return i
		}
	}
	return -1
}

func (a *Array) memberList() string {
	var ps []string
	for _, m := range a.members {
		if m != nil {
			ps = append(ps, m.Path)
		}
	}
	return fmt.Sprint(ps)
}

// writeSpare gives m a spare's superblock of this array.
func (a *Array) writeSpare(m *raid.Member) error {
	sb := a.Superblock()
	id, err := raid.NewUUID()
	if err != nil {
		return err
	}
	sb.MemberUUID, sb.Index, sb.Role = id, 0, raid.RoleSpare
	return raid.WriteSuperblock(m.File, &sb)
}

// release lets go of m after an add, replace or spare's rebuild onto it failed to start. Unless it
// took a slot (its descriptor is the slot's now, and stays open with it; the array holds it as a
// failed member), its metadata area gets back what saved holds (nil: left as it is), and it is
// closed, or kept until the array closes if it is a replace's target (requests may hold its
// descriptor). The error is the restore's.
func (a *Array) release(m *raid.Member, saved *raid.Metadata) error {
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	if slices.Contains(a.members, m) {
		return nil
	}
	var err error
	if saved != nil {
		err = saved.Restore(m)
	}
	for i, sh := range a.shadowMembers {
		if sh == m {
			a.shadowMembers[i] = nil
			a.shadows[i].Store(nil)
			a.retired = append(a.retired, m)
			return err
		}
	}
	m.Close()
	return err
}

// claimFault, set only by tests, fails a device's claim of its slot (its superblock write, after
// the region map was written to it) as a write error would, so that a test sees the add or
// replace put the device back as it was.
var claimFault func(path string) error

// startRebuild puts m in slot i (or beside it, shadow) and starts the rebuild; adminMu held.
func (a *Array) startRebuild(i int, m *raid.Member, shadow, onlyResync bool) error {
	if a.syncer.busyWith() != "" {
		if err := a.syncer.yieldTo(SyncRebuild); err != nil {
			return err
		}
	}
	sb := a.Superblock()
	sb.Index, sb.Role = uint32(i), raid.RoleRebuilding
	if !onlyResync {
		id, err := raid.NewUUID()
		if err != nil {
			return err
		}
		sb.MemberUUID = id
	} else if old, err := raid.ReadSuperblock(m.File); err == nil {
		sb.MemberUUID = old.MemberUUID
	}
	claim := func() error {
		if claimFault != nil {
			if err := claimFault(m.Path); err != nil {
				return fmt.Errorf("member %s: %w", m.Path, err)
			}
		}
		if err := raid.WriteSuperblock(m.File, &sb); err != nil {
			return fmt.Errorf("member %s: %w", m.Path, err)
		}
		return nil
	}
	if plant.Is("claim") {
		if err := claim(); err != nil {
			return err
		}
	}
	// The checkpoint says from the start what kind of fill this is: a re-add resumed after a
	// crash copies only the regions written while the member was away, as it would have.
	action := region.ActionRebuild
	if onlyResync {
		action = region.ActionReAdd
	}
	a.regions.setCursor(region.Cursor{Action: action, Member: uint32(i)})
	// The new device gets a whole copy of the map (the checkpoint with it, on every member)
	// before it takes writes, and before its superblock claims the slot: a device that claims
	// it while the members' maps still hold an earlier fill's checkpoint of the slot (another
	// device's, cut short) would resume from that one after a crash, and count as copied what
	// it never got.
	if err := a.regions.writeWhole(m); err != nil {
		return fmt.Errorf("member %s: %w", m.Path, err)
	}
	if !plant.Is("claim") {
		if err := claim(); err != nil {
			return err
		}
	}
	t := rebuildTarget{slot: i, dev: m, shadow: shadow, onlyResync: onlyResync}
	if !shadow {
		if err := a.install(i, m); err != nil {
			return err
		}
		m = a.members[i]
		t.dev = m
		cfg, err := a.memberConfig(i, m, a.opts.Discard)
		if err != nil {
			return err
		}
		a.state[i].Store(int32(MemberRebuilding)) // from here on it takes writes and discards
		if err := a.engine.Revive(i, cfg); err != nil {
			a.state[i].Store(int32(MemberFailed))
			return err
		}
		if err := a.writeSuperblocks(raid.StateDirty); err != nil {
			return err
		}
	} else {
		a.shadowSet(i, m)
	}
	a.log.Info("rebuild of member started", "member", i, "path", m.Path)
	return a.syncer.startRebuild(t, 0)
}

// rebuild is the job of a rebuild: every region from from on (only those needing resync for a
// member that comes back), live ones copied, trimmed ones trimmed.
func (s *syncer) rebuild(j *syncJob, t rebuildTarget, from int) error {
	n := s.g.regionCount()
	action := region.ActionRebuild
	if t.onlyResync {
		action = region.ActionReAdd // a resumed re-add copies only what it would have
	}
	// settled marks the regions this run made whole: every piece of the region is on the target
	// and one other copy, which the target now equals. Only those may count as in sync when the
	// array is whole again; a region below a resumed run's cursor, or one with pieces on other
	// mirror pairs, may still hold copies that differ (a write a crash cut short).
	settled := make([]bool, n)
	if !s.a.Unclean() {
		// The regions below a resumed run's checkpoint were made whole then, durably, and the
		// array stopped cleanly since: no write to them was cut short.
		for r := range from {
			w, err := s.wholeOn(t, r)
			if err != nil {
				return err
			}
			settled[r] = w
		}
	}
	for r := from; r < n; r++ {
		if t.onlyResync && !s.g.stillNeedsResync(r) {
			continue
		}
		whole, err := s.rebuildRegion(j, t, r)
		if err != nil {
			return err
		}
		settled[r] = whole
		s.g.setCursor(region.Cursor{Action: action, Member: uint32(t.slot), Position: r + 1})
		hit(FailpointRebuildCursor)
	}
	if plant.Is("B") && s.a.Map().Copies() == 2 {
		for r := range settled {
			settled[r] = true
		}
	}
	return s.a.finishRebuild(t, settled)
}

// rebuildRegion fills region r of the target and reports whether the region's copies now agree
// everywhere (see rebuild's settled). What it copied is durable on the target before it returns:
// the checkpoint that moves past r reaches the disk with any later map flush.
func (s *syncer) rebuildRegion(j *syncJob, t rebuildTarget, r int) (bool, error) {
	select {
	case <-j.cancel:
		return false, errCancelled
	default:
	}
	early := plant.Is("A") && !t.onlyResync && s.g.trimmed(r)
	s.g.hitRegion(FailpointRebuildRegion, r)
	off, n := s.g.lock(r)
	defer s.g.unlock()
	// Only under the lock: a write that lands before it dirties the region and reaches the
	// target, and a region taken for trimmed then would punch that write out of the target.
	trimmed := !t.onlyResync && s.g.trimmed(r)
	if plant.Is("A") {
		trimmed = early
	}
	whole := !t.shadow && s.a.Map().Copies() == 2
	copied := false
	for pos := off; pos < off+n; pos += syncStep {
		step := min(int64(syncStep), off+n-pos)
		var err error
		j.pieces, err = s.a.Map().Read(pos, step, j.pieces[:0])
		if err != nil {
			return false, err
		}
		for k := range j.pieces {
			p := &j.pieces[k]
			var dst mapping.Extent
			var src [mapping.MaxCopies]mapping.Extent
			ns := 0
			found := false
			for _, e := range p.Copies[:p.N] {
				switch {
				case e.Member == t.slot:
					dst, found = e, true
					if t.shadow && s.a.active(e.Member) {
						src[ns] = e
						ns++
					}
				case s.a.active(e.Member):
					src[ns] = e
					ns++
				}
			}
			if !found {
				whole = false
				continue
			}
			if trimmed {
				if err := s.trimTarget(t, dst); err != nil {
					return false, err
				}
				continue
			}
			if ns == 0 {
				return false, fmt.Errorf("region %d: no working copy to rebuild member %d from", r, t.slot)
			}
			if err := s.copyTo(j, t, dst, src[:ns]); err != nil {
				return false, err
			}
			copied = true
		}
		j.done.Add(step)
		s.progress(j)
		if err := s.pace(j, step); err != nil {
			return false, err
		}
	}
	if copied && !plant.Is("F") {
		if err := t.dev.File.Sync(); err != nil {
			s.a.accountSync(t.slot, true, 0, err)
			return false, fmt.Errorf("rebuild member %d onto %s: sync: %w", t.slot, t.dev.Path, err)
		}
	}
	return whole, nil
}

// wholeOn reports whether filling t makes every copy of region r agree: each piece of r has two
// copies, one of them on t's slot.
func (s *syncer) wholeOn(t rebuildTarget, r int) (bool, error) {
	if t.shadow || s.a.Map().Copies() != 2 {
		return false, nil
	}
	off, n := s.g.span(r)
	var err error
	var pieces []mapping.Piece
	for pos := off; pos < off+n; pos += syncStep {
		pieces, err = s.a.Map().Read(pos, min(int64(syncStep), off+n-pos), pieces[:0])
		if err != nil {
			return false, err
		}
		for k := range pieces {
			if !slices.ContainsFunc(pieces[k].Copies[:pieces[k].N], func(e mapping.Extent) bool { return e.Member == t.slot }) {
				return false, nil
			}
		}
	}
	return true, nil
}

// copyTo reads dst's bytes from the source copy whose TRIMs delay it least and writes them to the
// target. A source that fails is failed and the next tried; with none left the rebuild fails.
func (s *syncer) copyTo(j *syncJob, t rebuildTarget, dst mapping.Extent, src []mapping.Extent) error {
	if len(j.bufs) == 0 {
		j.bufs = append(j.bufs, raid.AlignedBytes(syncStep))
	}
	buf := j.bufs[0][:dst.Length]
	for {
		j.rd.Reset()
		j.rd.Add(src...)
		for !s.a.engine.BeginRead(&j.rd, 0) {
			<-j.resumed
		}
		if !j.rd.HasPick(0) {
			return fmt.Errorf("member %d [%d, +%d): no working copy left to rebuild from", t.slot, dst.Offset, dst.Length)
		}
		c := j.rd.Pick(0)
		err := s.pread(c, buf)
		s.a.engine.EndRead(&j.rd, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, errSlotChanged) {
			s.a.fail(c.Member, err)
		}
		src = slices.DeleteFunc(src, func(e mapping.Extent) bool { return e.Member == c.Member })
		if len(src) == 0 {
			return fmt.Errorf("member %d [%d, +%d): every source copy failed: %w", t.slot, dst.Offset, dst.Length, err)
		}
	}
	if !t.shadow {
		j.wr.Reset()
		j.wr.Extents = append(j.wr.Extents, dst)
		for !s.a.engine.BeginWrite(&j.wr) {
			<-j.resumed
		}
		defer s.a.engine.EndWrite(&j.wr, 0)
	}
	got, err := unix.Pwrite(int(t.dev.File.Fd()), buf, s.a.dataOff[t.slot]+dst.Offset)
	if err == nil && got != len(buf) {
		err = unix.EIO
	}
	s.a.accountSync(t.slot, true, int64(len(buf)), err)
	if err != nil {
		return fmt.Errorf("rebuild member %d onto %s: %w", t.slot, t.dev.Path, os.NewSyscallError("pwrite", err))
	}
	return nil
}

// trimTarget trims dst on the target: the region is trimmed on every copy, so it holds nothing
// to copy, and the new device's flash is better off free.
func (s *syncer) trimTarget(t rebuildTarget, dst mapping.Extent) error {
	off := s.a.dataOff[t.slot] + dst.Offset
	fd := int(t.dev.File.Fd())
	var err error
	if t.dev.Block {
		if t.dev.DiscardGranularity == 0 {
			return nil
		}
		err = blkdiscard.Ioctl(fd, off, dst.Length)
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
			return nil // a device that cannot trim this keeps what it has: free space either way
		}
	} else {
		err = os.NewSyscallError("fallocate", unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, dst.Length))
	}
	if err != nil {
		return fmt.Errorf("rebuild member %d onto %s: trim: %w", t.slot, t.dev.Path, err)
	}
	return nil
}

// finishRebuild puts the rebuilt device in service; settled is rebuild's.
func (a *Array) finishRebuild(t rebuildTarget, settled []bool) error {
	if err := t.dev.File.Sync(); err != nil {
		return fmt.Errorf("rebuild member %d onto %s: sync: %w", t.slot, t.dev.Path, err)
	}
	if t.shadow {
		if err := a.swapShadow(t.slot); err != nil {
			return err
		}
	} else if !a.state[t.slot].CompareAndSwap(int32(MemberRebuilding), int32(MemberActive)) {
		return fmt.Errorf("rebuild member %d onto %s: it failed meanwhile", t.slot, t.dev.Path)
	}
	whole := !a.Degraded()
	if err := a.writeSuperblocksAs(raid.StateDirty, whole && !plant.Is("readd")); err != nil {
		return err
	}
	if whole {
		// Every copy is whole again: the map is written whole to every member, then it may clean
		// the regions written while the array was degraded that the rebuild made agree; the
		// resync that follows copies the others.
		if err := a.regions.rejoin(settled); err != nil {
			return err
		}
	}
	a.log.Info("rebuild of member finished", "member", t.slot, "path", t.dev.Path)
	if t.shadow {
		a.membershipChanged()
	}
	return nil
}

// install makes m the device of slot i, which is out of service. A slot keeps its file
// descriptor number for the array's life: m takes the old device's number (dup3), so that no
// request prepared with that number can reach a closed or reused descriptor; m's own
// descriptor is closed. A slot emptied by a remove kept its number as a hole, which m takes; a
// slot that never had a device takes m as it is.
func (a *Array) install(i int, m *raid.Member) error {
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	num := a.holes[i]
	if old := a.members[i]; old != nil {
		num = old.File
	}
	if num == nil {
		a.members[i] = m
		return nil
	}
	if !plant.Is("refill") {
		a.refilled[i].Add(1) // before the number changes: a read that may see the new device sees it
	}
	if err := unix.Dup3(int(m.File.Fd()), int(num.Fd()), unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("member %s: take slot %d's descriptor: %w", m.Path, i, os.NewSyscallError("dup3", err))
	}
	m.File.Close()
	m.File = num // the slot's number, now the new device
	a.members[i] = m
	a.holes[i] = nil
	return nil
}

// shadowSet makes m slot i's replacement: from now on every write to slot i reaches it too.
func (a *Array) shadowSet(i int, m *raid.Member) {
	a.membersMu.Lock()
	a.shadowMembers[i] = m
	a.membersMu.Unlock()
	a.shadows[i].Store(m)
}

// replacementFailed ends a replace whose new device failed a write: the queue goroutine stops
// sending it writes at once, and the rest happens off it.
func (a *Array) replacementFailed(i int, sh *raid.Member, err error) {
	if !a.shadows[i].CompareAndSwap(sh, nil) {
		return
	}
	a.log.Warn("replacement failed; the replace is abandoned", "member", i, "path", sh.Path, "err", err)
	go func() {
		defer a.membershipChanged()
		a.syncer.cancelRebuildOf(i)
		a.membersMu.Lock()
		a.shadowMembers[i] = nil
		a.retired = append(a.retired, sh)
		a.membersMu.Unlock()
	}()
}

// shadowDrop ends a replace that did not finish: writes stop going to the replacement, whose
// descriptor stays open until the array closes (requests prepared with it may be in flight).
func (a *Array) shadowDrop(i int) {
	if m := a.shadows[i].Swap(nil); m != nil {
		a.membersMu.Lock()
		a.shadowMembers[i] = nil
		a.retired = append(a.retired, m)
		a.membersMu.Unlock()
	}
}

// swapShadow puts slot i's replacement in the slot's place: TRIMs of the old device stop, the
// replacement takes the slot's descriptor number, and the old device is let go.
func (a *Array) swapShadow(i int) error {
	sh := a.shadows[i].Load()
	if sh == nil {
		return fmt.Errorf("replace member %d: the replacement failed meanwhile", i)
	}
	if !a.active(i) {
		// The member it was to replace failed (and may be removed) meanwhile: the slot is not
		// the replace's to take over. The replacement is let go; add it for a rebuild instead.
		a.shadowDrop(i)
		return fmt.Errorf("replace member %d: the member it replaces left the array meanwhile; add %s to rebuild the slot", i, sh.Path)
	}
	a.engine.Fail(i) // no TRIM may reach the old device through the number from here on
	a.membersMu.Lock()
	old := a.members[i]
	if err := unix.Dup3(int(sh.File.Fd()), int(old.File.Fd()), unix.O_CLOEXEC); err != nil {
		a.membersMu.Unlock()
		return fmt.Errorf("replace member %d: %w", i, os.NewSyscallError("dup3", err))
	}
	// The replacement's own number stays open until the array closes: requests prepared with
	// it before the swap may still be waiting to be submitted. It is the same open file.
	a.retired = append(a.retired, &raid.Member{Path: sh.Path, File: sh.File})
	nm := *sh
	nm.File = old.File
	a.members[i] = &nm
	a.shadowMembers[i] = nil
	a.membersMu.Unlock()
	a.shadows[i].Store(nil)
	cfg, err := a.memberConfig(i, &nm, a.opts.Discard)
	if err != nil {
		return err
	}
	if err := a.engine.Revive(i, cfg); err != nil {
		return err
	}
	a.log.Info("member replaced: the new device took the place of the old", "member", i, "path", nm.Path, "old_path", old.Path)
	a.emit(Event{Type: EventMemberReplaced, Member: slotPtr(i), Path: nm.Path,
		Message: fmt.Sprintf("%s took the place of %s as member %d", nm.Path, old.Path, i)})
	return nil
}

// fillFromSpares has a spare fill the first empty slot, as one takes a failed member's place: an
// array assembled with a slot empty and a spare (a raid1 that gained a copy, SetCopies) fills it
// with no operator; one slot at a time, the next when that rebuild ends. now starts the rebuild
// before it returns (MarkDirty, so that the rebuild runs once the array serves); otherwise on a
// goroutine of its own (a sync job's end). Never on the queue goroutine: it takes adminMu.
func (a *Array) fillFromSpares(now bool) {
	a.membersMu.Lock()
	spares := len(a.spares)
	a.membersMu.Unlock()
	i := a.emptySlot()
	if i < 0 || spares == 0 {
		return
	}
	fill := func() { a.takeSpare(i, plant.Is("copiesfill")) }
	if now {
		fill()
	} else {
		a.background(fill)
	}
}

// activateSpare starts a rebuild onto a hot spare when member i failed.
func (a *Array) activateSpare(i int) { a.takeSpare(i, false) }

// takeSpare starts a rebuild of slot i onto a hot spare; onlyResync (the planted defect
// copiesfill) copies only the regions the map says need it, as for a member coming back.
func (a *Array) takeSpare(i int, onlyResync bool) {
	defer a.membershipChanged() // the failed member leaves the record, a spare may enter it
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	if a.writable(i) || a.closing.Load() {
		return
	}
	a.membersMu.Lock()
	if len(a.spares) == 0 {
		a.membersMu.Unlock()
		return
	}
	sp := a.spares[0]
	a.spares = a.spares[1:]
	a.membersMu.Unlock()
	a.log.Info("a spare takes the place of a member", "member", i, "spare", sp.Path)
	a.emit(Event{Type: EventSpareActivated, Member: slotPtr(i), Path: sp.Path,
		Message: fmt.Sprintf("spare %s takes the place of member %d", sp.Path, i)})
	if err := a.startRebuild(i, sp, false, onlyResync); err != nil {
		a.log.Error("rebuild onto the spare failed to start", "member", i, "spare", sp.Path, "err", err)
		a.release(sp, nil)
	}
}
