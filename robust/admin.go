package robust

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"uraid/array"
	"uraid/mapping"
	"uraid/region"
	"uraid/robust/simdisk"
)

// An epoch's mood: what the operator and the faults do while the workload runs.
type mood int

const (
	// A storm: failures, adds, replaces, checks, armed power losses and cuts at random moments.
	moodStorm mood = iota
	// Calm: the operator only fills empty slots and checks; nothing fails and nothing is cut
	// before the workload's share is done, so that rebuilds run to their end and sweeps trim
	// regions of a whole array, which later epochs' failures then meet.
	moodCalm
	// Heal: once the epoch's fstrim is done, one member of the array leaves (failed, failed by
	// an error, replaced, or swapped back) and its rebuild runs beside the workload to its end;
	// now and then a power loss is armed at a step of the rebuild. Right after an unclean
	// restart the member leaves at once, before the resync has copied the regions the crash left
	// dirty. Storms seldom let a rebuild run to its end with requests beside it: most are cut
	// first, or resumed after a restart with the workload idle.
	moodHeal
	// Checkpoint: a read-only epoch aimed at one window. Once no region is dirty or waits for a
	// resync, a member leaves and a blank device takes its slot, and the power is cut right after
	// a lazy map write has carried the rebuild's checkpoint: with nothing dirty, no flush of the
	// members comes before that write, and a checkpoint ahead of what its rebuild made durable
	// loses the copy. Healing epochs almost never meet that state, as they begin after power
	// losses with every region waiting for its resync; an epoch of this mood that does not meet it
	// ends with a clean stop, so that the next one does. Off unless -robust.moods weighs it.
	moodCheckpoint
)

var moodNames = [...]string{"a storm", "a calm epoch", "a healing epoch", "a checkpoint epoch"}

// admin changes the array while the workload runs, as an operator, a failing disk and a power
// cut would, until stop closes.
func (w *world) admin(rng *rand.Rand, stop <-chan struct{}, m mood) {
	if m != moodStorm {
		w.logf("%s", moodNames[m])
	}
	if !w.cfg.Level.Redundant() {
		w.adminLinear(rng, stop)
		return
	}
	if st, ok := w.a.ReshapeStatus(); ok && st.State == array.ReshapeRunning {
		// No membership change while the layout moves: a failure pauses the reshape until the
		// array is whole again, which a rebuild, refused during a reshape, cannot make it; the
		// run would go on degraded. The refusals are checked instead.
		if err := w.a.StartSync(array.SyncCheck, array.SyncOptions{}); !errors.Is(err, array.ErrReshaping) {
			if st, _ := w.a.ReshapeStatus(); st.State == array.ReshapeRunning {
				w.fail("a check started while the array reshapes: %v", err)
			}
		}
		<-stop
		return
	}
	if m == moodHeal {
		w.heal(rng, stop)
		return
	}
	if m == moodCheckpoint {
		w.checkpoint(rng, stop)
		return
	}
	first, first0 := true, -1
	calm := m == moodCalm
	for {
		select {
		case <-stop:
			return
		default:
		}
		if w.crashedNow() || w.failed() {
			return
		}
		p := 16 + rng.IntN(84)
		if rng.IntN(3) == 0 {
			p = rng.IntN(16) // idle: the workload and the sync jobs run
		}
		if calm {
			p = []int{0, 50, 70, 89}[rng.IntN(4)] // idle, fill a slot, check, grow
		} else if first {
			// Right after an assemble, before the resync is done: a member failing now is what
			// leaves other pairs' regions for the resync after the rebuild.
			p = []int{0, 25, 40}[rng.IntN(3)]
			first0, first = p, false
		}
		// Taking a member out is for a whole array, mostly: one that loses members faster than it
		// rebuilds them spends its life degraded, where nothing is trimmed and no copy is
		// compared, and the paths that heal it (a rebuild over trimmed regions, a resync beside
		// it) never run to their end. A second failure on a degraded array is tried now and then.
		out := w.whole() || rng.IntN(40) == 0
		switch {
		case p < 16:
		case p < 20:
			w.swapBack(rng)
		case p < 32:
			if out || first0 == 25 {
				w.failOne(rng)
			}
		case p < 36:
			w.refusedFails(rng)
		case p < 44:
			if out {
				w.injectWriteError(rng)
			}
		case p < 60:
			w.removeAndAdd(rng)
		case p < 68:
			if out {
				w.replace(rng)
			}
		case p < 76:
			action := []string{array.SyncCheck, array.SyncRepair}[rng.IntN(2)]
			if err := w.a.StartSync(action, array.SyncOptions{}); err == nil {
				w.stats.Checks++
				w.logf("%s started", action)
			}
		case p < 84:
			name, n := failpoints[rng.IntN(len(failpoints))], 1+rng.IntN(6)
			if name == array.FailpointFailed {
				n = 1 + rng.IntN(2) // an epoch fails few members
			}
			w.armPowerLoss(rng, name, n)
		case p < 86:
			w.cut(endPowerLoss, "at a random moment")
			return
		case p < 88:
			w.cut(endKill, "at a random moment")
			return
		case p < 91:
			w.grow(rng, calm)
		}
		first0 = -1
		w.recordMembers(w.a)
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(rng.IntN(4000)) * time.Microsecond):
		}
	}
}

