package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	uarray "uraid/array" // named apart from this package's own type array
	"uraid/daemon"
	"uraid/mapping"
)

// Scenario (g)'s disks: five brd RAM disks (bench/guest.sh loads them),
// four for the array and a fifth, blank, that replaces member 0. Each is
// served through a dm-linear device over the whole or a part of it: brd
// keeps no I/O statistics, and the kernel's own count of the sectors written
// to the new member is the figure that is compared, the same counter for md
// and uraid.
var rebuildDisks = []string{"/dev/ram0", "/dev/ram1", "/dev/ram2", "/dev/ram3", "/dev/ram4"}

// Scenario (g)'s filesystem: rebuildLive of it written in files of
// rebuildFile bytes, and the rest trimmed, when the member is replaced.
const (
	rebuildFile = 1 << 20
	rebuildLive = 0.20
)

// mdSyncSpeed is the md recovery speed limit the bench sets, in KiB/s, as
// both the floor (sync_speed_min) and the ceiling (sync_speed_max) of the
// array: 10 GiB/s, far above what the RAM disks sustain, so that md is
// throttled neither by its default ceiling (200 MiB/s) nor, when it decides
// the array is busy, by its default floor (1 MiB/s). uraid's rebuild runs
// uncapped on an idle array by default.
const mdSyncSpeed = 10 << 20

// rebuildPoll is how often the end of a rebuild is looked for, the same for
// md (sysfs) and uraid (its control socket): in process, so that waiting
// costs neither array a process per look.
const rebuildPoll = 20 * time.Millisecond

// rebuildMemberMiB is the size of scenario (g)'s members: all of a RAM disk,
// or less in a quick run, which copies less.
func rebuildMemberMiB(quick bool) int64 {
	if quick {
		return 96
	}
	return 256
}

// RebuildSetting describes scenario (g)'s setup for a run's settings.
func RebuildSetting(quick bool) string {
	return fmt.Sprintf("RAID10 over 4 dm-linear devices of %d MiB on brd RAM disks, a fifth blank one replaces member 0 "+
		"(mdadm --replace, uraid replace); ext4 (mkfs -T default: 4 KiB blocks) written to %.0f%% in files of %d MiB, then fstrim; "+
		"md's sync_speed_min and sync_speed_max both %d KiB/s, uraid's rebuild uncapped (its default); "+
		"md and uraid in turn in every repetition, order rotating", rebuildMemberMiB(quick), 100*rebuildLive, rebuildFile>>20, mdSyncSpeed)
}

// rig is scenario (g)'s dm-linear devices: the array's four members, then
// the blank replacement.
type rig struct {
	names, paths []string
	size         int64 // bytes, each
}

func (g *rig) members() []string { return g.paths[:4] }
func (g *rig) old() string       { return g.paths[0] }
func (g *rig) mirror() string    { return g.paths[1] }
func (g *rig) spare() string     { return g.paths[4] }

// newRig puts a dm-linear device of size bytes over the head of each of
// rebuildDisks.
func newRig(size int64) (*rig, error) { return newDiskRig("g", rebuildDisks, size) }

