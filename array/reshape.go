package array

// reshape.go widens a stopped raid0 or raid10 (n2, o2) by members (uraid grow --add): the
// planner's steps (package reshape) carried out on the members, offline, crash-safe and
// resumable.

import (
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/blkdiscard"
	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
	"uraid/reshape"
)

// Failpoints of a reshape, one before each persist and each write phase (docs/design.md,
// "Reshape"): a power cut at any of them leaves members from which the reshape resumes.
const (
	// FailpointReshapeCommit: every check passed and the new members carry the reshape's
	// superblocks; the old members' (the commit) are about to be written.
	FailpointReshapeCommit = "reshape-commit"
	// FailpointReshapeBackup: a backup step read its window; the backup is about to be written.
	FailpointReshapeBackup = "reshape-backup"
	// FailpointReshapeMid: the backup is written and flushed; the state naming it is about to be
	// persisted.
	FailpointReshapeMid = "reshape-mid"
	// FailpointReshapeWrite: the step's home writes and discards are about to be issued.
	FailpointReshapeWrite = "reshape-write"
	// FailpointReshapePersist: the step's writes are flushed; the state after it is about to be
	// persisted.
	FailpointReshapePersist = "reshape-persist"
	// FailpointReshapeIO: a step is about to write or discard one extent on one member (its
	// backup, home writes and discards): a cut here leaves a write phase half done.
	FailpointReshapeIO = "reshape-io"
	// FailpointReshapeMember: a persist is about to write one member's superblock (hit before
	// each): a cut here leaves the members one update apart.
	FailpointReshapeMember = "reshape-member"
	// FailpointReshapeMap: the reshape is persisted done; the region map of the new size is
	// about to be written.
	FailpointReshapeMap = "reshape-map"
	// FailpointReshapeFinish: the new map is on every member; the superblocks of the new
	// geometry, the reshape cleared, are about to be written.
	FailpointReshapeFinish = "reshape-finish"
)

// crc32cTable sums a backup (reshape.Backup.Sum).
var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

// backupSum is the checksum a backup step persists of its window: the bytes of it the old array
// holds (held), which a restore must read back.
func backupSum(buf []byte, held int64) uint32 { return crc32.Checksum(buf[:max(held, 0)], crc32cTable) }

// checkRestore refuses a restore step whose backup reads back other than the checksum persisted
// for it (want): before anything is written home.
func checkRestore(s *reshape.Step, buf []byte, held int64, want uint32) error {
	if sum := backupSum(buf, held); sum != want {
		return fmt.Errorf("%w: the backup of [%d, %d) reads back with checksum %08x, persisted %08x: the new members lost it; nothing was written home (restore the members from a copy)",
			ErrReshape, s.From, s.To, sum, want)
	}
	return nil
}

// ErrReshape means a reshape cannot be made or resumed as asked; the error says why and what to
// do.
var ErrReshape = errors.New("cannot reshape")

// ReshapeOptions say how Reshape runs.
type ReshapeOptions struct {
	// MaxWindowBytes caps the array bytes one step moves (reshape.Config), in whole KiB; 0 is
	// the planner's default. It is persisted: a resume plans with the same.
	MaxWindowBytes int64
	// Force uses added devices that carry a superblock or another signature.
	Force bool
	// Log is where progress goes (nil: slog.Default()).
	Log *slog.Logger
	// BeforeCommit, if set, is called with every member of the wider array, in slot order, once
	// the new members' superblocks are durable and before the commit (as for an append: a
	// daemon records its members there). An error stops the reshape before the commit.
	BeforeCommit func(members []string) error

	checkOnly bool // vet, write nothing (CheckReshape)
}

func (o ReshapeOptions) logger() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.Default()
}

// ReshapeReport is what a reshape did.
type ReshapeReport struct {
	OldMembers, NewMembers int
	OldSize, NewSize       int64
	// Resumed: the members carried a reshape under way, which this run took up.
	Resumed bool
	// Steps counts the steps carried out by this run, Finish included.
	Steps int
	// LiveBytes are the old array's bytes the region map holds live (all of them for raid0);
	// ReadBytes and WriteBytes what this run moved (every copy, backups included), DiscardBytes
	// what it discarded.
	LiveBytes, ReadBytes, WriteBytes, DiscardBytes int64
}

