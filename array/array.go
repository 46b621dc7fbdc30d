package array

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"uraid/discard"
	"uraid/internal/clock"
	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
)

// MemberState is what the array knows of one member slot.
type MemberState int32

// Member states. A failed member gets no more I/O; the array carries on from the other copies
// when the level has them.
const (
	MemberActive MemberState = iota
	MemberFailed
	MemberMissing
	// MemberRebuilding is a member whose data is being rebuilt: it takes writes and discards,
	// and serves no reads until the rebuild ends.
	MemberRebuilding
)

func (s MemberState) String() string {
	switch s {
	case MemberActive:
		return "active"
	case MemberFailed:
		return "failed"
	case MemberMissing:
		return "missing"
	case MemberRebuilding:
		return "rebuilding"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// Array is an assembled array: its members, its layout and what it knows of their health. It is
// the ublk target of the array's device (see target.go).
type Array struct {
	Name string
	sb   raid.Superblock // the newest superblock; sbMu guards its Events and State
	sbMu sync.Mutex

	// mp is the array's layout. A grow replaces it with one that places every byte of the old
	// one where it was (raid.PlanGrow), so a request mapped by either goes to the same place.
	mp atomic.Pointer[mapping.Map]
	// members holds the device of each slot (nil when missing). A slot's pointer changes only
	// while the slot is out of service (failed or missing), under membersMu, before its state
	// says it serves again: the I/O path reads it only for members in service. spares are the
	// hot spares, under membersMu.
	members   []*raid.Member
	spares    []*raid.Member
	membersMu sync.Mutex
	// onFail, when set, hears of a member that failed (from its own goroutine).
	onFail func(slot int)
	// changed hears of membership changes (OnMembershipChange), under membersMu.
	changed func()
	// shadows[i] is slot i's replacement during a replace: every write to slot i reaches it too.
	// shadowMembers mirrors it under membersMu for status; retired holds descriptors let go
	// of while requests prepared with them may be in flight, closed with the array.
	shadows []atomic.Pointer[raid.Member]
	// refilled counts, per slot, the devices installed in it on its descriptor number: a read
	// prepared with the number before an install and submitted after it reads the new device,
	// which a rebuild has not filled yet. The read notes the count and is reread when it moved.
	refilled []atomic.Uint32
	// holes keep, after a remove, the slot's descriptor number on an O_PATH descriptor on which
	// every I/O fails: a request prepared with the number before the remove reaches nothing,
	// where a closed number could be another device's by the time it is submitted. The next
	// device installed in the slot takes the number back. Under membersMu.
	holes         []*os.File
	shadowMembers []*raid.Member
	retired       []*raid.Member
	// adminMu serializes membership changes (fail, remove, add, replace, spares).
	adminMu sync.Mutex
	closing atomic.Bool
	// superseded is set once SetCopies rewrote the superblocks for another slot count: this
	// Array writes none from then on.
	superseded atomic.Bool
	// bg counts the goroutines a failure starts (a spare taking the failed member's place), which
	// Close waits for; bgClosed, under bgMu, keeps new ones from starting once Close has begun.
	bg       sync.WaitGroup
	bgMu     sync.Mutex
	bgClosed bool
	state    []atomic.Int32
	stats    []memberStats
	gran     []mapping.Granularity
	dataOff  []int64

	opts Options
	// log is the array's logger (Options.Log), its records tagged with array=Name.
	log  *slog.Logger
	tags [][]tagState // [queue][tag], each queue's owned by its goroutine
	// readTurn spreads reads over the copies, one counter per queue, owned by its goroutine.
	readTurn []uint32
	discard  discardStats
	lat      requestLatency
	engine   *discard.Engine
	// regions is the region map of an array with copies to keep in step (raid1, raid10), and
	// syncer its resync, check and repair; nil for the others.
	regions *regions
	syncer  *syncer
	// unclean is set when the array's last run ended without a clean stop (its superblocks were
	// dirty when it was assembled, or the daemon serving it died): copies of a mirror may
	// disagree where writes were in flight, until the resync of those regions is done.
	unclean atomic.Bool
	// rs is the reshape the array serves through (reshape_online.go), nil when none runs.
	rs atomic.Pointer[onlineReshape]
	// rsJob is the reshape the array was assembled with, done or not, for its job and status.
	rsJob *onlineReshape
	// events is the array's outgoing event stream (events.go).
	events *eventQueue
	// failSeq counts members taken out of service; recordedSeq is the count the superblocks on
	// disk cover. A write that left out a copy is acknowledged only once the failure that made it
	// leave it out is recorded: else a crash brings the stale copy back as current, and a resync
	// may copy from it. recordMu serializes the writes that record them.
	failSeq, recordedSeq atomic.Uint64
	recordMu             sync.Mutex
}

// Options shape how an array is served.
type Options struct {
	// Queues and Depth must match the ublk device's.
	Queues, Depth int
	Discard       DiscardOptions
	// Degraded allows an array with missing or stale members to run on the remaining copies.
	Degraded bool
	// Clock paces the TRIM engine (nil: the wall clock); tests inject a manual one.
	Clock clock.Clock
	// MapIdle is how long a region stays dirty after its last write (0: region.DefaultIdle,
	// md's bitmap delay); the map's lazy work (cleans, trims, the sync checkpoint) reaches the
	// disk every half of it. The robustness harness shortens it, so that its short epochs see
	// checkpoints and trimmed regions reach the disk in the middle of a rebuild.
	MapIdle time.Duration
	// ReshapeMaxRate caps a reshape's job at this many array bytes moved per second (0: as fast
	// as the members allow). Clock paces it too.
	ReshapeMaxRate int64
	// Log is where the array logs what happens to it (nil: slog.Default()); a daemon passes its
	// own.
	Log *slog.Logger
	// newIssuer, when set, makes the members' TRIM issuers instead of io_uring: a test hook.
	newIssuer func(m *raid.Member, dataOff int64, inflight int) (discard.Issuer, error)
}

// logger is o.Log, or the default logger.
func (o Options) logger() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.Default()
}

// Assemble opens the members at paths, checks that they form the array called name and returns it
// ready to serve. Members that are absent or stale are refused unless o.Degraded, and even then
// only when every byte still has a copy. Each member is known by its raid.StablePath from here on.
func Assemble(name string, paths []string, o Options) (*Array, error) {
	if err := raid.CheckNamedOnce(paths); err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	paths = raid.StablePaths(paths)
	var opened []*raid.Member
	fail := func(err error) (*Array, error) {
		for _, m := range opened {
			m.Close()
		}
		return nil, err
	}
	var sbs []raid.MemberSB
	for _, p := range paths {
		m, err := raid.OpenMember(p)
		if err != nil {
			return fail(err)
		}
		opened = append(opened, m)
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil {
			return fail(fmt.Errorf("member %s: %w", p, err))
		}
		sbs = append(sbs, raid.MemberSB{Path: p, SB: sb})
	}
	// A reshape persisted done ends before the array serves; one under way resumes while it
	// serves.
	sbs, err := resumeBeforeAssembly(name, opened, sbs, o)
	if err != nil {
		return fail(err)
	}
	if newestReshape(sbs) != nil {
		a, err := assembleReshaping(name, opened, sbs, o)
		if err != nil {
			return fail(err)
		}
		return a, nil
	}
	asm, err := raid.CheckAssembly(sbs)
	if asm == nil || (err != nil && !o.Degraded) {
		if err != nil && asm != nil {
			err = fmt.Errorf("%w%s", err, raid.DegradedHint(asm, "name every member"))
		}
		return fail(err)
	}
	if asm.Newest.Name != name {
		return fail(fmt.Errorf("the members belong to array %q, not %q: assemble them as %s", asm.Newest.Name, name, asm.Newest.Name))
	}
	byPath := map[string]*raid.Member{}
	for _, m := range opened {
		byPath[m.Path] = m
	}
	if err := checkSizes(&asm.Newest, asm, byPath); err != nil && !plant.Is("E") {
		return fail(err)
	}
	members := make([]*raid.Member, len(asm.Members))
	for i, ms := range asm.Members {
		if ms.SB != nil {
			members[i] = byPath[ms.Path]
			delete(byPath, ms.Path)
		}
	}
	var spares []*raid.Member
	for _, ms := range asm.Spares {
		spares = append(spares, byPath[ms.Path])
		delete(byPath, ms.Path)
	}
	replacing := map[uint32]*raid.Member{}
	for _, ms := range asm.Replacing {
		replacing[ms.SB.Index] = byPath[ms.Path]
		delete(byPath, ms.Path)
	}
	for _, ms := range asm.Superseded {
		o.logger().Warn("assemble: device left out: another device claims its slot with newer events (the old device of a finished replace, or a replacement let go); wipe or reuse it",
			"array", asm.Newest.Name, "device", ms.Path, "index", ms.SB.Index, "events", ms.SB.Events)
	}
	for _, ms := range asm.NotMembers {
		o.logger().Warn("assemble: device left out: it was prepared for an append that no member counts (cut short, or the array ran on without it); append it again (uraid grow --add) or wipe it",
			"array", asm.Newest.Name, "device", ms.Path, "index", ms.SB.Index, "events", ms.SB.Events)
	}
	for _, m := range byPath { // stale, superseded and not members take no part
		m.Close()
	}
	a, err := newArray(asm.Newest, members, o, layout{rebuilding: asm.Rebuilding, spares: spares, replacing: replacing})
	if err != nil {
		for _, m := range replacing {
			spares = append(spares, m)
		}
		for _, m := range append(members, spares...) {
			if m != nil {
				m.Close()
			}
		}
		return nil, err
	}
	return a, nil
}

// checkSizes refuses an assembly in which a device that would serve holds less than the array's
// data area: it would fail only at its first I/O beyond its end, or serve another device's
// bytes. Nothing has been written yet.
func checkSizes(ref *raid.Superblock, asm *raid.Assembly, byPath map[string]*raid.Member) error {
	need := int64(ref.DataOffset + ref.DataSize)
	var errs []error
	check := func(ms raid.MemberSB) {
		if m := byPath[ms.Path]; ms.SB != nil && m != nil && m.Size < need {
			errs = append(errs, fmt.Errorf("member %s (index %d): %w: it holds %d bytes, but the array's data ends at %d "+
				"(data offset %d + data size %d): it shrank or is not the device that was in the array; "+
				"leave it out (assemble --degraded) and add a device of at least %d bytes",
				ms.Path, ms.SB.Index, raid.ErrTooSmall, m.Size, need, ref.DataOffset, ref.DataSize, need))
		}
	}
	for _, ms := range asm.Members {
		check(ms)
	}
	for _, ms := range asm.Spares {
		check(ms)
	}
	for _, ms := range asm.Replacing {
		check(ms)
	}
	if len(errs) > 0 {
		return fmt.Errorf("assemble array %q: %w", ref.Name, errors.Join(errs...))
	}
	return nil
}

// NewArray serves members just written by raid.Create (spares among them); a slot create left
// missing has a nil member and superblock, and needs o.Degraded.
func NewArray(members []*raid.Member, sbs []*raid.Superblock, o Options) (*Array, error) {
	var slots, spares []*raid.Member
	var ref *raid.Superblock
	for i, m := range members {
		switch {
		case sbs[i] == nil:
			slots = append(slots, nil)
			continue
		case sbs[i].Role == raid.RoleSpare:
			spares = append(spares, m)
		default:
			slots = append(slots, m)
		}
		if ref == nil {
			ref = sbs[i]
		}
	}
	if ref == nil {
		return nil, errors.New("array: no member to serve")
	}
	if slices.Contains(slots, nil) && !o.Degraded {
		return nil, fmt.Errorf("array %s: created with a slot missing: serve it degraded", ref.Name)
	}
	return newArray(*ref, slots, o, layout{fresh: true, spares: spares})
}

// layout is what newArray must know beyond the slots: whether the members were just created (the
// region map starts anew rather than being read from them), which slots are being rebuilt, and
// the spares.
type layout struct {
	fresh      bool
	rebuilding []uint32
	spares     []*raid.Member
	replacing  map[uint32]*raid.Member // slot -> its replacement, of a replace under way
	// reshape is the reshape the members carry, under way: the array serves its old size,
	// routed by it, and its region map is the one reshape loaded from the old members.
	reshape *reshaper
}

// newArray serves members.
func newArray(sb raid.Superblock, members []*raid.Member, o Options, l layout) (*Array, error) {
	var m *mapping.Map
	var err error
	if l.reshape != nil {
		m = l.reshape.plan.From() // the old layout, the old size, until the reshape is done
	} else if m, err = raid.MapOf(&sb); err != nil {
		return nil, fmt.Errorf("array %s: %w", sb.Name, err)
	}
	if o.Queues < 1 || o.Depth < 1 {
		return nil, fmt.Errorf("array %s: %d queues of depth %d", sb.Name, o.Queues, o.Depth)
	}
	a := &Array{
		Name: sb.Name, sb: sb, members: members, opts: o, log: o.logger().With("array", sb.Name),
		state:    make([]atomic.Int32, len(members)),
		stats:    make([]memberStats, len(members)),
		gran:     make([]mapping.Granularity, len(members)),
		dataOff:  make([]int64, len(members)),
		tags:     make([][]tagState, o.Queues),
		readTurn: make([]uint32, o.Queues),
		shadows:  make([]atomic.Pointer[raid.Member], len(members)),
		refilled: make([]atomic.Uint32, len(members)),
		holes:    make([]*os.File, len(members)),

		shadowMembers: make([]*raid.Member, len(members)),
		events:        newEventQueue(),
	}
	a.mp.Store(m)
	if l.reshape != nil {
		a.rsJob = newOnlineReshape(a, l.reshape)
		a.rs.Store(a.rsJob) // before the readability check, which asks both layouts
	}
	for i, mem := range members {
		a.dataOff[i] = int64(sb.DataOffset)
		if mem == nil {
			a.state[i].Store(int32(MemberMissing))
			continue
		}
		if slices.Contains(l.rebuilding, uint32(i)) {
			a.state[i].Store(int32(MemberRebuilding))
		}
		if mem.DiscardGranularity > 0 {
			// mapping wants the alignment in data space: shift the device's by the data offset.
			g := mem.DiscardGranularity
			a.gran[i] = mapping.Granularity{Bytes: g, Alignment: ((mem.DiscardAlignment-a.dataOff[i])%g + g) % g}
		}
	}
	if !a.readable() {
		return nil, fmt.Errorf("array %s: %w: too many members are missing for level %s to have every byte", sb.Name, ErrArrayFailed, sb.Level.ShortName())
	}
	for q := range a.tags {
		a.tags[q] = make([]tagState, o.Depth)
		for t := range a.tags[q] {
			a.tags[q][t].init()
		}
	}
	e, err := newEngine(a, o.Discard)
	if err != nil {
		return nil, fmt.Errorf("array %s: %w", sb.Name, err)
	}
	a.engine = e
	for i := range members {
		if MemberState(a.state[i].Load()) == MemberMissing {
			e.Fail(i) // no reads steered to a missing member, no TRIMs queued for it
		}
	}
	a.spares = l.spares
	// A clean stop marks the members clean; dirty ones were not stopped.
	a.unclean.Store(sb.State == raid.StateDirty)
	if sb.Level.Redundant() {
		switch {
		case l.reshape != nil:
			a.regions = newRegions(a, l.reshape.regions)
		case l.fresh:
			a.regions, err = newRegionMap(a, &sb)
		default:
			a.regions, err = loadRegions(a, &sb)
		}
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("array %s: %w", sb.Name, err)
		}
		if a.Degraded() {
			a.regions.degraded()
		}
		a.syncer = newSyncer(a, a.regions)
		a.onFail = a.activateSpare
		for slot, m := range l.replacing {
			a.shadowSet(int(slot), m)
		}
	}
	return a, nil
}