// newDiskRig puts a dm-linear device of size bytes, named bench-SCENARIOi,
// over the head of each of disks.
func newDiskRig(scenario string, disks []string, size int64) (g *rig, err error) {
	g = &rig{size: size}
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	for i, disk := range disks {
		f, err := os.Open(disk)
		if err != nil {
			return nil, fmt.Errorf("scenario (%s) disk: %w (load brd: tests/vm/vm modprobe brd rd_nr=%d rd_size=262144, as bench/guest.sh does)",
				scenario, err, len(disks))
		}
		n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", disk, os.NewSyscallError("ioctl BLKGETSIZE64", err))
		}
		if int64(n) < size {
			return nil, fmt.Errorf("%s: %d bytes, scenario (%s) needs %d (rd_size=%d)", disk, n, scenario, size, size>>10)
		}
		name := fmt.Sprintf("bench-%s%d", scenario, i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err = run(ctx, "dmsetup", "create", name, "--table", fmt.Sprintf("0 %d linear %s 0", size>>9, disk))
		if err == nil {
			g.names = append(g.names, name)
			var out string
			// The guest has no udev to make /dev/mapper links; devtmpfs has the dm-N node.
			out, err = run(ctx, "dmsetup", "info", "-c", "--noheadings", "-o", "blkdevname", name)
			g.paths = append(g.paths, "/dev/"+strings.TrimSpace(out))
		}
		cancel()
		if err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *rig) close() error {
	var errs []error
	for _, n := range g.names {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := run(ctx, "dmsetup", "remove", "--retry", n)
		cancel()
		errs = append(errs, err)
	}
	g.names, g.paths = nil, nil
	return errors.Join(errs...)
}

// blockStat is a block device's counters from /sys/block/NAME/stat: bytes
// read, written and discarded, and the reads and writes completed.
type blockStat struct{ read, written, discarded, reads, writes int64 }

func statOf(dev string) (blockStat, error) {
	b, err := os.ReadFile(filepath.Join("/sys/class/block", filepath.Base(dev), "stat"))
	if err != nil {
		return blockStat{}, err
	}
	s, err := parseStat(string(b))
	if err != nil {
		return blockStat{}, fmt.Errorf("%s: %w", dev, err)
	}
	return s, nil
}

// parseStat reads the counters of a block device's stat file
// (Documentation/block/stat.rst): fields 1 and 5, counted from 1, are the
// reads and writes completed, 3, 7 and 14 the sectors read, written and
// discarded.
func parseStat(text string) (blockStat, error) {
	f := strings.Fields(text)
	if len(f) < 14 {
		return blockStat{}, fmt.Errorf("stat: %d fields, want at least 14 (discard counters came in Linux 4.18)", len(f))
	}
	var v [5]int64
	for k, i := range []int{2, 6, 13, 0, 4} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return blockStat{}, fmt.Errorf("stat field %d: %w", i+1, err)
		}
		v[k] = n
	}
	return blockStat{read: v[0] << 9, written: v[1] << 9, discarded: v[2] << 9, reads: v[3], writes: v[4]}, nil
}

func (s blockStat) sub(t blockStat) blockStat {
	return blockStat{s.read - t.read, s.written - t.written, s.discarded - t.discarded, s.reads - t.reads, s.writes - t.writes}
}

// statsOf is statOf of every device.
func statsOf(devs []string) ([]blockStat, error) {
	out := make([]blockStat, len(devs))
	for i, d := range devs {
		s, err := statOf(d)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// (g) Replacing a member of a RAID10 that carries a filesystem: ext4
// written to 20% in files and fstrim run; then member 0 replaced by a blank device while the old one
// still serves (mdadm --replace, uraid replace), and timed until the new
// device is in service. What the new device was written, by the kernel's
// count, says how much each copied: md copies the whole member, uraid only
// what its region map says holds data. Afterwards member 0's mirror is
// failed, so that its half of the data can only come from the new device,
// and the filesystem must pass e2fsck -fn and every file read back as
// written: the figure is of a correct rebuild. md and uraid take turns on
// the same disks in every repetition, in an order that rotates.
func (r *Runner) rebuild() error {
	for _, bin := range []string{"dmsetup", "e2fsck"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("scenario (g): %s: %w (install with tests/vm/vm setup)", bin, err)
		}
	}
	g, err := newRig(rebuildMemberMiB(r.cfg.Quick) << 20)
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
			if err := r.rebuildOnce(sys, rep, g); err != nil {
				return fmt.Errorf("%s: %w", sys.Name, err)
			}
		}
	}
	return nil
}