// armPowerLoss cuts the power at the n-th step name: a disk's step (a rule on the disks) or one
// of the array's failpoints (the harness's hook).
func (w *world) armPowerLoss(rng *rand.Rand, name string, n int) {
	if m, ok := w.diskStep(name); ok {
		w.fs.Arm(simdisk.Rule{Match: m, N: n, Cut: true, Why: "at " + name})
	} else {
		fp := &fpCrash{name: name, delay: time.Duration(rng.IntN(3000)) * time.Microsecond, requests: int64(1 + rng.IntN(6))}
		fp.n.Store(int32(n))
		w.fpArm.Store(fp)
	}
	w.logf("power loss armed at the %d-th %s", n, name)
}

// checkpoint is a checkpoint epoch's operator (see moodCheckpoint).
func (w *world) checkpoint(rng *rand.Rand, stop <-chan struct{}) {
	pause := w.pauser(rng, stop)
	if w.mapIdle == 0 {
		return // the daemon's 5 s: the rebuild ends before a lazy write
	}
	if rc := w.a.Status("", 0).Regions; rc != nil && rc.NeedResync > 0 && rng.IntN(2) == 0 {
		// After a crash, the same window for the resync: once its last region is in sync, the
		// map's next lazy write carries that with nothing dirty, so no flush of the members
		// comes before it; a region counted in sync before its copy was durable differs again.
		w.quiet.Store(true)
		defer w.quiet.Store(false)
		for limit := time.Now().Add(10 * time.Second); ; {
			rc := w.a.Status("", 0).Regions
			if rc == nil || rc.NeedResync == 0 {
				break
			}
			if time.Now().After(limit) || !pause() {
				w.logf("no resync cut: regions %+v, sync %+v", *rc, w.a.Status("", 0).Sync)
				return
			}
		}
		w.awaitMapWrite()
		w.cutAt(endPowerLoss, "after the resync's last region reached the map", false)
		return
	}
	for {
		if rc := w.a.Status("", 0).Regions; rc != nil && rc.Dirty == 0 && rc.NeedResync == 0 && w.whole() {
			break
		}
		if !pause() {
			return
		}
	}
	cands := w.inServicePaths()
	if len(cands) == 0 {
		return
	}
	// The member leaves for good: a spare, or a disk added now (blank when one is left), takes
	// the slot by a whole rebuild, never a re-add's copy of the regions written meanwhile.
	out := cands[rng.IntN(len(cands))]
	if !w.takeOut(out, "checkpoint: ") {
		return
	}
	for range 8 {
		// Not the device that just left: it would come back by a re-add.
		if d, force := w.spareDisk(rng); d != "" && w.path(d) != out {
			w.add(d, force, "checkpoint: ")
			break
		}
	}
	fp := &fpCrash{name: array.FailpointRebuildCursor, requests: int64(rng.IntN(3)), afterMapWrite: true}
	fp.n.Store(int32(1 + rng.IntN(3)))
	w.fpArm.Store(fp)
	w.logf("power loss armed after the %d-th rebuild checkpoint reaches the disk", fp.n.Load())
	// The workload rests while the rebuild moves on at its full rate (under requests it keeps to
	// its floor, and the epoch would end first); bounded, as the rebuild may end before the cut.
	w.quiet.Store(true)
	defer w.quiet.Store(false)
	for limit := time.Now().Add(2 * time.Second); !fp.fired.Load() && time.Now().Before(limit); {
		if !pause() {
			return
		}
	}
	w.quiet.Store(false)
	for pause() {
	}
}