// Unclean reports whether the array's last run ended without a clean stop, so that copies of a
// mirror may disagree where writes were in flight (see SetUnclean).
func (a *Array) Unclean() bool { return a.unclean.Load() }

// SetUnclean overrides what the superblocks said: a daemon taking over a running array's device
// knows better whether its predecessor ended cleanly (a hand-over) or died (unclean), since the
// superblocks of a running array always say dirty.
func (a *Array) SetUnclean(v bool) { a.unclean.Store(v) }

// ErrArrayFailed means some data has no working copy left.
var ErrArrayFailed = errors.New("array failed")

// readable reports whether every logical byte still has an active copy.
func (a *Array) readable() bool { return a.readableIn(a.states()) }

// states reads every member's state once: a decision over several members sees one moment.
func (a *Array) states() []MemberState {
	st := make([]MemberState, len(a.state))
	for i := range a.state {
		st[i] = MemberState(a.state[i].Load())
	}
	return st
}

// readableIn reports whether every byte has a copy on a member that is active in st: by both
// layouts while a reshape runs, the bytes below its cursor being in the new one.
func (a *Array) readableIn(st []MemberState) bool {
	ok := func(i int) bool { return st[i] == MemberActive }
	maps := []*mapping.Map{a.Map()}
	if o := a.reshaping(); o != nil {
		maps = append(maps, o.plan.To())
	}
	for _, m := range maps {
		switch a.sb.Level {
		case mapping.RAID1, mapping.RAID10:
			// A piece is lost when every copy of it is down.
			if !probePieces(m, func(p *mapping.Piece) bool {
				return slices.ContainsFunc(p.Copies[:p.N], func(e mapping.Extent) bool { return ok(e.Member) })
			}) {
				return false
			}
		default:
			for i := range m.Members() {
				if !ok(i) {
					return false
				}
			}
		}
	}
	return true
}

