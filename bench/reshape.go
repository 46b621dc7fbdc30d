package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"uraid/mapping"
)

// Scenario (k)'s disks: six brd RAM disks (bench/guest.sh loads them), served
// through dm-linear as (g)'s are, for the kernel's I/O counters: four for the
// array, two it grows by.
var reshapeDisks = []string{"/dev/ram0", "/dev/ram1", "/dev/ram2", "/dev/ram3", "/dev/ram4", "/dev/ram5"}

const (
	// reshapeFrom is the array's member count before the reshape; the rest
	// of reshapeDisks are added.
	reshapeFrom = 4
	// reshapeCopies is the copies of every byte a raid10 near-2 keeps: the
	// least a reshape can move is each live byte read once and written once
	// per copy (docs/design.md, "Reshape").
	reshapeCopies = 2
	// reshapeGrowth is the least the filesystem must have grown by after
	// resize2fs: 4 -> 6 members make the array 1.5x as large, less what the
	// layouts keep back.
	reshapeGrowth = 1.4
)

// ReshapeSetting describes scenario (k)'s setup for a run's settings.
func ReshapeSetting(quick bool) string {
	return fmt.Sprintf("RAID10 near-2 over 4 dm-linear devices of %d MiB on brd RAM disks, grown to 6 by two more of the same "+
		"(md: mdadm --add, then mdadm --grow --raid-devices=6, online, the default data offset's room, no backup file; "+
		"uraid: stop, grow --add x2, assemble: offline, the filesystem unmounted for both); "+
		"every device discarded before each array, ext4 (mkfs -T default) written to %.0f%% in files of %d MiB, then fstrim; "+
		"md's sync_speed_min and sync_speed_max both %d KiB/s; bytes are the members' /sys/block stat counters summed over the "+
		"six devices from the first command to the grown array; md and uraid in turn in every repetition, order rotating",
		rebuildMemberMiB(quick), 100*rebuildLive, rebuildFile>>20, mdSyncSpeed)
}

// reshapeReport is what uraid grow --add --json prints of a reshape
// (cmd/uraid, reshapeResult): its own count of the bytes it moved.
type reshapeReport struct {
	// Stop, Grow and Assemble are how long each of uraid's three commands
	// took, measured by the bench, not printed by grow.
	Stop, Grow, Assemble time.Duration `json:"-"`

	OldMembers   int   `json:"old_members"`
	NewMembers   int   `json:"new_members"`
	OldSize      int64 `json:"old_size"`
	NewSize      int64 `json:"new_size"`
	Resumed      bool  `json:"resumed"`
	Steps        int   `json:"steps"`
	LiveBytes    int64 `json:"live_bytes"`
	ReadBytes    int64 `json:"read_bytes"`
	WriteBytes   int64 `json:"write_bytes"`
	DiscardBytes int64 `json:"discard_bytes"`
}

// parseReshapeReport reads uraid grow --add --json's output and checks that
// it is of an uninterrupted reshape from members to members+added.
func parseReshapeReport(out string, from, to int) (reshapeReport, error) {
	var rep reshapeReport
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&rep); err != nil {
		return rep, fmt.Errorf("uraid grow --json: %w (printed %q)", err, out)
	}
	switch {
	case rep.OldMembers != from || rep.NewMembers != to:
		return rep, fmt.Errorf("uraid grow --json: reshaped %d to %d members, want %d to %d", rep.OldMembers, rep.NewMembers, from, to)
	case rep.Resumed:
		return rep, errors.New("uraid grow --json: the reshape says it resumed one cut short, yet none ran before it")
	case rep.NewSize <= rep.OldSize:
		return rep, fmt.Errorf("uraid grow --json: the array did not grow (%d to %d bytes)", rep.OldSize, rep.NewSize)
	case rep.LiveBytes <= 0 || rep.ReadBytes < 0 || rep.WriteBytes < 0 || rep.DiscardBytes < 0:
		return rep, fmt.Errorf("uraid grow --json: counts out of range: %+v", rep)
	}
	return rep, nil
}