// whole reports whether every slot of the array is active, with no replacement or sync job
// under way.
func (w *world) whole() bool {
	st := w.a.Status("", 0)
	for _, m := range st.Members {
		if m.State != array.MemberActive.String() || m.Replacement != "" {
			return false
		}
	}
	return st.Sync == nil || st.Sync.Action != array.SyncRebuild
}

// pauser returns an operator's pause: up to 4 ms, then whether to go on (the epoch neither over,
// cut nor failed).
func (w *world) pauser(rng *rand.Rand, stop <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-stop:
			return false
		case <-time.After(time.Duration(rng.IntN(4000)) * time.Microsecond):
		}
		return !w.crashedNow() && !w.failed()
	}
}

// heal is a healing epoch's operator (see moodHeal).
func (w *world) heal(rng *rand.Rand, stop <-chan struct{}) {
	pause := w.pauser(rng, stop)
	leave := func(first bool) {
		how := rng.IntN(5)
		if (how < 2 || how == 4) && (first || rng.IntN(3) == 0) {
			// Cut between the member's failure and its record in the superblocks, writes
			// finishing meanwhile: none may be acknowledged that left out the failed copy.
			// (Not for a member failed by an error: the failure is made on the queue's
			// goroutine, where the hook holds every request.)
			w.armPowerLoss(rng, array.FailpointFailed, 1)
		}
		switch how {
		case 0, 1:
			w.failOne(rng)
		case 2:
			w.injectWriteError(rng)
		case 3:
			w.replace(rng)
		case 4:
			w.swapBack(rng)
		}
	}
	if st := w.a.Status("", 0); st.Regions != nil && st.Regions.NeedResync > 0 && rng.IntN(4) == 0 {
		// Or cut the resync itself, once it has done some regions, or once the map has been
		// written with what it did.
		if rng.IntN(2) == 0 {
			w.armPowerLoss(rng, array.FailpointResyncRegion, 2+rng.IntN(4))
		} else {
			w.armPowerLoss(rng, "map-flush", 2+rng.IntN(2))
		}
	} else if st.Regions != nil && st.Regions.NeedResync > 0 {
		// Before the resync has copied what the crash left different: the rebuild must leave
		// to it the regions it did not copy whole (another mirror pair's), and a fail must not
		// take back what reads of those regions returned. Half the time a few requests first,
		// reads among them; the other half at once, before the resync has copied much.
		for from, n := w.requests.Load(), int64(rng.IntN(2)*rng.IntN(40)); w.requests.Load() < from+n; {
			if !pause() {
				return
			}
		}
		for _, i := range rng.Perm(len(st.Members)) {
			if m := st.Members[i]; inService(m) && w.a.FailMember(m.Path) == nil {
				w.stats.Fails++
				w.logf("failed %s before the resync", w.name(m.Path))
				break
			}
		}
	} else {
		// After the sweep, and after the map's lazy work has counted its regions trimmed: a
		// rebuild that starts before meets no region trimmed. Bounded: the workload may write
		// into the free regions meanwhile.
		for from := w.requests.Load(); w.requests.Load() < from+int64(len(w.free))+8; {
			if !pause() {
				return
			}
		}
		idle := w.mapIdle
		if idle == 0 {
			idle = region.DefaultIdle
		}
		for limit := time.Now().Add(idle); time.Now().Before(limit); {
			if rc := w.a.Status("", 0).Regions; rc == nil || rc.Trimmed >= len(w.free)/2 {
				break
			}
			if !pause() {
				return
			}
		}
		leave(true)
	}
	armed := rng.IntN(2) == 0
	for pause() {
		switch p := rng.IntN(10); {
		case p < 3 && !w.whole():
			w.removeAndAdd(rng) // a slot left empty is filled: no spare may be waiting
		case p < 6 && w.whole() && !w.faultPending():
			leave(false) // the array healed: once more, over what the workload trimmed since
		case p == 7:
			w.refusedFails(rng) // while a member's copy is the last one, refused
		case p == 6 && !armed:
			armed = true
			// A checkpoint that reaches the disk before what it covers is what a cut after it
			// finds; the epoch's workload may not flush at all (see world.flushless).
			name := []string{array.FailpointRebuildRegion, array.FailpointRebuildCursor, array.FailpointRebuildCursor,
				array.FailpointResyncRegion, "disk-flush", "map-flush"}[rng.IntN(6)]
			w.armPowerLoss(rng, name, 1+rng.IntN(6))
		}
		w.recordMembers(w.a)
	}
}