// Reshape widens the stopped array name, whose members are at paths, by the devices at add:
// a raid0 or raid10 (n2, o2) of N members becomes one of N+len(add), with the same chunk and data
// size on every member and the array larger by what the new members hold. It checks everything
// first and writes nothing on a refusal. Then the new members get the reshape's superblocks at
// cursor 0, the old ones the same (the commit), and the planner's steps run as reshape.Step says,
// each state persisted on every member; at the end the new space is discarded, the region map
// resized (its new regions trimmed) and the superblocks of the new geometry written.
//
// Members that carry a reshape under way (a cut, a kill) resume it: then add may name the new
// members again, or be empty when paths names them; Assemble resumes one too.
func Reshape(name string, paths, add []string, o ReshapeOptions) (ReshapeReport, error) {
	all := append(slices.Clip(paths), add...)
	if err := raid.CheckNamedOnce(all); err != nil {
		return ReshapeReport{}, fmt.Errorf("reshape: %w", err)
	}
	all = raid.StablePaths(all)
	var opened []*raid.Member
	defer func() {
		for _, m := range opened {
			m.Close()
		}
	}()
	var sbs []raid.MemberSB
	for i, p := range all {
		m, err := raid.OpenMember(p)
		if err != nil {
			return ReshapeReport{}, err
		}
		opened = append(opened, m)
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil && i < len(paths) {
			return ReshapeReport{}, fmt.Errorf("member %s: %w", p, err)
		}
		sbs = append(sbs, raid.MemberSB{Path: p, SB: sb})
	}
	// Devices named with --add may be the new members of a reshape under way, the newest of
	// them too when a cut came before the commit reached the old members.
	if newestReshape(sbs) != nil {
		return resumeReshape(name, opened, sbs, o)
	}
	for i := len(paths); i < len(all); i++ {
		sbs[i].SB = nil // vetted as devices to add
	}
	return startReshape(name, opened, sbs, len(paths), o)
}

// newestReshape returns the newest superblock among sbs if it carries a reshape under way.
func newestReshape(sbs []raid.MemberSB) *raid.Superblock {
	var newest *raid.Superblock
	for _, ms := range sbs {
		if ms.SB != nil && (newest == nil || ms.SB.Events > newest.Events) {
			newest = ms.SB
		}
	}
	if newest == nil || newest.Reshape == nil {
		return nil
	}
	return newest
}

// reshaper carries out one reshape on open members.
type reshaper struct {
	log     *slog.Logger
	sb      raid.Superblock // the newest, its Reshape set; Events the last persisted
	members []*raid.Member  // by slot, new count
	uuids   []raid.UUID     // each slot's member UUID
	plan    *reshape.Reshape
	regions *region.Map // the old array's map (raid10), nil for raid0
	live    reshape.Live
	buf     []byte
	step    reshape.Step
	report  ReshapeReport
}

// startReshape vets a new reshape of the members sbs[:old] by the devices after them, and runs it.
func startReshape(name string, opened []*raid.Member, sbs []raid.MemberSB, old int, o ReshapeOptions) (ReshapeReport, error) {
	r, err := commitReshape(name, opened, sbs, old, o)
	if err != nil {
		return ReshapeReport{}, err
	}
	return r.run()
}