// rebuildOnce builds sys over the rig's members, fills its filesystem,
// replaces member 0, checks the result and records the figures of rep.
func (r *Runner) rebuildOnce(sys System, rep int, g *rig) (err error) {
	// Every page of the new device allocated, so that neither array's
	// rebuild pays brd's first-write allocation (uraid's trims the free
	// regions of the new device, which frees their pages; the members'
	// free space is freed alike by each run's fstrim), and no superblock
	// left on any device for the next array to find.
	if err := fill(g.spare()); err != nil {
		return err
	}
	for _, p := range g.paths {
		if err := zeroHead(p, 4<<20); err != nil {
			return err
		}
	}
	a, err := r.create(sys, g.members(), nil)
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
	live, _, err := r.fillAndTrim(a)
	if err != nil {
		return err
	}
	r.logf("g %s rep %d: %d files of %d MiB written, free space trimmed; replacing member 0", sys.Name, rep, len(live), rebuildFile>>20)

	before, err := statOf(g.spare())
	if err != nil {
		return err
	}
	var ownBefore uint64
	if !sys.MD {
		st, err := r.status(a)
		if err != nil {
			return err
		}
		ownBefore = st.Members[0].IO.SyncWriteBytes
		if c := st.Regions; c != nil {
			r.logf("g %s rep %d: region map: %d regions of %d KiB, %d trimmed, %d in sync, %d dirty", sys.Name, rep,
				c.Regions, c.RegionBytes>>10, c.Trimmed, c.InSync, c.Dirty)
		}
	}
	start := time.Now()
	if sys.MD {
		err = mdReplace(a.dev, g.old(), g.spare())
	} else {
		err = r.uraidReplace(a, g.old(), g.spare())
	}
	took := time.Since(start)
	if err != nil {
		return err
	}
	after, err := statOf(g.spare())
	if err != nil {
		return err
	}
	d := after.sub(before)
	own := ""
	if !sys.MD {
		st, err := r.status(a)
		if err != nil {
			return err
		}
		own = fmt.Sprintf(", its own count %.1f MiB", float64(st.Members[0].IO.SyncWriteBytes-ownBefore)/(1<<20))
	}
	r.logf("g %s rep %d: replace took %v; new member written %.1f MiB (%.1f%% of its %d MiB), trimmed %.1f MiB%s",
		sys.Name, rep, took.Round(time.Millisecond), float64(d.written)/(1<<20), 100*float64(d.written)/float64(g.size),
		g.size>>20, float64(d.discarded)/(1<<20), own)

	if err := r.verifyRebuilt(a, g, live); err != nil {
		return err
	}
	res := Result{Scenario: "g-rebuild", Case: "replace", System: sys.Name, Better: "lower"}
	res.Metric, res.Unit = "wall", "ms"
	r.add(res, ms(took))
	res.Metric, res.Unit = "written", "MiB"
	r.add(res, float64(d.written)/(1<<20))
	return nil
}

// mdSpeed sets md's recovery speed floor and ceiling for the array dev.
func mdSpeed(dev string, kibps int) error {
	for _, f := range []string{"sync_speed_min", "sync_speed_max"} {
		p := filepath.Join("/sys/block", filepath.Base(dev), "md", f)
		if err := os.WriteFile(p, []byte(strconv.Itoa(kibps)), 0); err != nil {
			return fmt.Errorf("md recovery speed: %w", err)
		}
	}
	return nil
}

// mdReplace adds spare to the md array dev as a spare, has it replace old
// and returns once the copy is over and spare in service.
func mdReplace(dev, old, spare string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := run(ctx, "mdadm", dev, "--add", spare); err != nil {
		return err
	}
	if _, err := run(ctx, "mdadm", dev, "--replace", old, "--with", spare); err != nil {
		return err
	}
	md := filepath.Join("/sys/block", filepath.Base(dev), "md")
	state := func(member string) string {
		b, _ := os.ReadFile(filepath.Join(md, "dev-"+filepath.Base(member), "state"))
		return strings.TrimSpace(string(b))
	}
	// md marks the replacement in_sync only once its recovery has copied
	// everything, and then fails the old member.
	for {
		action, err := os.ReadFile(filepath.Join(md, "sync_action"))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(action)) == "idle" && strings.Contains(state(spare), "in_sync") && strings.Contains(state(old), "faulty") {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("md replace of %s by %s: not done after 10 minutes (%s: %q, %s: %q)", old, spare, old, state(old), spare, state(spare))
		case <-time.After(rebuildPoll):
		}
	}
	_, err := run(ctx, "mdadm", dev, "--remove", old)
	return err
}