// probePieces calls f with a piece of each placement of copies the layout makes, until f returns
// false, and reports whether it never did: one row of chunks per member pair covers every
// placement of raid10's layouts; raid1's pieces all have the same copies.
func (a *Array) probePieces(f func(p *mapping.Piece) bool) bool { return probePieces(a.Map(), f) }

func probePieces(m *mapping.Map, f func(p *mapping.Piece) bool) bool {
	var pieces [1]mapping.Piece
	unit := m.ChunkBytes()
	if unit <= 0 {
		unit = mapping.SectorBytes
	}
	rows := min(m.Size()/unit, int64(2*m.Members()))
	for c := range rows {
		ps, err := m.Read(c*unit, unit, pieces[:0])
		if err != nil || len(ps) == 0 || !f(&ps[0]) {
			return false
		}
	}
	return true
}

// Degraded reports whether some member is failed or missing.
func (a *Array) Degraded() bool {
	for i := range a.state {
		if MemberState(a.state[i].Load()) != MemberActive {
			return true
		}
	}
	return false
}

// MarkDirty records on every active member that the array is running, so an assemble after a
// crash knows the copies may disagree.
func (a *Array) MarkDirty() error {
	if a.regions != nil {
		// The map is on every member before the first write, and its flusher runs from now on.
		if err := a.regions.begin(); err != nil {
			return err
		}
	}
	if err := a.writeSuperblocks(raid.StateDirty); err != nil {
		return err
	}
	if o := a.reshaping(); o != nil {
		// A resync of the regions a crash left dirty waits for the end of the reshape (reads of
		// them meanwhile come from one copy, and the steps copy one copy to every new place).
		o.start()
		return nil
	}
	if a.syncer != nil && !a.syncer.resumeRebuild() {
		a.syncer.resyncIfNeeded() // after a crash, the regions being written then
		a.fillFromSpares(true)
	}
	return nil
}