// slots returns the array's member slots as status shows them.
func (w *world) slots() []array.MemberStatus { return w.a.Status("", 0).Members }

// inServicePaths returns the paths of the members in service.
func (w *world) inServicePaths() []string {
	var paths []string
	for _, m := range w.slots() {
		if inService(m) {
			paths = append(paths, m.Path)
		}
	}
	return paths
}

func inService(m array.MemberStatus) bool {
	return m.State == array.MemberActive.String() || m.State == array.MemberRebuilding.String()
}

// failOne fails a random member in service (refused for the last copy of some data).
func (w *world) failOne(rng *rand.Rand) {
	if w.faultPending() {
		return
	}
	cands := w.inServicePaths()
	if len(cands) == 0 {
		return
	}
	p := cands[rng.IntN(len(cands))]
	err := w.a.FailMember(p)
	switch {
	case err == nil:
		w.stats.Fails++
		w.logf("failed %s", w.name(p))
	case errors.Is(err, array.ErrLastCopy):
		w.stats.Refused++
	default:
		w.logf("fail %s: %v", w.name(p), firstLine(err))
	}
}

// refusedFails asks, again and again, to fail a member that holds the last copy of some data,
// while the workload reads: a refusal must cost no request anything.
func (w *world) refusedFails(rng *rand.Rand) {
	if w.faultPending() {
		return // a fail that is not refused would add to the pending error's
	}
	for _, m := range w.slots() {
		if m.State != array.MemberActive.String() {
			continue
		}
		for range 200 {
			if err := w.a.FailMember(m.Path); !errors.Is(err, array.ErrLastCopy) {
				if err == nil {
					w.stats.Fails++
					w.logf("failed %s", w.name(m.Path))
				}
				return
			}
			w.stats.Refused++
		}
	}
}

// faultPending reports whether a member error the harness injected has not struck yet, or has
// but the array has not yet taken its member out: until then no other member may be taken out,
// or the two together could take the last copy of some data, which no RAID survives.
func (w *world) faultPending() bool {
	if w.faultDisk == "" {
		return false
	}
	if w.fs.Stats().Failed < w.faultsArmed {
		return true
	}
	for _, m := range w.slots() {
		if w.name(m.Path) == w.faultDisk && inService(m) {
			return true // the error struck; the array is about to fail the member
		}
	}
	w.faultDisk = ""
	return false
}

// injectWriteError makes the next data write of a random member fail, as a dying disk would.
func (w *world) injectWriteError(rng *rand.Rand) {
	ms := w.slots()
	active := 0
	for _, m := range ms {
		if m.State == array.MemberActive.String() {
			active++
		}
	}
	if active < len(ms) || w.faultPending() {
		return // one member out at a time: the array keeps a copy of everything
	}
	if rc := w.a.Status("", 0).Regions; rc != nil && rc.NeedResync > 0 {
		// Where copies may differ after an unclean stop, reads come from the resync's source
		// until it has copied them: a dying source takes back what they returned, a limit of
		// resync without a journal (docs/sync.md), not a defect to find again and again.
		return
	}
	m := ms[rng.IntN(len(ms))]
	disk := w.name(m.Path)
	w.fs.Arm(simdisk.Rule{Match: simdisk.Match{Disk: disk, Kind: simdisk.Write, From: w.dataOff}, N: 1})
	w.stats.Injected++
	w.faultsArmed++
	w.faultDisk = disk
	w.logf("the next data write of %s fails", disk)
}

// removeAndAdd removes the failed members and spares nothing; then fills an empty slot (or
// adds a spare) with a blank disk or one the array let go of.
func (w *world) removeAndAdd(rng *rand.Rand) {
	for _, m := range w.slots() {
		if m.Path != "" && m.State == array.MemberFailed.String() {
			if err := w.a.RemoveMember(m.Path); err == nil {
				w.logf("removed %s", w.name(m.Path))
			}
		}
	}
	if d, force := w.spareDisk(rng); d != "" {
		w.add(d, force, "")
	}
}

// add adds disk d (force: it carries a superblock) and reports whether the array took it; why
// starts the log lines.
func (w *world) add(d string, force bool, why string) bool {
	msg, err := w.a.AddMember(w.path(d), force)
	if err != nil {
		w.logf("%sadd %s: %v", why, d, firstLine(err))
		return false
	}
	w.stats.Adds++
	w.logf("%sadded %s: %s", why, d, msg)
	return true
}

