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
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	uarray "uraid/array" // named apart from this package's own type array
	"uraid/daemon"
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

// reshapeRate is the rate, in bytes a second, both reshapes are held to:
// uraid's grow --max-rate, md's sync_speed_min and sync_speed_max. Unheld,
// uraid's reshape of a quick run's array (188 MiB, 55 MiB of it live) can
// end within a second or two, too soon for the reads measured during it
// to say much; at this rate it lasts about six seconds (its pace counts
// the array bytes its cursor passes, live or not), and md's, which took
// about ten seconds unheld under emulation, is held no more than that.
// md counts its own progress for its limits, which need not be the same
// bytes: the rate is the same in name, and each reshape's time is measured.
const reshapeRate = 32 << 20

// reshapeReadTime is how long the reads run on the array before its
// reshape, to compare those during it with.
func reshapeReadTime(quick bool) time.Duration {
	if quick {
		return 5 * time.Second
	}
	return 10 * time.Second
}

// reshapeReadJob is the fio job that reads beside a reshape and before it:
// 4 KiB random reads at QD1 over the files fillAndTrim wrote (each picked
// at random), so that every read hits data the reshape moves; with the
// percentiles of the total latency (latP99).
func reshapeReadJob(name string) job {
	return job{name, []string{"opendir=" + filepath.Join(mountPoint, "g"), "file_service_type=random", "readonly",
		"rw=randread", "bs=4k", "iodepth=1", "lat_percentiles=1"}}
}

// ReshapeSetting describes scenario (k)'s setup for a run's settings.
func ReshapeSetting(quick bool) string {
	return fmt.Sprintf("RAID10 near-2 over 4 dm-linear devices of %d MiB on brd RAM disks, grown to 6 by two more of the same, "+
		"online, the filesystem mounted, for both (md: mdadm --add, then mdadm --grow --raid-devices=6, the default data offset's room, "+
		"no backup file; uraid: grow --add x2 --max-rate %dM, then uraid wait, then on a kernel that does not grow the device online "+
		"stop and assemble); both held to %d MiB/s (md's sync_speed_min and sync_speed_max %d KiB/s); "+
		"every device discarded before each array, ext4 (mkfs -T default) written to %.0f%% in files of %d MiB, then fstrim; "+
		"fio 4 KiB random reads at QD1 over those files (io_uring, direct) for %v before the reshape and for the whole reshape; "+
		"bytes are the members' /sys/block stat counters summed over the six devices from the first command to the end of the "+
		"reshape, less what the array device counts of the user's reads (and writes, twice); md and uraid in turn in every repetition, order rotating",
		rebuildMemberMiB(quick), reshapeRate>>20, reshapeRate>>20, reshapeRate>>10, 100*rebuildLive, rebuildFile>>20, reshapeReadTime(quick))
}

// reshapeReport is uraid's account of an online reshape: what grow --add
// --json printed (daemon.AppendResult), the live bytes its region map held
// before it, and the counts of its job.
type reshapeReport struct {
	// Grow, Wait and Assemble are how long uraid's commands took, measured
	// by the bench: grow (the hand-over), wait (the bytes moving), and the
	// stop and assembly that give the device its new size on a kernel that
	// does not grow it online (0 where it grew).
	Grow, Wait, Assemble time.Duration `json:"-"`
	// LiveBytes is what the region map held live before the reshape:
	// regions not trimmed, by status.
	LiveBytes int64 `json:"-"`

	Reshape    bool   `json:"reshape"`
	OldMembers int    `json:"old_members"`
	NewMembers int    `json:"new_members"`
	OldSize    int64  `json:"old_size_bytes"`
	NewSize    int64  `json:"new_size_bytes"`
	Device     string `json:"device"`

	// The job's own counts, from the daemon's "reshaped" record
	// (parseReshapedLog): status drops sync.reshape once the job is done,
	// and these are its final figures.
	Steps        int   `json:"-"`
	ReadBytes    int64 `json:"-"`
	WriteBytes   int64 `json:"-"`
	DiscardBytes int64 `json:"-"`
}