// MarkClean records that every write reached every active member. Call it after the device has
// stopped and the members are flushed.
func (a *Array) MarkClean() error {
	if o := a.rsJob; o != nil {
		o.stop() // at a step boundary: the assembly resumes it from the state persisted
	}
	if a.regions != nil {
		// A job stops where it is (a resync resumes at the next start). Every write has ended
		// and every discard is drained: idle regions go back to in sync and completed discards
		// are marked, before the superblocks say the stop was clean.
		a.syncer.stop()
		if err := a.regions.stop(true); err != nil {
			return err
		}
	}
	return a.writeSuperblocks(raid.StateClean)
}

// writeSuperblocks bumps the event counter and writes the superblock of every active member, so
// a member that was not written (failed or missing) reads as stale at the next assemble.
func (a *Array) writeSuperblocks(st raid.State) error { return a.writeSuperblocksAs(st, false) }

// writeSuperblocksAs is writeSuperblocks; whole records that the array is whole again as of this
// update (raid.Superblock.WholeEvents), which must be on disk before the region map forgets what
// was written while a member was out.
func (a *Array) writeSuperblocksAs(st raid.State, whole bool) error {
	_, err := a.writeSuperblocksN(st, whole, false)
	return err
}

// writeSuperblocksN is writeSuperblocksAs, and how many members took the update; reshape: a
// reshape's persist, which hits FailpointReshapeMember before each member.
func (a *Array) writeSuperblocksN(st raid.State, whole, reshape bool) (int, error) {
	a.sbMu.Lock()
	defer a.sbMu.Unlock()
	if a.superseded.Load() {
		return 0, errSuperseded
	}
	wrote := 0
	seq := a.failSeq.Load() // the failures this write records, if it reaches a member
	a.sb.Events++
	if whole {
		a.sb.WholeEvents = a.sb.Events
	}
	a.sb.State = st
	a.sb.UpdateTime = time.Now().UnixNano()
	var errs []error
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	// The slot table every member gets names the devices this update keeps in service, so that
	// a member a crash leaves one update behind is told from one whose failure it records.
	sbs := make([]*raid.Superblock, len(a.members))
	slots := make([]uint64, len(a.members))
	for i, m := range a.members {
		if m == nil || !a.writable(i) {
			continue
		}
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", m.Path, err))
			continue
		}
		sbs[i], slots[i] = sb, sb.MemberUUID.Tag()
	}
	if slices.ContainsFunc(slots, func(t uint64) bool { return t != 0 }) {
		a.sb.Slots = slots
	}
	for i, m := range a.members {
		sb := sbs[i]
		if sb == nil {
			continue
		}
		sb.Events, sb.State, sb.UpdateTime, sb.Slots, sb.WholeEvents = a.sb.Events, st, a.sb.UpdateTime, a.sb.Slots, a.sb.WholeEvents
		sb.DataSize = a.sb.DataSize // changed by a grow, the same on every member
		sb.Reshape = nil            // one a cut left one update behind a reshape's last
		if a.sb.Reshape != nil {
			info := *a.sb.Reshape // the reshape under way, at its newest state
			sb.Reshape = &info
		}
		// A member a crash left one update behind a change of copies holds the old slot count,
		// and may hold its old slot number (assemble placed it by the newest slot table).
		if !plant.Is("copiesslot") {
			sb.Members, sb.Index = a.sb.Members, uint32(i)
		}
		sb.Role = raid.RoleActive
		if MemberState(a.state[i].Load()) == MemberRebuilding {
			sb.Role = raid.RoleRebuilding
		}
		if reshape {
			hit(FailpointReshapeMember)
		}
		if err := raid.WriteSuperblock(m.File, sb); err != nil {
			a.fail(i, err)
			errs = append(errs, fmt.Errorf("member %s: %w", m.Path, err))
			continue
		}
		wrote++
	}
	if wrote > 0 {
		for old := a.recordedSeq.Load(); old < seq && !a.recordedSeq.CompareAndSwap(old, seq); old = a.recordedSeq.Load() {
		}
	}
	errs = append(errs, a.writeSpareSuperblocks()...)
	return wrote, errors.Join(errs...)
}