// sumDelta is what every device read, wrote and discarded between before
// and after.
func sumDelta(before, after []blockStat) (blockStat, error) {
	if len(before) != len(after) {
		return blockStat{}, fmt.Errorf("counters of %d devices before, %d after", len(before), len(after))
	}
	var sum blockStat
	for i := range after {
		d := after[i].sub(before[i])
		sum = blockStat{sum.read + d.read, sum.written + d.written, sum.discarded + d.discarded, sum.reads + d.reads, sum.writes + d.writes}
	}
	return sum, nil
}

// figure is one metric of a repetition, as Result records it.
type figure struct {
	metric, unit, better string
	v                    float64
}

// reshapeFigures are scenario (k)'s figures of one reshape: its time, what
// the members read and wrote by the kernel's count (moved is the two
// together), the filesystem's used bytes, and moved over the least a
// reshape can move, each live byte read once and written once per copy:
// counted on the filesystem's used bytes for every system (fs_least), and,
// for uraid (own not nil), on the bytes its region map holds live (least),
// beside its own counts and the time of its grow command alone (grow_wall:
// wall less the stop and the assembly). Figures that describe the data rather than the
// reshape's cost are "none": not compared, not drawn.
func reshapeFigures(took time.Duration, d blockStat, fsUsed int64, own *reshapeReport) []figure {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	moved := d.read + d.written
	fs := []figure{
		{"wall", "ms", "lower", ms(took)},
		{"read", "MiB", "lower", mib(d.read)},
		{"written", "MiB", "lower", mib(d.written)},
		{"moved", "MiB", "lower", mib(moved)},
		{"discarded", "MiB", "none", mib(d.discarded)},
		{"fs_used", "MiB", "none", mib(fsUsed)},
	}
	if fsUsed > 0 {
		fs = append(fs, figure{"over_fs_least", "x", "none", float64(moved) / float64((1+reshapeCopies)*fsUsed)})
	}
	if own == nil {
		return fs
	}
	fs = append(fs,
		figure{"grow_wall", "ms", "none", ms(own.Grow)},
		figure{"live", "MiB", "none", mib(own.LiveBytes)},
		figure{"own_read", "MiB", "none", mib(own.ReadBytes)},
		figure{"own_written", "MiB", "none", mib(own.WriteBytes)},
		figure{"own_discarded", "MiB", "none", mib(own.DiscardBytes)},
		figure{"over_live", "x", "none", float64(moved) / float64(own.LiveBytes)},
		figure{"over_least", "x", "none", float64(moved) / float64((1+reshapeCopies)*own.LiveBytes)},
	)
	return fs
}

// (k) Reshaping a RAID10 near-2 of 4 members to 6 under a 20%-full ext4:
// md by mdadm --grow --raid-devices, which moves every byte of the array,
// online; uraid by stop, grow --add and assemble, offline (its online
// reshape is not there yet), which moves only what its region map holds
// live. Timed from the first command to the grown array serving, the
// filesystem unmounted for both; the six devices' kernel counters say what
// each read and wrote, and uraid's grow --json its own count and the live
// bytes. Then resize2fs on the mounted filesystem, which must have grown,
// e2fsck -fn clean and every file read back as written, from the disks.
// md and uraid take turns on the same disks in every repetition, in an
// order that rotates.
func (r *Runner) reshape() error {
	for _, bin := range []string{"dmsetup", "e2fsck", "resize2fs"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("scenario (k): %s: %w (install with tests/vm/vm setup)", bin, err)
		}
	}
	g, err := newDiskRig("k", reshapeDisks, rebuildMemberMiB(r.cfg.Quick)<<20)
	if err != nil {
		return err
	}
	defer g.close()
	systems := []System{mdSystem(mapping.RAID10), uraidSystem(mapping.RAID10, "sync")}
	for rep := range r.cfg.Reps {
		order := slices.Clone(systems)
		k := rep % len(order)
		order = append(order[k:], order[:k]...)
		for _, sys := range order {
			if err := r.reshapeOnce(sys, rep, g); err != nil {
				return fmt.Errorf("%s: %w", sys.Name, err)
			}
		}
	}
	return nil
}