// parseGrowOnline reads uraid grow --add --json's output of a running
// array and checks that it started a reshape from members to members+added.
func parseGrowOnline(out string, from, to int) (reshapeReport, error) {
	var rep reshapeReport
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&rep); err != nil {
		return rep, fmt.Errorf("uraid grow --json: %w (printed %q)", err, out)
	}
	switch {
	case !rep.Reshape:
		return rep, fmt.Errorf("uraid grow --json: no reshape started (printed %q): the array must be a running raid10", out)
	case rep.OldMembers != from || rep.NewMembers != to:
		return rep, fmt.Errorf("uraid grow --json: reshaping %d to %d members, want %d to %d", rep.OldMembers, rep.NewMembers, from, to)
	case rep.NewSize <= rep.OldSize:
		return rep, fmt.Errorf("uraid grow --json: the array is not to grow (%d to %d bytes)", rep.OldSize, rep.NewSize)
	case !strings.HasPrefix(rep.Device, "/dev/"):
		return rep, fmt.Errorf("uraid grow --json: device %q, want the device that serves the array", rep.Device)
	}
	return rep, nil
}

// parseReshapedLog finds the daemon's record of a reshape's end in its log
// (text, key=value: the default --log-format), the last one if several, and
// fills rep's counts from it.
func parseReshapedLog(log string, rep *reshapeReport) error {
	var rec string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, " msg=reshaped ") {
			rec = line
		}
	}
	if rec == "" {
		return errors.New("the daemon's log has no \"reshaped\" record: the reshape did not end, or the log is not text (--log-format)")
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(rec) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	var vals [4]int64
	for i, k := range []string{"steps", "read_bytes", "write_bytes", "discard_bytes"} {
		v, err := strconv.ParseInt(fields[k], 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("the daemon's \"reshaped\" record: %s=%q, want a count (%s)", k, fields[k], rec)
		}
		vals[i] = v
	}
	rep.Steps, rep.ReadBytes, rep.WriteBytes, rep.DiscardBytes = int(vals[0]), vals[1], vals[2], vals[3]
	return nil
}

// reshapeOnly is what the members counted over a span less what the
// array device itself counted over it (user): the user's reads and writes,
// which reached the members too. A 4 KiB read of a raid10 reads one copy;
// a write writes every copy.
func reshapeOnly(members, user blockStat) blockStat {
	d := members
	d.read -= user.read
	d.written -= reshapeCopies * user.written
	d.reads -= user.reads
	d.writes -= reshapeCopies * user.writes
	return d
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
// the members read and wrote for it by the kernel's count (moved is the two
// together), the filesystem's used bytes, and moved over the least a
// reshape can move, each live byte read once and written once per copy:
// counted on the filesystem's used bytes for every system (fs_least), and,
// for uraid (own not nil), on the bytes its region map held live (least),
// beside its own counts and the time of each of its commands. Figures that
// describe the data rather than the reshape's cost are "none": not
// compared, not drawn.
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
		figure{"wait_wall", "ms", "none", ms(own.Wait)},
		figure{"assemble_wall", "ms", "none", ms(own.Assemble)},
		figure{"live", "MiB", "none", mib(own.LiveBytes)},
		figure{"own_read", "MiB", "none", mib(own.ReadBytes)},
		figure{"own_written", "MiB", "none", mib(own.WriteBytes)},
		figure{"own_discarded", "MiB", "none", mib(own.DiscardBytes)},
	)
	if own.LiveBytes > 0 {
		fs = append(fs,
			figure{"over_live", "x", "none", float64(moved) / float64(own.LiveBytes)},
			figure{"over_least", "x", "none", float64(moved) / float64((1+reshapeCopies)*own.LiveBytes)},
		)
	}
	return fs
}