// writeSpareSuperblocks gives the spares the update a.sb is at: they carry the events too, so that
// a spare of this array is told apart from one of an older incarnation; their failure only drops
// them. sbMu and membersMu held.
func (a *Array) writeSpareSuperblocks() []error {
	var errs []error
	for _, sp := range a.spares {
		sb, err := raid.ReadSuperblock(sp.File)
		if err == nil {
			sb.Events, sb.State, sb.UpdateTime, sb.Role, sb.Index, sb.Slots = a.sb.Events, a.sb.State, a.sb.UpdateTime, raid.RoleSpare, 0, a.sb.Slots
			sb.WholeEvents, sb.DataSize, sb.Members = a.sb.WholeEvents, a.sb.DataSize, a.sb.Members
			err = raid.WriteSuperblock(sp.File, sb)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("spare %s: %w", sp.Path, err))
		}
	}
	return errs
}

// failuresRecorded reports whether every member taken out of service is on record as such in
// the superblocks.
func (a *Array) failuresRecorded() bool { return a.recordedSeq.Load() >= a.failSeq.Load() }

// recordFailures writes the superblocks until every failure so far is on record; it fails when
// no member takes them. Off the queue goroutine: it blocks.
func (a *Array) recordFailures() error {
	a.recordMu.Lock()
	defer a.recordMu.Unlock()
	for !a.failuresRecorded() {
		before := a.recordedSeq.Load()
		err := a.writeSuperblocks(raid.StateDirty)
		if a.recordedSeq.Load() == before {
			if err == nil {
				err = errors.New("no member in service")
			}
			return fmt.Errorf("record a member's failure: no member took the superblocks: %w", err)
		}
	}
	return nil
}