// reshapeOnce builds sys over the rig's first four devices, fills its
// filesystem, grows it by the other two, checks the result and records the
// figures of rep.
func (r *Runner) reshapeOnce(sys System, rep int, g *rig) (err error) {
	// Every device discarded, which frees brd's pages: each array starts on
	// empty disks, none pays for what the last one left, and no superblock
	// is left for the next array to find.
	for _, p := range g.paths {
		if _, err := blkdiscard(p); err != nil {
			return err
		}
		if err := zeroHead(p, 4<<20); err != nil {
			return err
		}
	}
	old, added := g.paths[:reshapeFrom], g.paths[reshapeFrom:]
	a, err := r.create(sys, old, nil)
	if err != nil {
		return err
	}
	defer func() {
		if serr := r.stop(a); serr != nil && err == nil {
			err = serr
		}
	}()
	if sys.MD {
		if err := mdSpeed(a.dev, mdSyncSpeed); err != nil {
			return err
		}
	}
	live, used, err := r.fillAndTrim(a)
	if err != nil {
		return err
	}
	fsBefore, err := fsSize(a.dev)
	if err != nil {
		return err
	}
	r.logf("k %s rep %d: %d files of %d MiB written, free space trimmed, the filesystem uses %.1f MiB of %.1f MiB; growing %d -> %d members",
		sys.Name, rep, len(live), rebuildFile>>20, float64(used)/(1<<20), float64(fsBefore)/(1<<20), reshapeFrom, len(g.paths))

	before, err := statsOf(g.paths)
	if err != nil {
		return err
	}
	var own *reshapeReport
	start := time.Now()
	if sys.MD {
		err = mdGrow(a.dev, added)
	} else {
		var rep reshapeReport
		rep, err = r.uraidGrow(a, old, added)
		own = &rep
	}
	took := time.Since(start)
	if err != nil {
		return err
	}
	after, err := statsOf(g.paths)
	if err != nil {
		return err
	}
	d, err := sumDelta(before, after)
	if err != nil {
		return err
	}
	ownLine := ""
	if own != nil {
		ownLine = fmt.Sprintf("; its own count: %.1f MiB live, read %.1f MiB, wrote %.1f MiB, discarded %.1f MiB in %d steps; "+
			"stop %v, grow %v, assemble %v",
			float64(own.LiveBytes)/(1<<20), float64(own.ReadBytes)/(1<<20), float64(own.WriteBytes)/(1<<20),
			float64(own.DiscardBytes)/(1<<20), own.Steps, own.Stop.Round(time.Millisecond), own.Grow.Round(time.Millisecond),
			own.Assemble.Round(time.Millisecond))
	}
	r.logf("k %s rep %d: reshape took %v; members read %.1f MiB, wrote %.1f MiB, discarded %.1f MiB%s",
		sys.Name, rep, took.Round(time.Millisecond), float64(d.read)/(1<<20), float64(d.written)/(1<<20), float64(d.discarded)/(1<<20), ownLine)

	if err := r.verifyReshaped(a, fsBefore, live); err != nil {
		return err
	}
	res := Result{Scenario: "k-reshape", Case: "4to6", System: sys.Name}
	for _, f := range reshapeFigures(took, d, used, own) {
		res.Metric, res.Unit, res.Better = f.metric, f.unit, f.better
		r.add(res, f.v)
	}
	return nil
}

// mdGrow adds the devices to the md array dev and reshapes it to take them
// as members, returning once the reshape is over and md idle. mdadm 4.2
// reshapes a raid10 by moving the data offset, into the room it leaves
// before the data at create (a chunk's worth here), with no backup file.
func mdGrow(dev string, added []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := run(ctx, "mdadm", append([]string{dev, "--add"}, added...)...); err != nil {
		return err
	}
	md := filepath.Join("/sys/block", filepath.Base(dev), "md")
	disks, err := os.ReadFile(filepath.Join(md, "raid_disks"))
	if err != nil {
		return err
	}
	want := fmt.Sprint(reshapeFrom + len(added))
	if _, err := run(ctx, "mdadm", "--grow", dev, "--raid-devices="+want); err != nil {
		return fmt.Errorf("%w (raid_disks was %s)", err, strings.TrimSpace(string(disks)))
	}
	attr := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(md, name))
		return strings.TrimSpace(string(b))
	}
	// raid_disks reads "6 (4)" and reshape_position a sector while the
	// reshape runs; a resync md might start of the new space after it
	// would leave resync_start short of "none".
	for {
		if attr("sync_action") == "idle" && attr("reshape_position") == "none" && attr("raid_disks") == want && attr("resync_start") == "none" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("md reshape to %s members: not done after 10 minutes (sync_action %q, reshape_position %q, raid_disks %q, resync_start %q)",
				want, attr("sync_action"), attr("reshape_position"), attr("raid_disks"), attr("resync_start"))
		case <-time.After(rebuildPoll):
		}
	}
}