// readFigures are the figures of the reads beside a reshape or before it:
// their p99 total latency (latP99: md completes them within the
// submission), their rate, and how many there were (which says how much the
// p99 rests on: not compared).
func readFigures(rd fioSide) []figure {
	return []figure{
		{"read_p99", "us", "lower", rd.latP99()},
		{"read_iops", "iops", "higher", rd.IOPS},
		{"reads", "reads", "none", float64(rd.IOs)},
	}
}

// (k) Reshaping a RAID10 near-2 of 4 members to 6 under a 20%-full ext4,
// online and mounted for both: md by mdadm --grow --raid-devices, which
// moves every byte of the array; uraid by grow --add on the running array,
// which moves only what its region map holds live, then uraid wait. Both
// are held to reshapeRate. fio reads the files at QD1 for a fixed time
// before the reshape and for the whole of it: read p99 and IOPS during
// against before. Timed from the first command to the end of the reshape;
// the six devices' kernel counters, less the user's reads the array device
// counted, say what each read and wrote for the reshape, and uraid's
// daemon its own count. Then the device's new size (on 6.12 uraid's needs a
// stop and an assembly), resize2fs on the mounted filesystem, which must
// have grown, e2fsck -fn clean and every file read back as written, from
// the disks. md and uraid take turns on the same disks in every
// repetition, in an order that rotates.
func (r *Runner) reshape() error {
	for _, bin := range []string{"dmsetup", "e2fsck", "resize2fs", "fio"} {
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
// filesystem, reads it for a while, grows it by the other two while
// reading it, checks the result and records the figures of rep.
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
	mounted := false
	defer func() {
		if mounted {
			if uerr := umount(); uerr != nil && err == nil {
				err = uerr
			}
		}
		if serr := r.stop(a); serr != nil && err == nil {
			err = serr
		}
	}()
	if sys.MD {
		if err := mdSpeed(a.dev, reshapeRate>>10); err != nil {
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
	var own *reshapeReport
	if !sys.MD {
		st, err := r.status(a)
		if err != nil {
			return err
		}
		c := st.Regions
		if c == nil {
			return errors.New("uraid detail --json: no region map counts for a raid10")
		}
		own = &reshapeReport{LiveBytes: int64(c.Regions-c.Trimmed) * c.RegionBytes}
	}
	r.logf("k %s rep %d: %d files of %d MiB written, free space trimmed, the filesystem uses %.1f MiB of %.1f MiB; reading, then growing %d -> %d members",
		sys.Name, rep, len(live), rebuildFile>>20, float64(used)/(1<<20), float64(fsBefore)/(1<<20), reshapeFrom, len(g.paths))

	if err := mount(a.dev, false); err != nil {
		return err
	}
	mounted = true
	ctx, cancel := fioCtx(reshapeReadTime(r.cfg.Quick))
	// time_based: the files are read through more than once in that time.
	alone, err := fio(ctx, []string{"time_based", secs(reshapeReadTime(r.cfg.Quick))}, reshapeReadJob("before"))
	cancel()
	if err != nil {
		return err
	}

	// The reads beside the reshape start first, and the reshape once they
	// run (fio takes seconds to start under emulation): a few of them land
	// before it, which the figures do not separate out.
	devBefore, err := statOf(a.dev)
	if err != nil {
		return err
	}
	stopReads, finished := make(chan struct{}), make(chan struct{})
	var reads fioDone // set before finished is closed
	go func() {
		defer close(finished)
		reads.res, reads.err = fioUntil(stopReads, nil, reshapeReadJob("during"))
	}()
	stopped := false
	stopFio := func() {
		if !stopped {
			close(stopReads)
			stopped = true
		}
		<-finished
	}
	defer stopFio()
	if err := waitReads(a.dev, devBefore, finished); err != nil {
		if reads.err != nil {
			err = fmt.Errorf("%w: %w", err, reads.err)
		}
		return err
	}

	before, err := statsOf(g.paths)
	if err != nil {
		return err
	}
	devStart, err := statOf(a.dev)
	if err != nil {
		return err
	}
	start := time.Now()
	if sys.MD {
		err = mdGrow(a.dev, added)
	} else {
		err = r.uraidGrowOnline(a, old, added, own)
	}
	took := time.Since(start)
	if err != nil {
		return err
	}
	after, err := statsOf(g.paths)
	if err != nil {
		return err
	}
	devEnd, err := statOf(a.dev)
	if err != nil {
		return err
	}
	stopFio()
	if reads.err != nil {
		return fmt.Errorf("the reads during the reshape: %w", reads.err)
	}
	total, err := sumDelta(before, after)
	if err != nil {
		return err
	}
	user := devEnd.sub(devStart)
	d := reshapeOnly(total, user)
	if err := umount(); err != nil {
		return err
	}
	mounted = false
	if own != nil {
		if err := r.uraidNewSize(a, old, added, own); err != nil {
			return err
		}
	}

	ownLine := ""
	if own != nil {
		ownLine = fmt.Sprintf("; its own count: %.1f MiB live before, read %.1f MiB, wrote %.1f MiB, discarded %.1f MiB in %d steps; "+
			"grow %v, wait %v, stop and assemble %v",
			float64(own.LiveBytes)/(1<<20), float64(own.ReadBytes)/(1<<20), float64(own.WriteBytes)/(1<<20),
			float64(own.DiscardBytes)/(1<<20), own.Steps, own.Grow.Round(time.Millisecond), own.Wait.Round(time.Millisecond),
			own.Assemble.Round(time.Millisecond))
	}
	during := reads.res["during"].Read
	r.logf("k %s rep %d: reshape took %v; members read %.1f MiB, wrote %.1f MiB, discarded %.1f MiB for it "+
		"(the user's %.1f MiB read and %.1f MiB written taken out)%s",
		sys.Name, rep, took.Round(time.Millisecond), float64(d.read)/(1<<20), float64(d.written)/(1<<20), float64(d.discarded)/(1<<20),
		float64(user.read)/(1<<20), float64(user.written)/(1<<20), ownLine)
	r.logf("k %s rep %d: 4 KiB QD1 reads: before %.0f IOPS, p99 %.0f us (%d reads); during %.0f IOPS, p99 %.0f us (%d reads)",
		sys.Name, rep, alone["before"].Read.IOPS, alone["before"].Read.latP99(), alone["before"].Read.IOs,
		during.IOPS, during.latP99(), during.IOs)

	if err := r.verifyReshaped(a, fsBefore, live); err != nil {
		return err
	}
	res := Result{Scenario: "k-reshape", Case: "4to6", System: sys.Name}
	for _, f := range reshapeFigures(took, d, used, own) {
		res.Metric, res.Unit, res.Better = f.metric, f.unit, f.better
		r.add(res, f.v)
	}
	for i, rd := range []fioSide{alone["before"].Read, during} {
		res := Result{Scenario: "k-reshape", Case: []string{"reads-before", "reads-during"}[i], System: sys.Name}
		for _, f := range readFigures(rd) {
			res.Metric, res.Unit, res.Better = f.metric, f.unit, f.better
			r.add(res, f.v)
		}
	}
	return nil
}

// fioDone is how a fio run that fioUntil stops ended.
type fioDone struct {
	res map[string]fioJob
	err error
}

// reshapeReadsStarted is how many reads the array device must have
// completed before the reshape starts beside them: enough to show that fio
// is past its start and reading.
const reshapeReadsStarted = 50

// waitReads returns once the device dev has completed reshapeReadsStarted
// reads more than it had at from: fio's job runs. It fails if fio ends
// first (finished closed), or has not started reading after a minute.
func waitReads(dev string, from blockStat, finished <-chan struct{}) error {
	deadline := time.After(time.Minute)
	for {
		s, err := statOf(dev)
		if err != nil {
			return err
		}
		if s.reads-from.reads >= reshapeReadsStarted {
			return nil
		}
		select {
		case <-finished:
			return errors.New("the reads to run during the reshape ended before it started")
		case <-deadline:
			return fmt.Errorf("the reads to run during the reshape: %s completed %d reads in a minute, want %d",
				dev, s.reads-from.reads, reshapeReadsStarted)
		case <-time.After(rebuildPoll):
		}
	}
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

// uraidGrowOnline adds the devices added to the running uraid array a,
// whose members are old, by an online reshape held to reshapeRate, and
// returns once the reshape is over, with own filled in: what grow printed,
// the job's counts from the daemon's log, and the time of grow and wait.
func (r *Runner) uraidGrowOnline(a *array, old, added []string, own *reshapeReport) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The daemon's "reshaped" record of this array is looked for after
	// what its log held before the grow.
	logPath := daemon.LogPath(a.name)
	var logFrom int64
	if fi, err := os.Stat(logPath); err == nil {
		logFrom = fi.Size()
	}
	start := time.Now()
	args := []string{"grow", a.name, "--json", "--max-rate", fmt.Sprintf("%dM", reshapeRate>>20)}
	for _, d := range added {
		args = append(args, "--add", d)
	}
	out, err := run(ctx, r.cfg.URaid, args...)
	if err != nil {
		return err
	}
	grown := time.Now()
	rep, err := parseGrowOnline(out, len(old), len(old)+len(added))
	if err != nil {
		return err
	}
	// uraid wait returns at once if it comes before the new daemon's job
	// has begun; status shows the reshape from the hand-over on, until it
	// is done.
	c := daemon.NewClient(a.name)
	for {
		if _, err := run(ctx, r.cfg.URaid, "wait", a.name); err != nil {
			return err
		}
		var st uarray.Status
		if err := c.Status(ctx, &st); err != nil {
			return err
		}
		if st.Sync == nil || st.Sync.Action != uarray.SyncReshape {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("uraid wait %s: the reshape still runs after 10 minutes: %+v", a.name, st.Sync.Reshape)
		case <-time.After(rebuildPoll):
		}
	}
	own.Grow, own.Wait = grown.Sub(start), time.Since(grown)
	own.Reshape, own.OldMembers, own.NewMembers, own.OldSize, own.NewSize, own.Device =
		rep.Reshape, rep.OldMembers, rep.NewMembers, rep.OldSize, rep.NewSize, rep.Device
	b, err := os.ReadFile(logPath)
	if err != nil {
		return fmt.Errorf("the reshape's counts: %w", err)
	}
	if int64(len(b)) < logFrom {
		logFrom = 0 // a new log
	}
	if err := parseReshapedLog(string(b[logFrom:]), own); err != nil {
		return fmt.Errorf("%s: %w", logPath, err)
	}
	return nil
}

// uraidNewSize gives the device of a reshaped uraid array its new size
// where the kernel did not grow it online (before Linux 6.16): stop, then
// assemble, as docs/cli.md says. a.dev is the device afterwards; own.Assemble
// the time it took (0 where the device had grown).
func (r *Runner) uraidNewSize(a *array, old, added []string, own *reshapeReport) error {
	size, err := devSize(a.dev)
	if err != nil {
		return err
	}
	if size >= own.NewSize {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := run(ctx, r.cfg.URaid, "stop", a.name); err != nil {
		return err
	}
	out, err := run(ctx, r.cfg.URaid, append([]string{"assemble", a.name}, append(slices.Clone(old), added...)...)...)
	if err != nil {
		return err
	}
	own.Assemble = time.Since(start)
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/") {
		return fmt.Errorf("uraid assemble printed %q, want a device", dev)
	}
	a.dev = dev
	if size, err = devSize(dev); err != nil {
		return err
	}
	if size != own.NewSize {
		return fmt.Errorf("after the reshape, stop and assemble: %s is %d bytes, grow said %d", dev, size, own.NewSize)
	}
	return nil
}

// devSize is the size of the block device dev in bytes.
func devSize(dev string) (int64, error) {
	f, err := os.Open(dev)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", dev, os.NewSyscallError("ioctl BLKGETSIZE64", err))
	}
	return int64(n), nil
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