// commitReshape vets a new reshape of the members sbs[:old] by the devices after them and
// commits it: the new members' superblocks, then the old ones' (the commit), at cursor 0. It
// writes nothing on a refusal; with an error, a reshaper is returned once the commit has begun
// on the old members (some may carry it).
func commitReshape(name string, opened []*raid.Member, sbs []raid.MemberSB, old int, o ReshapeOptions) (*reshaper, error) {
	fail := func(err error) (*reshaper, error) {
		return nil, fmt.Errorf("reshape array %s: %w (nothing written)", name, err)
	}
	if len(sbs) == old {
		return fail(fmt.Errorf("%w: no device to add: name the new members with --add", ErrReshape))
	}
	asm, err := raid.CheckAssembly(sbs[:old])
	if err != nil {
		return fail(fmt.Errorf("%w: the array must be whole: %w", ErrReshape, err))
	}
	ref := asm.Newest
	switch {
	case ref.Name != name:
		return fail(fmt.Errorf("%w: the members belong to array %q, not %q", ErrReshape, ref.Name, name))
	case len(asm.Spares) > 0 || len(asm.Replacing) > 0 || len(asm.Rebuilding) > 0 || len(asm.Superseded) > 0:
		return fail(fmt.Errorf("%w: a spare, a replacement or a rebuild is among the members: let the rebuild finish and remove the spares (uraid remove) first", ErrReshape))
	case len(asm.Members) != old:
		return fail(fmt.Errorf("%w: %d of the array's %d members named: name every member", ErrReshape, old, len(asm.Members)))
	case ref.Level.Redundant() && ref.State != raid.StateClean && !o.checkOnly:
		// (A served array's check runs before its hand-over marks it clean: CheckReshape asks
		// its region map in memory instead.)
		return fail(fmt.Errorf("%w: the array did not stop cleanly: assemble it, let its resync finish (uraid wait) and stop it first", ErrReshape))
	}
	newN := len(sbs)
	members := make([]*raid.Member, 0, newN)
	for _, ms := range asm.Members {
		members = append(members, opened[slices.IndexFunc(sbs, func(x raid.MemberSB) bool { return x.Path == ms.Path })])
	}
	need := int64(ref.DataOffset + ref.DataSize)
	from := raid.MapGeometry(&ref)
	to := raid.MapGeometry(&ref)
	for i := old; i < len(sbs); i++ {
		m := opened[i]
		if m.Size < need {
			return fail(fmt.Errorf("%w: %s: %w: %d bytes, the array's members need %d (data offset %d + data size %d)",
				ErrReshape, m.Path, raid.ErrTooSmall, m.Size, need, ref.DataOffset, ref.DataSize))
		}
		sb, err := raid.ReadSuperblock(m.File)
		switch {
		case err == nil && !o.Force:
			return fail(fmt.Errorf("%w: %s: %w of array %q (%s); give --force to use it here, losing what it holds",
				ErrReshape, m.Path, raid.ErrHasSuperblock, sb.Name, sb.ArrayUUID))
		case err != nil && !errors.Is(err, raid.ErrNotMember) && !o.Force:
			return fail(fmt.Errorf("%w: %s: %w; give --force to overwrite it", ErrReshape, m.Path, err))
		case err != nil:
			if serr := raid.CheckSignatures(m, o.Force); serr != nil {
				return fail(serr)
			}
		}
		members = append(members, m)
		to.MemberBytes = append(to.MemberBytes, (m.Size-int64(ref.DataOffset))/mapping.SectorBytes*mapping.SectorBytes)
	}
	window := o.MaxWindowBytes
	if window <= 0 {
		window = reshape.DefaultMaxWindowBytes
	}
	windowKiB := uint32(min(window>>10, 1<<22)) // at most 4 GiB a step
	if windowKiB == 0 {
		return fail(fmt.Errorf("%w: a window of %d bytes: give at least 1 KiB", ErrReshape, window))
	}
	plan, err := reshape.New(from, to, reshape.Config{MaxWindowBytes: int64(windowKiB) << 10})
	if err != nil {
		return fail(err)
	}
	r := &reshaper{log: o.logger().With("array", name), sb: ref, members: members, plan: plan}
	if err := r.loadRegions(old, false); err != nil {
		return fail(err)
	}
	if r.regions != nil {
		m := r.regions
		switch {
		case o.checkOnly:
			// A served array's map on disk says dirty where it writes: CheckReshape asks the
			// map in memory.
		case m.Cursor().Action != region.ActionNone:
			return fail(fmt.Errorf("%w: a %s stopped at region %d is to resume: assemble the array and let it finish first", ErrReshape, m.Cursor().Action, m.Cursor().Position))
		case m.Resyncs() > 0 || m.Count(region.Dirty) > 0:
			return fail(fmt.Errorf("%w: %d regions of the region map are dirty: assemble the array, let its resync finish and stop it first", ErrReshape, m.Count(region.Dirty)))
		}
		if _, err := m.Resized(plan.To().Size()); err != nil {
			return fail(fmt.Errorf("%w: region map: %w", ErrReshape, err))
		}
		g := m.Geometry()
		g.ArraySize = plan.To().Size()
		if area := int64(ref.DataOffset) - mapAreaOffset; g.AreaBytes() > area {
			return fail(fmt.Errorf("%w: the region map of the wider array (%d regions of %d bytes) needs %d bytes before the data, and the members have %d: reshape by fewer members at once",
				ErrReshape, g.Regions(), g.RegionSize, g.AreaBytes(), area))
		}
	}
	// The new members first: until the old ones carry the reshape (the commit), the array is
	// the old one, and a new member alone names an array that does not assemble without them.
	r.sb.Members = uint32(newN)
	r.sb.Reshape = &raid.ReshapeInfo{OldMembers: uint32(old), WindowKiB: windowKiB}
	r.sb.Slots = make([]uint64, newN)
	for i := range members {
		var u raid.UUID
		if i < old {
			u = asm.Members[i].SB.MemberUUID
		} else if u, err = raid.NewUUID(); err != nil {
			return fail(err)
		}
		r.uuids = append(r.uuids, u)
		r.sb.Slots[i] = u.Tag()
	}
	r.sb.Events++
	r.sb.UpdateTime = time.Now().UnixNano()
	if o.checkOnly {
		return r, nil
	}
	for i := old; i < newN; i++ {
		if err := r.writeSuperblock(i); err != nil {
			return nil, fmt.Errorf("reshape array %s: new member %s: %w (the array is as it was; the new devices may carry a half-written superblock)", name, members[i].Path, err)
		}
	}
	if o.BeforeCommit != nil {
		paths := make([]string, len(members))
		for i, m := range members {
			paths[i] = m.Path
		}
		if err := o.BeforeCommit(paths); err != nil {
			return nil, fmt.Errorf("reshape array %s: %w (not committed: the array keeps its members)", name, err)
		}
	}
	hit(FailpointReshapeCommit)
	for i := range old {
		if err := r.writeSuperblock(i); err != nil {
			return r, fmt.Errorf("reshape array %s: commit on member %s: %w (run uraid grow %s --add again with the same devices to resume)", name, members[i].Path, err, name)
		}
	}
	r.log.Info("reshape started", "from_members", old, "to_members", newN, "old_size", plan.From().Size(), "new_size", plan.To().Size())
	return r, nil
}