// uraidGrow stops the uraid array a, reshapes it from the members old to
// old and added, and assembles it again; a.dev is the new device.
func (r *Runner) uraidGrow(a *array, old, added []string) (reshapeReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := run(ctx, r.cfg.URaid, "stop", a.name); err != nil {
		return reshapeReport{}, err
	}
	stopped := time.Now()
	args := []string{"grow", a.name, "--json"}
	for _, d := range added {
		args = append(args, "--add", d)
	}
	out, err := run(ctx, r.cfg.URaid, append(args, old...)...)
	if err != nil {
		return reshapeReport{}, err
	}
	grown := time.Now()
	rep, err := parseReshapeReport(out, len(old), len(old)+len(added))
	if err != nil {
		return rep, err
	}
	out, err = run(ctx, r.cfg.URaid, append([]string{"assemble", a.name}, append(slices.Clone(old), added...)...)...)
	if err != nil {
		return rep, err
	}
	rep.Stop, rep.Grow, rep.Assemble = stopped.Sub(start), grown.Sub(stopped), time.Since(grown)
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/") {
		return rep, fmt.Errorf("uraid assemble printed %q, want a device", dev)
	}
	a.dev = dev
	return rep, nil
}

// fsSize is the size of dev's ext4, by statfs of it mounted.
func fsSize(dev string) (int64, error) {
	if err := mount(dev, false); err != nil {
		return 0, err
	}
	var sfs unix.Statfs_t
	err := unix.Statfs(mountPoint, &sfs)
	if uerr := umount(); err == nil {
		err = uerr
	}
	if err != nil {
		return 0, err
	}
	return int64(sfs.Blocks) * sfs.Bsize, nil
}

// verifyReshaped grows the filesystem on the reshaped array with resize2fs,
// mounted, checks that it grew, then checks it with e2fsck -fn and reads
// back every live file, from the disks, not the page cache.
func (r *Runner) verifyReshaped(a *array, fsBefore int64, live []int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := mount(a.dev, false); err != nil {
		return fmt.Errorf("after the reshape: %w", err)
	}
	out, err := run(ctx, "resize2fs", a.dev)
	if uerr := umount(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("after the reshape: %w\n%s", err, out)
	}
	fsAfter, err := fsSize(a.dev)
	if err != nil {
		return err
	}
	if float64(fsAfter) < reshapeGrowth*float64(fsBefore) {
		return fmt.Errorf("after the reshape and resize2fs the filesystem is %d bytes, was %d: it should have grown by %.1fx at least",
			fsAfter, fsBefore, reshapeGrowth)
	}
	dropCaches := func() error { return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0) }
	if err := dropCaches(); err != nil {
		return err
	}
	if out, err := run(ctx, "e2fsck", "-fn", a.dev); err != nil {
		return fmt.Errorf("after the reshape and resize2fs: %w\n%s", err, out)
	}
	if err := dropCaches(); err != nil {
		return err
	}
	if err := readBack(a.dev, live); err != nil {
		return fmt.Errorf("after the reshape and resize2fs: %w", err)
	}
	r.logf("k %s: resize2fs grew the filesystem from %.1f MiB to %.1f MiB; e2fsck -fn clean and %d files read back intact",
		a.sys.Name, float64(fsBefore)/(1<<20), float64(fsAfter)/(1<<20), len(live))
	return nil
}