// writable reports whether member i takes writes: active, or being rebuilt.
func (a *Array) writable(i int) bool {
	s := MemberState(a.state[i].Load())
	return s == MemberActive || s == MemberRebuilding
}

// fail takes member i out of service after an I/O error: no more reads or writes go to it, and
// the engine drops its queued TRIMs.
func (a *Array) fail(i int, err error) {
	if a.writable(i) {
		// Counted before the state changes: a write that sees the member out of service sees
		// the failure as not yet recorded.
		a.failSeq.Add(1)
	}
	if a.state[i].CompareAndSwap(int32(MemberActive), int32(MemberFailed)) ||
		a.state[i].CompareAndSwap(int32(MemberRebuilding), int32(MemberFailed)) {
		a.log.Warn("member failed", "member", i, "path", a.members[i].Path, "err", err)
		a.emit(Event{Type: EventMemberFailed, Member: slotPtr(i), Path: a.members[i].Path, Error: err.Error(),
			Message: fmt.Sprintf("member %d (%s) failed: %v", i, a.members[i].Path, err)})
		if !a.readable() {
			a.emit(Event{Type: EventArrayFailed, Message: "some data has no working copy left: reads of it fail"})
		} else {
			a.emit(Event{Type: EventDegraded, Message: fmt.Sprintf("running without member %d", i)})
		}
		a.engine.Fail(i)
		if a.regions != nil {
			a.regions.degraded() // what is written from now on must reach the member when it is back
		}
		if a.onFail != nil {
			a.background(func() { a.onFail(i) }) // a hot spare may take its place; never on the queue goroutine
		}
		hit(FailpointFailed)
	}
}