// resumeReshape takes up the reshape the newest of sbs carries, on the members its slot table
// names, which must all be among opened.
func resumeReshape(name string, opened []*raid.Member, sbs []raid.MemberSB, o ReshapeOptions) (ReshapeReport, error) {
	r, err := openReshape(name, opened, sbs, o.logger(), false)
	if err != nil {
		return ReshapeReport{}, err
	}
	return r.run()
}

// openReshape prepares the reshape the newest of sbs carries, on the members its slot table
// names, which must all be among opened: its plan, its members by slot and the old array's
// region map, checked against the persisted state. It writes nothing.
//
// degraded lets slots of a raid10 be missing (the array serves without them, the reshape paused,
// if every byte still has a copy in both layouts: newArray checks); without it every member, old
// and new, must be there.
func openReshape(name string, opened []*raid.Member, sbs []raid.MemberSB, logger *slog.Logger, degraded bool) (*reshaper, error) {
	newest := newestReshape(sbs)
	ref := *newest
	if ref.Name != name {
		return nil, fmt.Errorf("reshape: the members belong to array %q, not %q", ref.Name, name)
	}
	log := logger.With("array", name)
	members := make([]*raid.Member, ref.Members)
	uuids := make([]raid.UUID, ref.Members)
	events := make([]uint64, ref.Members)
	for i, ms := range sbs {
		// The members are those the newest slot table names (an update reaches them one after
		// another, so some may be behind it). A device it does not name (one that left the
		// array before, found by a scan) takes no part, as assemble leaves a stale one out.
		j := -1
		if ms.SB != nil && ms.SB.ArrayUUID == ref.ArrayUUID && ms.SB.Role != raid.RoleSpare {
			j = slices.Index(ref.Slots, ms.SB.MemberUUID.Tag())
		}
		if j < 0 {
			log.Warn("reshape: device left out: it is not among the members of the reshape under way", "device", ms.Path)
			continue
		}
		if members[j] != nil {
			// Two devices of one member UUID (a copy of a member): the newer is the member.
			if ms.SB.Events == events[j] {
				return nil, fmt.Errorf("reshape array %s: %w: %s and %s both claim slot %d with events %d: leave the copy out",
					name, ErrReshape, members[j].Path, ms.Path, j, events[j])
			}
			if ms.SB.Events < events[j] {
				log.Warn("reshape: device left out: another device with newer events claims its slot", "device", ms.Path, "slot", j)
				continue
			}
			log.Warn("reshape: device left out: another device with newer events claims its slot", "device", members[j].Path, "slot", j)
		}
		members[j], uuids[j], events[j] = opened[i], ms.SB.MemberUUID, ms.SB.Events
	}
	need := int64(ref.DataOffset + ref.DataSize)
	for j, m := range members {
		if m == nil && degraded && ref.Level.Redundant() {
			log.Warn("reshape: slot missing: the array serves degraded and the reshape waits for every member", "slot", j)
			continue
		}
		if m == nil {
			return nil, fmt.Errorf("reshape array %s: %w: slot %d of the reshape from %d to %d members has no device: a reshape resumes with every member, old and new (name them all)",
				name, ErrReshape, j, ref.Reshape.OldMembers, ref.Members)
		}
		if m.Size < need {
			return nil, fmt.Errorf("reshape array %s: %w: member %s (slot %d): %w: it holds %d bytes, the array's data ends at %d: it shrank or is not the device that was in the array (nothing written)",
				name, ErrReshape, m.Path, j, raid.ErrTooSmall, m.Size, need)
		}
	}
	old := int(ref.Reshape.OldMembers)
	oldSB := ref
	oldSB.Members = uint32(old)
	to := raid.MapGeometry(&ref)
	for i := old; i < len(members); i++ {
		if members[i] != nil {
			to.MemberBytes[i] = (members[i].Size - int64(ref.DataOffset)) / mapping.SectorBytes * mapping.SectorBytes
		}
	}
	plan, err := reshape.New(raid.MapGeometry(&oldSB), to, reshape.Config{MaxWindowBytes: int64(ref.Reshape.WindowKiB) << 10})
	if err != nil {
		return nil, fmt.Errorf("reshape array %s: resume: %w", name, err)
	}
	if err := plan.Check(ref.Reshape.State); err != nil {
		return nil, fmt.Errorf("reshape array %s: resume: %w", name, err)
	}
	r := &reshaper{log: log, sb: ref, members: members, uuids: uuids, plan: plan}
	r.report.Resumed = true
	if err := r.loadRegions(old, ref.Reshape.State.Done); err != nil {
		return nil, fmt.Errorf("reshape array %s: resume: %w", name, err)
	}
	r.log.Info("reshape resumed", "from_members", old, "to_members", len(members),
		"cursor", ref.Reshape.State.Cursor, "end", plan.End(), "backup", ref.Reshape.State.Backup.Length(), "done", ref.Reshape.State.Done)
	return r, nil
}