// takeOut fails and removes the member at path, and reports whether it did both.
func (w *world) takeOut(path, why string) bool {
	if err := w.a.FailMember(path); err != nil {
		return false
	}
	w.stats.Fails++
	if err := w.a.RemoveMember(path); err != nil {
		w.logf("%sremove %s: %v", why, w.name(path), firstLine(err))
		return false
	}
	w.logf("%sfailed and removed %s", why, w.name(path))
	return true
}

// spareDisk takes a disk for an add or a replace, one the array does not hold: a blank one, or
// one it let go of (force: it carries the array's superblock).
func (w *world) spareDisk(rng *rand.Rand) (string, bool) {
	st := w.a.Status("", 0)
	held := slices.Clone(st.Spares)
	for _, m := range st.Members {
		held = append(held, m.Path, m.Replacement)
	}
	var used []string
	for _, d := range w.disks {
		if !slices.Contains(held, w.path(d)) && !slices.Contains(w.blank, d) {
			used = append(used, d)
		}
	}
	if len(used) > 0 && (len(w.blank) == 0 || rng.IntN(2) == 0) {
		return used[rng.IntN(len(used))], true
	}
	if len(w.blank) > 0 {
		d := w.blank[0]
		w.blank = w.blank[1:] // used from now on, whether the add takes it or not
		return d, false
	}
	return "", false
}

// swapBack takes a member out, lets another device rebuild its slot until the array is whole,
// then takes that one out and puts the first back: an operator swapping the old disk back in. The
// device that comes back left before the array was last made whole, so the map's regions (which
// forget at that moment what was written while it was degraded) cannot say what it missed.
func (w *world) swapBack(rng *rand.Rand) {
	if w.faultPending() {
		return
	}
	ms := w.slots()
	for _, m := range ms {
		if m.State != array.MemberActive.String() || m.Replacement != "" {
			return // the array must be whole for the first device to leave it whole
		}
	}
	if rc := w.a.Status("", 0).Regions; rc != nil && rc.NeedResync > 0 {
		return
	}
	old := ms[rng.IntN(len(ms))]
	const why = "swap back: "
	if !w.takeOut(old.Path, why) {
		return
	}
	d, force := w.spareDisk(rng)
	if d == "" || d == w.name(old.Path) {
		return // the slot waits for the next add
	}
	if !w.add(d, force, why) || !w.waitActive(old.Index, w.path(d)) || !w.takeOut(w.path(d), why) {
		return
	}
	w.add(w.name(old.Path), true, why)
}

// waitActive waits until the device at path serves slot i whole, and reports whether it does:
// no if the disks are cut first, the device leaves the slot, or its rebuild ends without making
// it active (a source failed). The workload's end does not stop the wait: the epoch waits for
// admin, and the rebuild ends sooner without requests beside it.
func (w *world) waitActive(i int, path string) bool {
	defer func(start time.Time) { w.stats.SyncWait += time.Since(start) }(time.Now())
	for idle := 0; ; {
		st := w.a.Status("", 0)
		m := st.Members[i]
		if m.Path != path || w.crashedNow() || w.failed() {
			return false
		}
		if m.State == array.MemberActive.String() {
			return true
		}
		// Twice idle in a row: a rebuild that ended between the member's state and the job's
		// in one status shows active in the next.
		if st.Sync == nil || st.Sync.Action == array.SyncIdle {
			if idle++; idle == 2 {
				return false
			}
		} else {
			idle = 0
		}
		time.Sleep(time.Millisecond)
	}
}

// replace replaces a random active member by another disk while it serves.
func (w *world) replace(rng *rand.Rand) {
	var cands []string
	for _, m := range w.slots() {
		if m.State == array.MemberActive.String() && m.Replacement == "" {
			cands = append(cands, m.Path)
		}
	}
	if len(cands) == 0 {
		return
	}
	old := cands[rng.IntN(len(cands))]
	d, force := w.spareDisk(rng)
	if d == "" {
		// Every disk is in the array, the blank ones as spares (an add of a blank disk to a
		// whole array makes a spare): as an operator would, take a spare out to replace with.
		spares := w.a.Status("", 0).Spares
		if len(spares) == 0 {
			return
		}
		sp := spares[rng.IntN(len(spares))]
		if err := w.a.RemoveMember(sp); err != nil {
			w.logf("remove spare %s to replace with: %v", w.name(sp), firstLine(err))
			return
		}
		d, force = w.name(sp), true
	}
	if err := w.a.ReplaceMember(old, w.path(d), force); err != nil {
		w.logf("replace %s by %s: %v", w.name(old), d, firstLine(err))
		return
	}
	w.stats.Replaces++
	w.logf("replacing %s by %s", w.name(old), d)
}