// Flush makes every write so far durable on every member that takes writes.
func (a *Array) Flush() error {
	var errs []error
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	for i, m := range a.members {
		if m == nil || !a.writable(i) {
			continue
		}
		if err := m.File.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", m.Path, err))
		}
	}
	return errors.Join(errs...)
}

// background runs f on a goroutine of its own that Close waits for; none starts once Close has
// begun, so nothing the array started runs on after it is closed.
func (a *Array) background(f func()) {
	a.bgMu.Lock()
	defer a.bgMu.Unlock()
	if a.bgClosed {
		return
	}
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		f()
	}()
}

// Close stops the discard engine and releases the members. The device must be stopped first.
func (a *Array) Close() error {
	a.closing.Store(true)
	a.bgMu.Lock()
	a.bgClosed = true
	a.bgMu.Unlock()
	a.bg.Wait()      // outside adminMu, which a spare's activation takes
	a.adminMu.Lock() // a membership change in progress finishes first
	a.adminMu.Unlock()
	var errs []error
	if o := a.rsJob; o != nil {
		o.stop()
	}
	if a.regions != nil {
		a.syncer.stop()
		errs = append(errs, a.regions.stop(false))
	}
	if a.engine != nil {
		errs = append(errs, a.engine.Close()) // and the members' TRIM issuers
	}
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	for _, list := range [][]*raid.Member{a.members, a.spares, a.shadowMembers, a.retired} {
		for _, m := range list {
			if m != nil {
				errs = append(errs, m.Close())
			}
		}
	}
	for _, h := range a.holes {
		if h != nil {
			errs = append(errs, h.Close())
		}
	}
	return errors.Join(errs...)
}

// Map is the array's layout.
func (a *Array) Map() *mapping.Map { return a.mp.Load() }

// Superblock returns a copy of the array's newest superblock.
func (a *Array) Superblock() raid.Superblock {
	a.sbMu.Lock()
	defer a.sbMu.Unlock()
	return a.sb
}

// Members returns the member slots; nil entries are missing.
func (a *Array) Members() []*raid.Member { return a.members }

// DrainDiscards waits until every discard queued so far has reached the members.
func (a *Array) DrainDiscards() { a.engine.Drain() }