// loadRegions reads the old array's region map from the old members (the reshape leaves their
// map areas alone until it is done) and answers liveness from it: a trimmed region is dead. done:
// the map is needed only to be resized, and the old members may carry part of the new one.
func (r *reshaper) loadRegions(old int, done bool) error {
	if !r.sb.Level.Redundant() {
		return nil
	}
	size := r.plan.From().Size()
	dataOff := int64(r.sb.DataOffset)
	m, rep, err := loadMapAreas(r.sb.ArrayUUID, size, dataOff, r.members[:old])
	if done && (err != nil || len(rep.Problems) > 0) {
		// A cut while the map of the new size was written: it is on some members, whole or
		// in part. Load merges what is there, dirty where torn (resynced, never trusted).
		var rep2 region.Report
		var err2 error
		m, rep2, err2 = loadMapAreas(r.sb.ArrayUUID, r.plan.To().Size(), dataOff, r.members)
		if err2 == nil {
			for _, p := range rep2.Problems {
				r.log.Warn("reshape: region map of the new size damaged: its regions count as dirty", "err", p)
			}
			r.regions = m
			return nil
		}
		return fmt.Errorf("region map: %w (and at the new size: %w)", err, err2)
	}
	if errors.Is(err, region.ErrNotMap) && r.sb.State == raid.StateClean {
		// Members that never carried a map (an array created and not yet run): as Assemble
		// would, every region in sync, so every byte live.
		var rs int64
		if rs, err = region.ChooseRegionSize(size, dataOff-mapAreaOffset); err == nil {
			m, err = region.New(region.Geometry{ArrayUUID: r.sb.ArrayUUID, ArraySize: size, RegionSize: rs}, region.InSync)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: region map: %w (assemble the array and stop it once, so that it writes one)", ErrReshape, err)
	}
	for _, p := range rep.Problems {
		r.log.Warn("reshape: region map damaged: its regions count as dirty, so live", "err", p)
	}
	r.regions = m
	r.live = func(off, end int64) (bool, int64) {
		live := m.State(m.RegionOf(off)) != region.Trimmed
		s, n := m.Span(m.RegionOf(off))
		next := s + n
		for next < end && (m.State(m.RegionOf(next)) != region.Trimmed) == live {
			s, n = m.Span(m.RegionOf(next))
			next = s + n
		}
		return live, min(next, end)
	}
	return nil
}

// loadMapAreas loads the region map of an array of size bytes from the map areas of members,
// whose data starts at dataOff.
func loadMapAreas(uuid raid.UUID, size, dataOff int64, members []*raid.Member) (*region.Map, region.Report, error) {
	var areas [][]byte
	for _, mem := range members {
		if mem == nil {
			continue // a slot missing from a degraded array
		}
		buf := raid.AlignedBytes(int(dataOff - mapAreaOffset))
		if _, err := mem.File.ReadAt(buf, mapAreaOffset); err != nil {
			return nil, region.Report{}, fmt.Errorf("member %s: read region map: %w", mem.Path, err)
		}
		areas = append(areas, buf)
	}
	return region.Load(uuid, size, areas)
}

// writeSuperblock writes slot i's superblock of the update r.sb is at.
func (r *reshaper) writeSuperblock(i int) error {
	sb := r.sb
	sb.Index, sb.MemberUUID, sb.Role = uint32(i), r.uuids[i], raid.RoleActive
	if sb.Reshape != nil {
		info := *sb.Reshape
		sb.Reshape = &info
	}
	return raid.WriteSuperblock(r.members[i].File, &sb)
}

// persist writes st to every member, old and new, in one superblock update.
func (r *reshaper) persist(st reshape.State) error {
	r.sb.Events++
	r.sb.UpdateTime = time.Now().UnixNano()
	r.sb.Reshape.State = st
	for i, m := range r.members {
		hit(FailpointReshapeMember)
		if err := r.writeSuperblock(i); err != nil {
			return fmt.Errorf("persist reshape state on %s: %w (run uraid grow --add again, or assemble, to resume)", m.Path, err)
		}
	}
	return nil
}

// run carries out steps from the persisted state until the reshape is done.
func (r *reshaper) run() (ReshapeReport, error) {
	r.report.OldMembers, r.report.NewMembers = int(r.sb.Reshape.OldMembers), len(r.members)
	r.report.OldSize, r.report.NewSize = r.plan.From().Size(), r.plan.To().Size()
	r.report.LiveBytes = r.liveBytes()
	st := r.sb.Reshape.State
	last := time.Now()
	for !st.Done {
		if err := r.plan.Next(st, r.live, &r.step); err != nil {
			return r.report, fmt.Errorf("reshape array %s: %w", r.sb.Name, err)
		}
		if err := r.do(&r.step); err != nil {
			return r.report, fmt.Errorf("reshape array %s: %v step [%d, %d): %w", r.sb.Name, r.step.Kind, r.step.From, r.step.To, err)
		}
		st = r.step.After
		r.report.Steps++
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			r.log.Info("reshape", "cursor", st.Cursor, "end", r.plan.End())
		}
	}
	if err := r.finish(); err != nil {
		return r.report, fmt.Errorf("reshape array %s: finish: %w", r.sb.Name, err)
	}
	r.log.Info("reshaped", "members", len(r.members), "size", r.plan.To().Size(), "live_bytes", r.report.LiveBytes,
		"read_bytes", r.report.ReadBytes, "write_bytes", r.report.WriteBytes, "discard_bytes", r.report.DiscardBytes)
	return r.report, nil
}