// verify waits for the sync jobs to end, then reads every copy of every block the workload
// touched straight from the disks, into the history: each must be a value the block may hold,
// and copies of one block must agree (unless it reads as anything).
func (w *world) verify() {
	start := time.Now()
	w.a.WaitSync()
	// A reshape's steps, too: the copies are read by the layout of the array once it is done.
	w.a.WaitReshape()
	w.stats.SyncWait += time.Since(start)
	if w.crashedNow() {
		return // a cut armed in the reshape's steps came meanwhile
	}
	if st, ok := w.a.ReshapeStatus(); ok && st.State != array.ReshapeDone {
		if !w.a.Degraded() {
			w.fail("the reshape of a whole array stopped at byte %d of %d: %s", st.Cursor, st.End, st.Why)
		}
		return
	}
	st := w.a.Status("", 0)
	if w.cfg.Level.Redundant() && (st.Regions == nil || st.Regions.NeedResync > 0) || st.State != array.StateNameActive && st.State != array.StateNameClean {
		return // degraded, or copies left to resync: they may differ yet
	}
	for _, m := range st.Members {
		if m.State != array.MemberActive.String() || m.Replacement != "" {
			return
		}
	}
	if what := w.checkDescriptors(); what != "" {
		w.fail("%s", what)
		return
	}
	w.stats.Verified++
	// Each member's data area in one read from the disks, not a call per copy of a block.
	areas := make([][]byte, len(st.Members))
	for i, m := range st.Members {
		areas[i] = make([]byte, w.dataEnd-w.dataOff)
		w.fs.ReadAt(w.name(m.Path), areas[i], w.dataOff)
	}
	w.hmu.Lock()
	defer w.hmu.Unlock()
	blocks := make([]int64, 0, len(w.hist.ops))
	for b := range w.hist.ops {
		blocks = append(blocks, b)
	}
	slices.Sort(blocks)
	for _, b := range blocks {
		pieces, err := w.a.Map().Read(b*Block, Block, nil)
		if err != nil {
			w.failure = &Failure{Seed: w.cfg.Seed, Request: int(w.requests.Load()), What: fmt.Sprintf("map block %d: %v", b, err)}
			return
		}
		for _, p := range pieces {
			for _, e := range p.Copies[:p.N] {
				buf := areas[e.Member][e.Offset : e.Offset+Block]
				v := valueOf(buf, b)
				note := fmt.Sprintf("copy on %s at %d", w.name(st.Members[e.Member].Path), w.dataOff+e.Offset)
				if v == valGarbage {
					note += fmt.Sprintf(": % x", buf[:24]) + garbageStory(buf, b)
				}
				c := w.hist.now()
				w.hist.add(w.cfg.Depth+2, blockIn{kind: kRead, block: b, note: note}, v, c, w.hist.now())
				w.stats.CopyReads++
			}
		}
	}
	w.logf("verified every copy of %d blocks", len(blocks))
	w.hmu.Unlock()
	w.checkHistory()
	w.hmu.Lock()
}

// checkDescriptors says which member's descriptor is not its device's file ("": none): a
// descriptor number closed under a member and taken by the next file opened would send the
// member's reads and writes to another disk.
func (w *world) checkDescriptors() string {
	for i, m := range w.a.Members() {
		if m == nil {
			continue
		}
		var fst, pst unix.Stat_t
		if err := unix.Fstat(int(m.File.Fd()), &fst); err != nil {
			return fmt.Sprintf("member %d (%s): descriptor %d: %v", i, w.name(m.Path), m.File.Fd(), err)
		}
		if err := unix.Stat(m.Path, &pst); err != nil {
			return fmt.Sprintf("member %d (%s): %v", i, w.name(m.Path), err)
		}
		if fst.Ino != pst.Ino || fst.Dev != pst.Dev {
			return fmt.Sprintf("member %d (%s): descriptor %d is inode %d, its device is inode %d", i, w.name(m.Path), m.File.Fd(), fst.Ino, pst.Ino)
		}
	}
	return ""
}