// uraidReplace has spare replace old in the uraid array a and returns once
// the rebuild is over and spare in service in old's slot.
func (r *Runner) uraidReplace(a *array, old, spare string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := run(ctx, r.cfg.URaid, "replace", a.name, old, spare); err != nil {
		return err
	}
	c := daemon.NewClient(a.name)
	var st uarray.Status
	for {
		st = uarray.Status{}
		if err := c.Status(ctx, &st); err != nil {
			return fmt.Errorf("uraid replace of %s by %s: %w", old, spare, err)
		}
		if s := st.Sync; s != nil && s.Action == "idle" && len(st.Members) > 0 {
			m := st.Members[0]
			if m.Path == spare && m.State == "active" && m.Replacement == "" {
				break
			}
			if s.Last != nil && s.Last.Error != "" {
				return fmt.Errorf("uraid replace of %s by %s: the rebuild failed: %s", old, spare, s.Last.Error)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("uraid replace of %s by %s: not done after 10 minutes (member 0: %+v)", old, spare, st.Members[0])
		case <-time.After(rebuildPoll):
		}
	}
	if s := st.Sync.Last; s == nil || s.Action != uarray.SyncRebuild || s.Error != "" || s.Cancelled {
		return fmt.Errorf("uraid replace of %s by %s: the last job is %+v, want a rebuild that succeeded", old, spare, s)
	}
	return nil
}

// fillAndTrim makes ext4 on a, writes files of rebuildFile bytes over
// rebuildLive of it, trims its free space and unmounts it. It returns the
// files written and the bytes the filesystem then used, by statfs.
func (r *Runner) fillAndTrim(a *array) (files []int, used int64, err error) {
	// -T default: the layout mkfs gives a disk of any real size (4 KiB
	// blocks, 128 MiB block groups). Left to itself it takes these arrays
	// for small ones and makes 1 KiB blocks and 8 MiB groups, whose
	// boundaries lie 1 KiB off every MiB: fstrim trims group by group, and
	// uraid's region map (1 MiB regions here) counts a region trimmed only
	// when one discard covers it whole, so one region per group stays live
	// (64 MiB of 512).
	if err := mkfs(a.dev, "-T", "default"); err != nil {
		return nil, 0, err
	}
	if err := mount(a.dev, false); err != nil {
		return nil, 0, err
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(mountPoint, &sfs); err != nil {
		umount()
		return nil, 0, os.NewSyscallError("statfs", err)
	}
	n := int(rebuildLive * float64(sfs.Blocks) * float64(sfs.Bsize) / rebuildFile)
	dir := filepath.Join(mountPoint, "g")
	err = os.MkdirAll(dir, 0o755)
	buf := make([]byte, rebuildFile)
	for i := 0; i < n && err == nil; i++ {
		err = os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), fileData(buf, i), 0o644)
		files = append(files, i)
	}
	unix.Sync()
	if err == nil {
		_, err = fitrim()
	}
	if err == nil {
		if err = unix.Statfs(mountPoint, &sfs); err != nil {
			err = os.NewSyscallError("statfs", err)
		}
		used = int64(sfs.Blocks-sfs.Bfree) * sfs.Bsize
	}
	if uerr := umount(); err == nil {
		err = uerr
	}
	if err == nil {
		err = r.drain(a)
	}
	return files, used, err
}

// fileData fills buf with file i's contents: every 4 KiB block starts with
// the file's number and the block's, so that a block read from the wrong
// place does not pass for the right one.
func fileData(buf []byte, i int) []byte {
	for k := range buf {
		buf[k] = byte(k*7 + i)
	}
	for b := 0; b+16 <= len(buf); b += 4096 {
		binary.LittleEndian.PutUint64(buf[b:], uint64(i))
		binary.LittleEndian.PutUint64(buf[b+8:], uint64(b/4096))
	}
	return buf
}

// verifyRebuilt fails member 0's mirror, so that what member 0 held can
// only be read from the device that replaced it, and checks the filesystem
// and every live file from the disks, not the page cache.
func (r *Runner) verifyRebuilt(a *array, g *rig, live []int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if a.sys.MD {
		if _, err := run(ctx, "mdadm", a.dev, "--fail", g.mirror()); err != nil {
			return err
		}
	} else if _, err := run(ctx, r.cfg.URaid, "fail", a.name, g.mirror()); err != nil {
		return err
	}
	dropCaches := func() error { return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0) }
	if err := dropCaches(); err != nil {
		return err
	}
	if out, err := run(ctx, "e2fsck", "-fn", a.dev); err != nil {
		return fmt.Errorf("after the rebuild, with member 0's mirror failed: %w\n%s", err, out)
	}
	if err := dropCaches(); err != nil {
		return err
	}
	if err := readBack(a.dev, live); err != nil {
		return fmt.Errorf("after the rebuild, with member 0's mirror failed: %w", err)
	}
	r.logf("g %s: e2fsck -fn clean and %d files read back intact from the new member and its peers", a.sys.Name, len(live))
	return nil
}

// readBack mounts dev and checks that every file of live reads back as
// fillAndTrim wrote it.
func readBack(dev string, live []int) error {
	if err := mount(dev, false); err != nil {
		return err
	}
	defer umount()
	want := make([]byte, rebuildFile)
	for _, i := range live {
		got, err := os.ReadFile(filepath.Join(mountPoint, "g", strconv.Itoa(i)))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, fileData(want, i)) {
			return fmt.Errorf("file %d differs from what was written", i)
		}
	}
	return nil
}