// liveBytes counts the old array's bytes the liveness calls live.
func (r *reshaper) liveBytes() int64 {
	size := r.plan.From().Size()
	if r.live == nil {
		return size
	}
	var n int64
	for off := int64(0); off < size; {
		live, next := r.live(off, size)
		if live {
			n += next - off
		}
		off = next
	}
	return n
}

// do carries out one step as reshape.Step says.
func (r *reshaper) do(s *reshape.Step) error {
	r.report.ReadBytes += s.ReadBytes
	r.report.WriteBytes += s.WriteBytes
	r.report.DiscardBytes += s.DiscardBytes
	if n := int(s.To - s.From); len(r.buf) < n {
		r.buf = raid.AlignedBytes(n)
	}
	buf := r.buf[:s.To-s.From]
	for _, p := range s.Reads {
		e := p.Copies[0]
		if _, err := r.members[e.Member].File.ReadAt(buf[p.Logical-s.From:][:p.Length], int64(r.sb.DataOffset)+e.Offset); err != nil {
			return fmt.Errorf("member %s: read: %w", r.members[e.Member].Path, err)
		}
	}
	held := min(s.To, r.plan.From().Size()) - s.From // the bytes a backup holds
	switch s.Kind {
	case reshape.BackupCopy:
		hit(FailpointReshapeBackup)
		if err := r.writeExtents(s.BackupWrites, s.From, buf); err != nil {
			return err
		}
		if err := r.flush(); err != nil {
			return err
		}
		mid := s.Mid
		mid.Backup.Sum = backupSum(buf, held)
		hit(FailpointReshapeMid)
		if err := r.persist(mid); err != nil {
			return err
		}
	case reshape.Restore:
		if err := checkRestore(s, buf, held, r.sb.Reshape.State.Backup.Sum); err != nil {
			return err
		}
	}
	if plant.Is("reshapeorder") {
		// Planted: the state after the step persisted before its writes reach the members. A cut
		// before they do resumes past a window whose new home holds nothing.
		hit(FailpointReshapePersist)
		if err := r.persist(s.After); err != nil {
			return err
		}
	}
	hit(FailpointReshapeWrite)
	if err := r.writeExtents(s.Writes, s.From, buf); err != nil {
		return err
	}
	for _, e := range s.Discards {
		hit(FailpointReshapeIO)
		if err := discardMember(r.log, r.members[e.Member], int64(r.sb.DataOffset), e); err != nil {
			return err
		}
	}
	if err := r.flush(); err != nil {
		return err
	}
	if plant.Is("reshapeorder") {
		return nil
	}
	hit(FailpointReshapePersist)
	return r.persist(s.After)
}