// checkHistory checks the history so far; a block that is not linearizable is the finding, with
// porcupine's page of its history.
func (w *world) checkHistory() {
	w.hmu.Lock()
	v, err := w.hist.check(time.Minute)
	w.hmu.Unlock()
	if err != nil {
		w.fail("%v", err)
		return
	}
	if v == nil {
		return
	}
	ops := slices.Clone(v.ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	var story strings.Builder
	for _, o := range ops[max(0, len(ops)-60):] {
		fmt.Fprintf(&story, "\n  [%d, %d] client %d: %s", o.Call, o.Return, o.ClientId, blockModel.DescribeOperation(o.Input, o.Output))
	}
	what := fmt.Sprintf("block %d: its history is not linearizable against the block model; its last operations:%s", v.block, story.String())
	page := ""
	if f, err := os.CreateTemp("", fmt.Sprintf("uraid-robust-%d-block%d-*.html", w.cfg.Seed, v.block)); err == nil {
		if porcupine.Visualize(blockModel, v.info, f) == nil {
			page = f.Name()
		}
		f.Close()
	}
	w.fail("%s", what)
	w.hmu.Lock()
	w.failure.Visualization = page
	w.hmu.Unlock()
}

// garbageStory says where a block that looks like a write's differs from it: a torn block.
func garbageStory(b []byte, blk int64) string {
	if binary.LittleEndian.Uint32(b) != magic {
		return ""
	}
	var want [Block]byte
	fillBlock(want[:], binary.LittleEndian.Uint64(b[4:]), int64(binary.LittleEndian.Uint64(b[12:])))
	first, last := -1, -1
	for i := range Block {
		if b[i] != want[i] {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return fmt.Sprintf(" (differs from its write in bytes [%d, %d])", first, last)
}

// growRoom is how much larger than the array's first data area each disk is: the room grows
// take, a little at a time, over a run.
const growRoom = 4 << 20

// grow grows the array by half a region to two regions (a partial last region now and then),
// while the workload runs, and tells the queue of the new size as the kernel's UPDATE_SIZE does.
// A power loss armed at one of its failpoints cuts it at that step. Refusals (no room left, a
// degraded array, a sync job under way) change nothing.
func (w *world) grow(rng *rand.Rand, calm bool) {
	if calm {
		// A calm epoch's rebuilds run to their end: the grow waits for them, as an operator would.
		w.a.WaitSync()
	}
	if !w.whole() {
		return
	}
	want := w.a.Map().Size() + int64(1+rng.IntN(4))*w.regionBytes/2
	p, err := w.a.Grow(array.GrowOptions{Size: want})
	if err != nil {
		w.logf("grow to %d bytes not done: %v", want, err)
		return
	}
	w.h.SetSize(p.NewSize)
	w.blocks.Store(p.NewSize / Block)
	w.dataEnd = w.dataOff + p.NewDataSize
	w.stats.Grows++
	w.logf("grown from %d to %d bytes", p.OldSize, p.NewSize)
}

// changeCopies, at three clean stops of a raid1 in four, changes its copies as uraid grow
// --copies does in a daemon's hand-over (the members marked clean, nothing in flight): a copy
// more, onto a disk that becomes a spare and fills the new slot once the array is assembled again
// (or an empty slot that an add fills later), or a copy fewer, taking a member out for it. A
// third of them cut the power at one of the change's superblock writes.
func (w *world) changeCopies() {
	sb := w.a.Superblock()
	if sb.Level != mapping.RAID1 || w.failed() || w.rng.IntN(4) == 0 {
		return
	}
	n := int(sb.Members)
	if n >= 3 && (n >= 4 || w.rng.IntN(2) == 0) {
		var out string
		for _, m := range w.slots() {
			if m.Path == "" {
				out = ""
				break
			}
			if inService(m) {
				out = m.Path
			}
		}
		if out != "" && !w.takeOut(out, "to drop a copy: ") {
			return
		}
		w.setCopies(n-1, nil, false)
		return
	}
	var add []string
	force := false
	if w.rng.IntN(4) != 0 {
		var d string
		if d, force = w.spareDisk(w.rng); d != "" {
			add = []string{w.path(d)}
		}
	}
	w.setCopies(n+1, add, force)
}

func (w *world) setCopies(n int, add []string, force bool) {
	if w.rng.IntN(3) == 0 {
		m, _ := w.diskStep("superblock-write")
		k := 1 + w.rng.IntN(n)
		w.fs.Arm(simdisk.Rule{Match: m, N: k, Cut: true, Why: "at a superblock write of a change of copies"})
		w.logf("power loss armed at the %d-th superblock write of the change", k)
	}
	p, err := w.a.SetCopies(n, add, force)
	w.fs.Disarm()
	w.crashedNow() // notes a cut
	if err != nil && p.New == 0 {
		w.logf("%d copies not changed: %v", n, firstLine(err))
		return
	}
	w.stats.CopiesChanges++
	w.logf("copies changed from %d to %d (spares %v, slots dropped %v): %v", p.Old, p.New, p.Spares, p.Dropped, err)
	w.recordMembers(w.a)
}

// adminLinear is the operator of an array without redundancy (linear): no member errors, fails,
// adds, replaces or sync jobs, which have no copy to heal from. An epoch either runs its share
// (and ends as it draws), or has a power loss armed at a disk step (a superblock, data or flush
// of the members), or is cut or killed at a random moment. Its membership changes at clean stops
// (appendMember).
func (w *world) adminLinear(rng *rand.Rand, stop <-chan struct{}) {
	p := rng.IntN(100)
	switch {
	case p < 55:
		return
	case p < 75:
		w.armPowerLoss(rng, []string{"superblock-write", "data-write", "disk-flush"}[rng.IntN(3)], 1+rng.IntN(30))
		return
	}
	select {
	case <-stop:
		return
	case <-time.After(time.Duration(rng.IntN(1000)) * time.Millisecond):
	}
	if p < 88 {
		w.cut(endPowerLoss, "at a random moment")
	} else {
		w.cut(endKill, "at a random moment")
	}
}

// appendFailpoints are an append's, one before each of its writes.
var appendFailpoints = []string{array.FailpointAppendTrim, array.FailpointAppendMember, array.FailpointAppendCommit, array.FailpointAppendSettle}

// appendMember, at every clean stop of a linear array while a disk is free, appends a disk that
// is not in it as uraid grow --add does in a daemon's hand-over (the members marked clean, nothing
// in flight; the record names the new member just before the commit). A third of them cut the
// power at one of the append's writes: two in three before the n-th superblock write (the new
// disk's, each old member's, the new disk's again), the others at one of its failpoints. The
// array assembled next must be the old one or the longer one, with every acknowledged write.
func (w *world) appendMember() {
	sb := w.a.Superblock()
	if sb.Level != mapping.Linear || w.failed() {
		return
	}
	w.recordMu.Lock()
	record := slices.Clone(w.record)
	w.recordMu.Unlock()
	var free []string
	for _, d := range w.disks {
		if !slices.Contains(record, w.path(d)) {
			free = append(free, d)
		}
	}
	if len(free) == 0 {
		return
	}
	d := free[w.rng.IntN(len(free))]
	if w.rng.IntN(3) == 0 {
		if w.rng.IntN(3) != 0 {
			m, _ := w.diskStep("superblock-write")
			k := 1 + w.rng.IntN(int(sb.Members)+2)
			w.fs.Arm(simdisk.Rule{Match: m, N: k, Cut: true, Why: "at a superblock write of an append"})
			w.logf("power loss armed at the %d-th superblock write of the append", k)
		} else {
			fp := &fpCrash{name: appendFailpoints[w.rng.IntN(len(appendFailpoints))], delay: time.Duration(w.rng.IntN(2000)) * time.Microsecond}
			fp.n.Store(1)
			w.fpArm.Store(fp)
			w.logf("power loss armed at failpoint %s", fp.name)
		}
	}
	p, err := w.a.Append(array.AppendOptions{Add: []string{w.path(d)}, BeforeCommit: func(members []string) error {
		if w.crashedNow() {
			return errors.New("the power is cut: no daemon records anything")
		}
		w.recordMu.Lock()
		w.record = slices.Clone(members)
		w.recordMu.Unlock()
		return nil
	}})
	w.fs.Disarm()
	w.fpArm.Store(nil)
	w.crashedNow() // notes a cut
	if err != nil && !p.Committed {
		w.logf("%s not appended: %v", d, firstLine(err))
		return
	}
	w.stats.Appends++
	w.logf("%s appended: %d members (was %d), %d bytes (was %d): %v", d, p.NewMembers, p.OldMembers, p.NewSize, p.OldSize, err)
}
