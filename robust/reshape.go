package robust

import (
	"fmt"
	"log/slog"
	"os"
	"slices"

	"uraid/array"
	"uraid/mapping"
	"uraid/raid"
)

// reshapeFailpoints are the reshape's steps a power loss is armed at, each with how many times
// one reshape of the harness's arrays reaches it at least (the n-th is drawn from that many).
var reshapeFailpoints = []struct {
	name string
	hits int
}{
	{array.FailpointReshapeCommit, 1},
	{array.FailpointReshapeBackup, 1},
	{array.FailpointReshapeMid, 1},
	{array.FailpointReshapeWrite, 8},
	{array.FailpointReshapePersist, 8},
	{array.FailpointReshapeIO, 40},
	{array.FailpointReshapeMember, 40},
	{array.FailpointReshapeMap, 1},
	{array.FailpointReshapeFinish, 1},
}

// maxReshapeMembers bounds how wide the harness lets a raid10 grow.
const maxReshapeMembers = 8

// reshapeWindow keeps the harness's reshapes to dozens of steps, so that cuts land among them.
const reshapeWindow = 256 << 10

// reshape, at every clean stop of a whole raid10 n2 or o2 (most clean stops find a member out,
// and a reshape needs every one) up to maxReshapeMembers, widens it by one member, a disk made for it, as
// uraid grow --add does on a running array: the members are assembled, the reshape committed on
// the served array (array.StartReshape), which is closed, and the members returned, old and new,
// are assembled by the caller into an array that serves the next epoch's workload while the
// reshape runs. A third of them arm a power loss at one of the reshape's failpoints: at the
// commit, or in a step of the epochs that follow. The model check holds over the array as it
// serves, and at its new size once the reshape is done.
func (w *world) reshape(paths []string) []string {
	sb := w.a.Superblock()
	if sb.Level != mapping.RAID10 || sb.Layout == mapping.Far2 || int(sb.Members) >= maxReshapeMembers || sb.Reshape != nil ||
		w.failed() || w.crashedNow() {
		return paths
	}
	// The spares leave the array first, as the operator removes them before a reshape (it
	// refuses them): they are not named to the assembly, and their stale superblocks are left
	// out of any later one.
	paths = slices.DeleteFunc(slices.Clone(paths), isSpare)
	if len(paths) != int(sb.Members) || !wholeOnDisk(paths) {
		w.logf("no reshape: the array is not whole (%d of %d members in the record; %s)", len(paths), sb.Members, describeSuperblocks(paths))
		return paths
	}
	fi, err := os.Stat(paths[0])
	if err != nil {
		w.fail("reshape: %v", err)
		return paths
	}
	name := fmt.Sprintf("w%d", len(w.disks))
	w.fs.Add(name, fi.Size(), 0)
	w.disks = append(w.disks, name)
	dev := w.path(name)
	if w.rng.IntN(3) == 0 {
		// Armed until it fires or the next epoch ends: the steps run while that epoch serves.
		fp := reshapeFailpoints[w.rng.IntN(len(reshapeFailpoints))]
		w.armPowerLoss(w.rng, fp.name, 1+w.rng.IntN(fp.hits))
	}
	a, err := array.Assemble("r", paths, w.options())
	if err != nil {
		w.fail("assemble to reshape %v: %v", paths, err)
		return paths
	}
	err = a.StartReshape([]string{dev}, array.ReshapeOptions{MaxWindowBytes: reshapeWindow, Log: slog.New(slog.DiscardHandler)})
	a.Close()
	crashed := w.crashedNow()
	switch {
	case err == nil:
		w.stats.Reshapes++
		w.logf("reshape to %d members committed; it runs while the array serves", sb.Members+1)
	case crashed:
		w.stats.Reshapes++
		w.logf("reshape to %d members cut at its commit: %v", sb.Members+1, firstLine(err))
	default:
		w.logf("reshape to %d members not started: %v", sb.Members+1, firstLine(err))
	}
	if crashed {
		w.fs.Resume() // the successor assembles: it resumes the reshape, if it was committed
	}
	// The new disk takes part if it carries the array's superblock: a cut before the reshape
	// wrote it leaves the array as it was.
	if f, err := os.Open(dev); err == nil {
		nsb, err := raid.ReadSuperblock(f)
		f.Close()
		if err == nil && nsb.ArrayUUID == sb.ArrayUUID {
			paths = append(slices.Clip(paths), dev)
			w.recordMu.Lock()
			w.record = slices.Clone(paths)
			w.recordMu.Unlock()
		}
	}
	return paths
}

// wholeOnDisk reports whether the members at paths assemble whole, every slot in service and no
// spare, rebuild or replacement among them: what a reshape needs (it refuses otherwise, and the
// harness would arm a power loss for nothing).
func wholeOnDisk(paths []string) bool {
	var sbs []raid.MemberSB
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return false
		}
		sb, err := raid.ReadSuperblock(f)
		f.Close()
		if err != nil {
			return false
		}
		sbs = append(sbs, raid.MemberSB{Path: p, SB: sb})
	}
	a, err := raid.CheckAssembly(sbs)
	return err == nil && len(a.Spares) == 0 && len(a.Replacing) == 0 && len(a.Rebuilding) == 0
}

// reshaping reports whether the array serving this epoch runs a reshape.
func (w *world) reshaping() bool {
	st, ok := w.a.ReshapeStatus()
	return ok && st.State == array.ReshapeRunning
}

// reshapeable reports whether a clean stop now would find the array as a reshape wants it: a
// raid10 n2 or o2, narrower than maxReshapeMembers, whole, not reshaping.
func (w *world) reshapeable() bool {
	sb := w.a.Superblock()
	return sb.Level == mapping.RAID10 && sb.Layout != mapping.Far2 && int(sb.Members) < maxReshapeMembers &&
		sb.Reshape == nil && !w.reshaping() && w.whole()
}

// isSpare reports whether the device at path carries a spare's superblock.
func isSpare(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sb, err := raid.ReadSuperblock(f)
	return err == nil && sb.Role == raid.RoleSpare
}