// zeroGained writes zeros on every copy of the bytes the old map's last region gains, if it was
// partial: that region keeps its state over them (region.Map.Resized), which may say its copies
// agree, where the steps discarded them. Written once the reshape is done, by the new layout.
func (r *reshaper) zeroGained() error {
	old, size := r.plan.From().Size(), r.plan.To().Size()
	rs := r.regions.RegionSize()
	end := min(size, (old+rs-1)/rs*rs)
	if end <= old {
		return nil
	}
	ext, err := r.plan.To().Write(old, end-old, nil)
	if err != nil {
		return err
	}
	zeros := raid.AlignedBytes(int(end - old))
	for _, e := range ext {
		m := r.members[e.Member]
		if _, err := m.File.WriteAt(zeros[:e.Length], int64(r.sb.DataOffset)+e.Offset); err != nil {
			return fmt.Errorf("member %s: write zeros: %w", m.Path, err)
		}
	}
	return nil
}

// discardMember discards e on member m, whose data starts at dataOff. A member that cannot
// discard keeps what it held there: the region map, not the bytes, says what is the user's.
func discardMember(log *slog.Logger, m *raid.Member, dataOff int64, e mapping.Extent) error {
	off := dataOff + e.Offset
	var err error
	if m.Block {
		err = blkdiscard.Ioctl(int(m.File.Fd()), off, e.Length)
	} else if err = unix.Fallocate(int(m.File.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, e.Length); err != nil {
		err = os.NewSyscallError("fallocate", err)
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) {
		log.Debug("reshape: member cannot discard; the bytes stay as they were", "member", m.Path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("member %s: discard [%d, +%d): %w", m.Path, off, e.Length, err)
	}
	return nil
}

// writeExtents writes the extents from buf, which holds the array bytes from from.
func (r *reshaper) writeExtents(ext []mapping.Extent, from int64, buf []byte) error {
	for _, e := range ext {
		hit(FailpointReshapeIO)
		m := r.members[e.Member]
		if _, err := m.File.WriteAt(buf[e.Logical-from:][:e.Length], int64(r.sb.DataOffset)+e.Offset); err != nil {
			return fmt.Errorf("member %s: write: %w", m.Path, err)
		}
	}
	return nil
}

// flush makes every write so far durable on every member.
func (r *reshaper) flush() error {
	for _, m := range r.members {
		if err := m.File.Sync(); err != nil {
			return fmt.Errorf("member %s: flush: %w", m.Path, err)
		}
	}
	return nil
}

// finish writes the region map of the new size (its new regions trimmed) to every member, then
// the superblocks of the new geometry, the reshape cleared.
func (r *reshaper) finish() error {
	if r.regions != nil {
		if err := r.zeroGained(); err != nil {
			return err
		}
		m := r.regions
		if m.Geometry().ArraySize != r.plan.To().Size() {
			var err error
			if m, err = m.Resized(r.plan.To().Size()); err != nil {
				return fmt.Errorf("region map: %w", err)
			}
		}
		gen, blocks, err := m.Flush(region.FlushAll, nil)
		if err != nil {
			return fmt.Errorf("region map: %w", err)
		}
		hit(FailpointReshapeMap)
		for _, mem := range r.members {
			for _, b := range blocks {
				if _, err := mem.File.WriteAt(b.Data, mapAreaOffset+b.Offset); err != nil {
					return fmt.Errorf("member %s: write region map: %w", mem.Path, err)
				}
			}
		}
		if err := r.flush(); err != nil {
			return err
		}
		_ = m.Flushed(gen)
	}
	hit(FailpointReshapeFinish)
	r.sb.Events++
	r.sb.UpdateTime = time.Now().UnixNano()
	r.sb.Reshape = nil
	for i, m := range r.members {
		hit(FailpointReshapeMember)
		if err := r.writeSuperblock(i); err != nil {
			return fmt.Errorf("member %s: %w", m.Path, err)
		}
	}
	return nil
}

// resumeBeforeAssembly finishes the reshape the newest of sbs carries, if it is persisted done
// (what is left is the region map of the new size and the last superblocks), offline, and
// returns the superblocks read again; sbs as they are when there is none. One not done resumes
// while the array serves (assembleReshaping).
func resumeBeforeAssembly(name string, opened []*raid.Member, sbs []raid.MemberSB, o Options) ([]raid.MemberSB, error) {
	if newest := newestReshape(sbs); newest == nil || !newest.Reshape.State.Done {
		return sbs, nil
	}
	o.logger().Info("assemble: the members carry a reshape persisted done: finishing it before the array serves", "array", name)
	if _, err := resumeReshape(name, opened, sbs, ReshapeOptions{Log: o.logger()}); err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	out := make([]raid.MemberSB, len(sbs))
	for i, m := range opened {
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.Path, err)
		}
		out[i] = raid.MemberSB{Path: sbs[i].Path, SB: sb}
	}
	return out, nil
}
