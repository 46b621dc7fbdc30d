package robust

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"uraid/array"
	"uraid/internal/failpoint"
	"uraid/mapping"
	"uraid/raid"
	"uraid/robust/simdisk"
	"uraid/ublk"
)

// Config is one run of the harness.
type Config struct {
	Seed uint64
	// Ops bounds the run by read, write, discard and flush requests; Duration by wall time
	// (whichever comes first; zero: no bound of that kind).
	Ops      int
	Duration time.Duration

	Level   mapping.Level
	Layout  mapping.Layout
	Members int
	Chunk   int64
	// Size is the array's size; each disk holds a little more.
	Size  int64
	Depth int

	// Moods weighs the epochs' moods: storm, calm, healing, checkpoint (all zero: 2, 1, 2, 0). A scenario that
	// leaves a mood out spends its requests on the others' paths.
	Moods [4]int

	// Log, when set, hears what the run does, one line per step.
	Log func(string)
}

// Stats counts what a run did.
type Stats struct {
	Requests, Reads, Writes, Discards, Flushes int
	Sweeps                                     int // discards of whole regions, of Discards
	Epochs, PowerLosses, Kills, Stops          int
	Moods                                      [4]int // epochs of each mood: storm, calm, heal, checkpoint
	FailpointCrashes                           int
	Fails, Refused, Injected, Adds, Replaces   int
	Grows, CopiesChanges, Appends              int
	Reshapes                                   int // of a raid10 by a member, at clean stops (reshape.go)
	Checks, Verified, CopyReads                int
	// SyncWait is the time spent waiting for sync jobs to end (verify) or a rebuild to finish
	// (swap back): a third of a run, as a rebuild resumed after each restart copies again.
	SyncWait time.Duration
	Disk     simdisk.Stats
}

func (s Stats) String() string {
	return fmt.Sprintf("%d requests (%d reads, %d writes, %d discards (%d of whole regions), %d flushes), %d epochs (%d storms, %d calm, %d healing, %d checkpoint): %d power losses (%d at failpoints), %d kills, %d clean stops; "+
		"%d fails (%d refused), %d member errors injected, %d adds, %d replaces, %d grows, %d changes of copies, %d appends, %d reshapes, %d checks/repairs; %d verifications of every copy (%d copy reads); %v waiting for sync jobs",
		s.Requests, s.Reads, s.Writes, s.Discards, s.Sweeps, s.Flushes, s.Epochs, s.Moods[0], s.Moods[1], s.Moods[2], s.Moods[3], s.PowerLosses, s.FailpointCrashes, s.Kills, s.Stops,
		s.Fails, s.Refused, s.Injected, s.Adds, s.Replaces, s.Grows, s.CopiesChanges, s.Appends, s.Reshapes, s.Checks, s.Verified, s.CopyReads, s.SyncWait.Round(time.Millisecond))
}

// Failure is what a run found.
type Failure struct {
	Seed    uint64
	Request int // the request count when it was found
	What    string
	// Visualization is a porcupine page of the block's history, when the check found it.
	Visualization string
}

func (f *Failure) Error() string {
	s := fmt.Sprintf("seed %d, after %d requests: %s", f.Seed, f.Request, f.What)
	if f.Visualization != "" {
		s += "\nhistory of the block: " + f.Visualization
	}
	return s
}

const dataDisk = "m"

// linearRegion is the workload's region (its live and free halves, its sweeps) on an array
// without a region map (linear).
const linearRegion = 1 << 20

// world is a run in progress.
type world struct {
	cfg Config
	rng *rand.Rand
	fs  *simdisk.Disks
	// mapIdle is the region map's idle time: mostly far below the daemon's 5 s, so that an
	// epoch of a second or two sees regions cleaned and trimmed, and sync checkpoints written,
	// while a rebuild runs; now and then the daemon's own.
	mapIdle time.Duration

	disks    []string      // every disk's name
	blank    []string      // disks never used by the array
	record   []string      // paths in service, as the daemon records them
	recordMu sync.Mutex    // record is written from the membership hook too
	live     *array.Array  // the array whose membership the record follows, under recordMu
	dataOff  int64         // every member's data offset
	dataEnd  int64         // and where its data area ends
	a        *array.Array  // the array of this epoch
	h        *ublk.Harness // its queue
	hmu      sync.Mutex    // guards hist and the crash fields
	hist     *history
	crashed  bool   // the disks were cut this epoch
	crashAt  int64  // when
	epochGen uint64 // the disks' generation as the epoch began
	lastID   uint64
	stats    Stats
	failure  *Failure
	hot      []int64 // blocks the workload comes back to, for overlaps
	// live and free split the regions in two halves, as a filesystem's used and free space: the
	// hot blocks and most writes are in live ones, most sweeps in free ones.
	liveRegions, free []int
	fstrim            []int // free regions the epoch's fstrim has yet to discard
	// flushless: the epoch's workload sends no flush (FUA writes still), as a system whose
	// filesystem is between commits: what a sync job copied, or the map counts clean, is durable
	// only if the array made it so, which a flush from the workload would otherwise hide.
	flushless bool
	// readOnly: after its sweep, the epoch's workload only reads, as a system that reads while
	// its array rebuilds. The regions it wrote before go clean, and the map's lazy writes then
	// carry a rebuild's checkpoint with nothing else to flush the members first: a checkpoint
	// ahead of what its rebuild made durable is seen only so.
	readOnly bool
	// quiet: the workload sends nothing new while it is set, as a system between bursts, so that
	// a sync job runs at its full rate (it keeps to its floor while requests come).
	quiet atomic.Bool
	// unaimed: a rebuild's steps are not held for requests aimed at their span, so that it
	// moves on while the epoch serves (a checkpoint epoch's reads would seldom come to free it).
	unaimed bool
	// blocks is the array's size in Block units, which a grow changes while the workload runs.
	blocks   atomic.Int64
	inflight int
	// mapWrites counts the region map's flushes begun (FailpointMapFlush), for a cut that waits
	// for one (fpCrash.afterMapWrite).
	mapWrites atomic.Int64
	tags      []inflight
	// abandoned: requests hang; the run ends without closing the queue or the array.
	abandoned bool

	// admin's goroutine is the only one that changes membership. It arms member errors and
	// power losses at disk steps on the disks, and power losses at the array's failpoints here.
	fpArm atomic.Pointer[fpCrash]
	// faultsArmed counts the member errors armed on the disks, less those that never struck: the
	// disks count the ones that did (Stats.Failed). Admin's.
	faultsArmed int64
	faultDisk   string // the disk of the last one, until the array took it out
	start       time.Time
	// requests is stats.Requests for the other goroutines (logs, findings); the counts of
	// crashes in stats are under hmu, as they are made on any goroutine.
	requests  atomic.Int64
	cutReaped atomic.Int64 // requests sent while cutting, finished
	// cutting says a power loss waits at a failpoint for requests to finish: meanwhile the
	// workload makes its writes durable, as only durable writes must survive the cut.
	cutting atomic.Bool
	// aim is the span a healing step held at a failpoint is about to work on (nil: none): while
	// it is set, most requests go there, into the window between the step's decision and its
	// lock, where races with the workload live.
	aim atomic.Pointer[aimAt]
	// serving says the workload runs: a step is held for aimed requests only then.
	serving atomic.Bool
	// regionBytes is the region map's region: a sweep (fstrim) discards whole regions, the only
	// discards that make a region trimmed.
	regionBytes int64
}

// aimAt is a span the workload aims at while a step is held: the step goes on once left requests
// sent there have finished.
type aimAt struct {
	failpoint.Span
	left atomic.Int32
	done chan struct{}
}

// ended counts one request sent into the span that finished.
func (a *aimAt) ended() {
	if a.left.Add(-1) == 0 {
		close(a.done)
	}
}

// fpCrash cuts the power at the n-th hit of a failpoint, once requests more have finished (while
// the workload runs) or after delay (while it does not).
type fpCrash struct {
	name     string
	n        atomic.Int32
	delay    time.Duration
	requests int64
	fired    atomic.Bool
	// afterMapWrite: before the cut, hold the step until the region map has been written once
	// more, as a rebuild slower than the map's lazy work would be: the checkpoint just moved is
	// then on disk, and only a copy made durable before it moved survives the cut.
	afterMapWrite bool
}

// Run runs the harness with cfg in dir (a directory for the FUSE mount) and returns what it
// found (nil: nothing) and what it did.
func Run(cfg Config, dir string) (*Failure, Stats, error) {
	if cfg.Members == 0 {
		cfg.Level, cfg.Layout, cfg.Members, cfg.Chunk = mapping.RAID10, mapping.Near2, 4, 64<<10
	}
	if cfg.Size == 0 {
		cfg.Size = 12 << 20
	}
	if cfg.Depth == 0 {
		cfg.Depth = 16
	}
	w := &world{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 1)), hist: newHistory(), start: time.Now()}
	fs, err := simdisk.Start(dir, cfg.Seed, func(c simdisk.Cut) { w.noteDiskCut(c.Gen, c.Why) })
	if err != nil {
		return nil, Stats{}, err
	}
	defer fs.Close()
	w.fs = fs
	old := failpoint.Set(w.failpoint)
	defer failpoint.Set(old)
	err = w.run()
	w.stats.Disk = fs.Stats()
	if err != nil && w.failure == nil {
		return nil, w.stats, err
	}
	return w.failure, w.stats, nil
}

// blockIn returns a random block of a random region of regions.
func (w *world) blockIn(regions []int) int64 {
	rb := w.regionBytes / Block
	r := int64(regions[w.rng.IntN(len(regions))])
	return min(w.blocks.Load()-1, r*rb+w.rng.Int64N(rb))
}

// The line goes to the array's log too (slog.Default(), which the array logs to unless told
// otherwise), so that the array's messages read in the order of the harness's steps.
func (w *world) logf(format string, args ...any) {
	line := fmt.Sprintf("[%d @%d] ", w.requests.Load(), w.hist.seen.Load()) + fmt.Sprintf(format, args...)
	slog.Info("robust: " + line)
	if w.cfg.Log != nil {
		w.cfg.Log(line)
	}
}

// fail records what the run found; the first finding ends the run.
func (w *world) fail(format string, args ...any) {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	if w.failure == nil {
		w.failure = &Failure{Seed: w.cfg.Seed, Request: int(w.requests.Load()), What: fmt.Sprintf(format, args...)}
		w.logf("FOUND: %s", w.failure.What)
	}
}

func (w *world) failed() bool {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	return w.failure != nil
}

func (w *world) done() bool {
	return w.failed() || (w.cfg.Ops > 0 && w.stats.Requests >= w.cfg.Ops) ||
		(w.cfg.Duration > 0 && time.Since(w.start) >= w.cfg.Duration)
}

func (w *world) path(name string) string { return w.fs.Path(name) }

func (w *world) name(path string) string { return filepath.Base(path) }

func (w *world) run() error {
	// The superblock, the map and the data offset's rounding, and room for grows (growRoom).
	diskSize := w.cfg.Size + 4<<20 + growRoom
	var members []string
	for i := range w.cfg.Members {
		n := fmt.Sprintf("%s%d", dataDisk, i)
		w.fs.Add(n, diskSize, byte(0xd0+i))
		w.disks = append(w.disks, n)
		members = append(members, w.path(n))
	}
	for i := range 4 {
		n := fmt.Sprintf("b%d", i)
		w.fs.Add(n, diskSize, byte(0xb0+i))
		w.disks = append(w.disks, n)
		w.blank = append(w.blank, n)
	}
	w.mapIdle = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 0}[w.rng.IntN(4)]
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "r", Level: w.cfg.Level, Layout: w.cfg.Layout, Chunk: w.cfg.Chunk,
		Size: w.cfg.Size, Members: members})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	a, err := array.NewArray(ms, sbs, w.options())
	if err != nil {
		return fmt.Errorf("new array: %w", err)
	}
	w.dataOff = int64(a.Superblock().DataOffset)
	w.blocks.Store(a.Map().Size() / Block)
	w.regionBytes = linearRegion // the workload's regions, where the array has no map
	if rc := a.Status("", 0).Regions; rc != nil {
		w.regionBytes = rc.RegionBytes
	}
	// The hot blocks lie in half of the regions, as a filesystem's busy metadata and files do:
	// the others are written seldom, so a sweep leaves them trimmed for a while, and the healing
	// paths meet trimmed regions as they would on a real array.
	regionBlocks := w.regionBytes / Block
	regions := w.rng.Perm(int((w.blocks.Load() + regionBlocks - 1) / regionBlocks))
	w.liveRegions, w.free = regions[:max(1, len(regions)/2)], regions[len(regions)/2:]
	for range 48 {
		w.hot = append(w.hot, w.blockIn(w.liveRegions))
	}
	if err := w.serve(a, false); err != nil {
		return err
	}
	for !w.done() {
		w.stats.Epochs++
		end := w.epoch()
		if w.failed() {
			break
		}
		if err := w.restart(end); err != nil {
			return err
		}
		// One time in four: waiting here for the sync jobs runs them with no workload beside
		// them, and the healing paths' races with requests are what the harness is for (never
		// for a reshape: it runs beside the workload, the point of an online one). The
		// verification at the end of the next epoch looks at the copies too.
		if !w.failed() && w.rng.IntN(4) == 0 && !w.reshaping() {
			w.verify()
		}
	}
	if w.abandoned {
		return nil
	}
	w.h.Close()
	if !w.crashedNow() {
		_ = w.a.MarkClean()
	}
	w.a.Close()
	if w.failure == nil {
		w.checkHistory()
	}
	return nil
}

func (w *world) options() array.Options {
	return array.Options{Queues: 1, Depth: w.cfg.Depth, Degraded: true, MapIdle: w.mapIdle}
}

// serve starts serving a (assembled or new): the harness queue, the record, MarkDirty.
func (w *world) serve(a *array.Array, unclean bool) error {
	if unclean {
		a.SetUnclean(true)
	}
	gen := w.fs.Gen() // the epoch begins: the disks are not cut in it yet
	w.hmu.Lock()
	w.crashed, w.epochGen = false, gen
	w.hmu.Unlock()
	w.recordMu.Lock()
	w.live = a
	w.recordMu.Unlock()
	// An epoch serves the size the array has now: one a grow before a cut committed, or not.
	w.blocks.Store(a.Map().Size() / Block)
	w.dataEnd = w.dataOff + int64(a.Superblock().DataSize)
	w.a = a
	st := a.Status("", 0)
	regions := "none"
	if st.Regions != nil {
		regions = fmt.Sprintf("%+v", *st.Regions)
	}
	w.logf("epoch %d serves %v, %d bytes; regions %s; map idle %v", w.stats.Epochs, st.InService(), a.Map().Size(), regions, w.mapIdle)
	a.OnMembershipChange(func() { w.recordMembers(a) })
	w.recordMembers(a)
	if err := a.MarkDirty(); err != nil {
		// An array that assembles but cannot start is a finding (a superblock it cannot write
		// back, a map it cannot load), not the harness's failure; the run ends where it is.
		w.fail("the array assembled but could not start: mark dirty: %v", err)
		w.abandoned = true
		return nil
	}
	h, err := ublk.NewHarness(a, w.cfg.Depth, 64<<10)
	if err != nil {
		return err
	}
	w.h = h
	return nil
}

// recordMembers keeps the devices in service of a, the array of this epoch, as the daemon's
// record does. An earlier epoch's array may still call it as it closes: it is not heard.
//
// The status is read under recordMu, as the daemon reads it under its own lock: two changes
// heard at once must not write the older view last. The crash is asked after the status is read:
// reading it may wait on a membership change that the cut fails, and what that failure leaves
// is a view no daemon lives to record.
func (w *world) recordMembers(a *array.Array) {
	w.recordMu.Lock()
	defer w.recordMu.Unlock()
	if a != w.live {
		return // an earlier epoch's array, closing
	}
	in := a.Status("", 0).InService() // as the daemon records them
	if w.crashedNow() {
		return // the daemon's successor goes by the record as it was
	}
	w.record = in
}

// crashedNow says whether the disks were cut this epoch, by the harness or by a rule on the
// disks (which the harness may not have heard of yet: it asks them).
func (w *world) crashedNow() bool {
	w.hmu.Lock()
	crashed, gen := w.crashed, w.epochGen
	w.hmu.Unlock()
	if crashed {
		return true
	}
	if w.fs.Gen() != gen {
		w.noteDiskCut(gen+1, "by a rule on the disks")
		return true
	}
	return false
}

// noteDiskCut puts in the history a power loss a rule on the disks made (generation gen), once:
// from the disks' report, or from the first look at their generation after it. The disks cut
// first and tell after, so the history has the crash a little late; what ran between saw only
// dead files and failed.
func (w *world) noteDiskCut(gen uint64, why string) {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	if w.crashed || gen <= w.epochGen {
		return // known, or an earlier epoch's
	}
	w.crashed = true
	w.crashAt = w.hist.now()
	w.hist.addGlobal(w.cfg.Depth+1, blockIn{kind: kPowerLoss, note: why}, w.crashAt, w.crashAt)
	w.stats.PowerLosses++
	w.stats.FailpointCrashes++
	w.logf("power loss (%s)", why)
}

// How an epoch ends.
type ending int

const (
	endPowerLoss ending = iota
	endKill
	endStop
)

var endingNames = [...]string{"power loss", "kill", "clean stop"}

// cut cuts the disks: a power loss or a kill, now. Any goroutine; once per epoch.
func (w *world) cut(e ending, why string) { w.cutAt(e, why, false) }

// cutAt is cut, counted as a crash at a failpoint when atFailpoint.
func (w *world) cutAt(e ending, why string, atFailpoint bool) {
	w.hmu.Lock()
	if w.crashed {
		w.hmu.Unlock()
		return
	}
	// Under hmu, so that no request's end is recorded between the cut and its entry in the
	// history; and only if the disks are still of this epoch: a rule may have cut the power an
	// instant ago, and a kill recorded over it would promise that the lost caches survived.
	gen, ok := w.fs.CutIf(w.epochGen, e == endKill)
	if !ok {
		w.hmu.Unlock()
		w.noteDiskCut(gen, "by a rule on the disks")
		return
	}
	w.crashed = true
	w.crashAt = w.hist.now()
	if atFailpoint {
		w.stats.FailpointCrashes++
	}
	kind := kPowerLoss
	if e == endKill {
		kind = kKill
	}
	w.hist.addGlobal(w.cfg.Depth+1, blockIn{kind: kind, note: why}, w.crashAt, w.crashAt)
	if e == endKill {
		w.stats.Kills++
	} else {
		w.stats.PowerLosses++
	}
	w.hmu.Unlock()
	w.logf("%s (%s)", endingNames[e], why)
}

// epoch serves a random workload while the admin goroutine changes the array, until the disks
// are cut or the epoch's share of requests is done; it returns how the epoch ends.
func (w *world) epoch() ending {
	n := 200 + w.rng.IntN(1500)
	stop := make(chan struct{})
	adminDone := make(chan struct{})
	arng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(w.stats.Epochs)<<8|2))
	m := w.mood()
	w.flushless = m != moodStorm && w.rng.IntN(2) == 0
	w.readOnly = w.flushless && m == moodHeal && w.rng.IntN(2) == 0
	w.unaimed = m == moodCheckpoint
	if m == moodCheckpoint {
		w.flushless, w.readOnly = true, true
	}
	w.stats.Moods[m]++
	go func() {
		defer close(adminDone)
		w.admin(arng, stop, m)
	}()
	w.io(n, m == moodHeal)
	close(stop)
	// The requests in flight end before the operator's last step is waited for, as a daemon's
	// queue never stops reaping: that step may wait for them (a check holding a region until its
	// writes end, which a spare's rebuild stops, while the operator's fail waits for that).
	w.drain()
	<-adminDone
	w.fpArm.Store(nil)
	w.fs.Disarm()
	w.faultsArmed, w.faultDisk = w.fs.Stats().Failed, "" // errors that did not strike went with their rules
	if w.crashedNow() {
		w.drain()
		return endPowerLoss // the kind is in the history; restart treats both alike
	}
	e := ending(w.rng.IntN(3))
	if w.flushless && w.rng.IntN(2) == 0 {
		e = endPowerLoss
	}
	if m == moodCheckpoint {
		e = endStop // the next one begins with every region clean
	}
	if e != endStop && w.reshapeable() && w.rng.IntN(2) == 0 {
		e = endStop // a hand-over that may start a reshape, which clean stops of a whole array are rare for
	}
	w.drain()
	if !w.failed() && !w.abandoned {
		// Before the ending, too: a copy a healing path got wrong is seen while the array that
		// got it wrong still runs, before a resync after the crash copies over it.
		w.verify()
	}
	if w.flushless && e == endPowerLoss && w.mapIdle > 0 && !w.failed() && !w.abandoned {
		// Idle a while before the power fails, as a system does: long enough for the map's lazy
		// work to clean the regions last written, whose writes no flush has made durable.
		w.logf("idle %v before the power loss", w.mapIdle*3/2)
		time.Sleep(w.mapIdle * 3 / 2)
	}
	switch e {
	case endStop:
		w.stats.Stops++
		w.logf("clean stop")
	default:
		w.cut(e, "between requests")
	}
	return e
}

// mood draws an epoch's mood by the run's weights.
func (w *world) mood() mood {
	weights := w.cfg.Moods
	if weights == [4]int{} {
		weights = defaultMoods
	}
	n := w.rng.IntN(weights[0] + weights[1] + weights[2] + weights[3])
	for m, wt := range weights {
		if n < wt {
			return mood(m)
		}
		n -= wt
	}
	panic("unreachable")
}

// defaultMoods: storms and healing twice as often as calm, whose requests find less.
var defaultMoods = [4]int{2, 1, 2, 0}

// restart closes the epoch's array and assembles the members again, as the daemon would.
func (w *world) restart(e ending) error {
	w.h.Close()
	if e == endStop {
		if err := w.a.MarkClean(); err != nil {
			w.logf("mark clean: %v", err)
		}
		w.changeCopies()
		w.appendMember()
	}
	w.a.Close()
	w.fs.Resume() // the successor starts: only now may it open the disks
	w.recordMu.Lock()
	paths := slices.Clone(w.record)
	w.recordMu.Unlock()
	if e == endStop {
		paths = w.reshape(paths)
	}
	if w.rng.IntN(4) == 0 && w.checkAssembleRefusesWrongDisk(paths) {
		return nil
	}
	how := "the record"
	if w.rng.IntN(3) == 0 {
		// As boot assembly does: every device that carries the array's superblock, the ones it
		// failed, removed or replaced among them; assemble must tell which are current.
		var err error
		if paths, err = w.scan(); err != nil {
			w.fail("scan after %s: %v", endingNames[e], err)
			return nil
		}
		how = "a scan of every disk"
	}
	a, err := array.Assemble("r", paths, w.options())
	if err != nil {
		w.fail("assemble after %s of %v (from %s): %v; superblocks: %s", endingNames[e], paths, how, err, describeSuperblocks(paths))
		return nil
	}
	w.logf("assembled from %s", how)
	return w.serve(a, e != endStop)
}

// scan returns every disk of the run that carries the array's superblock.
func (w *world) scan() ([]string, error) {
	all := make([]string, len(w.disks))
	for i, d := range w.disks {
		all[i] = w.path(d)
	}
	res := raid.Scan(all)
	for p, err := range res.Unreadable {
		return nil, fmt.Errorf("%s: %w", w.name(p), err)
	}
	var paths []string
	for _, f := range res.Arrays {
		if f.Name != "r" {
			return nil, fmt.Errorf("a disk of array %q", f.Name)
		}
		for _, m := range f.Members {
			paths = append(paths, m.Path)
		}
	}
	return paths, nil
}

// checkAssembleRefusesWrongDisk hands assemble, in place of one member, a disk too small for the
// array (an operator's slip): it must refuse it and write nothing. It reports whether it found
// a failure.
func (w *world) checkAssembleRefusesWrongDisk(paths []string) bool {
	if len(paths) == 0 {
		return false
	}
	k := w.rng.IntN(len(paths))
	src := w.name(paths[k])
	small := fmt.Sprintf("small%d", w.stats.Epochs)
	w.fs.Add(small, w.dataEnd-1<<20, 0)
	head := make([]byte, w.dataOff)
	w.fs.ReadAt(src, head, 0)
	w.fs.WriteAt(small, head, 0) // its superblock and map, and too few bytes after them
	before := w.fs.Snapshot(small)
	wrong := slices.Clone(paths)
	wrong[k] = w.path(small)
	a, err := array.Assemble("r", wrong, w.options())
	if err == nil {
		used := false
		st := a.Status("", 0)
		for _, m := range st.Members {
			used = used || m.Path == w.path(small) && inService(m) || m.Replacement == w.path(small)
		}
		used = used || slices.Contains(st.Spares, w.path(small))
		a.Close()
		if used {
			w.fail("assemble took %s, %d bytes short of the array's data area, in place of %s (data offset %d size %d; %+v)", small, 1<<20, src,
				a.Superblock().DataOffset, a.Superblock().DataSize, st.Members)
			return true
		}
		return false // the member it stands for was stale: assemble leaves it out anyway
	}
	if string(before) != string(w.fs.Snapshot(small)) {
		w.fail("a refused assemble wrote to %s", small)
		return true
	}
	w.logf("assemble refused a disk too small: %v", firstLine(err))
	return false
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// diskSteps are the failpoints at the member I/O level: a power loss just before the n-th
// operation of the step, decided by the disks.
func (w *world) diskStep(name string) (simdisk.Match, bool) {
	switch name {
	case "disk-flush":
		return simdisk.Match{Kind: simdisk.Flush}, true
	case "superblock-write":
		return simdisk.Match{Kind: simdisk.Write, To: 8192}, true
	case "map-write":
		return simdisk.Match{Kind: simdisk.Write, From: 8192, To: w.dataOff}, true
	case "data-write":
		return simdisk.Match{Kind: simdisk.Write, From: w.dataOff}, true
	}
	return simdisk.Match{}, false
}

// failpoint is the array's failpoint hook: a crash armed for this one, and otherwise now and then
// a short pause, so that I/O gets into the windows between a step and the next.
//
// A step with a span (a rebuild's or resync's next region) is held three times in four for up to a
// few milliseconds while the workload aims its requests at the span: a write, read or discard
// that lands between what the step decided and the lock it takes next.
func (w *world) failpoint(name string, at failpoint.Span) {
	if name == array.FailpointMapFlush {
		w.mapWrites.Add(1)
	}
	if fp := w.fpArm.Load(); fp != nil && fp.name == name && !fp.fired.Load() && fp.n.Add(-1) == 0 && fp.fired.CompareAndSwap(false, true) {
		if fp.afterMapWrite {
			w.awaitMapWrite()
		}
		if w.serving.Load() {
			// Counted rather than timed, as the aimed requests are; bounded, as a request may wait
			// for what the step holds. What a request finishing here was told must hold after
			// the cut: an acknowledgement the step's record does not yet back is what to find.
			w.cutting.Store(true)
			from, limit := w.cutReaped.Load(), time.Now().Add(200*time.Millisecond)
			for w.cutReaped.Load() < from+fp.requests && time.Now().Before(limit) {
				time.Sleep(50 * time.Microsecond)
			}
			w.cutting.Store(false)
			w.logf("%d of %d requests finished at failpoint %s", w.cutReaped.Load()-from, fp.requests, name)
		} else {
			time.Sleep(fp.delay)
		}
		w.cutAt(endPowerLoss, "at failpoint "+name, true)
		return
	}
	if at.Len >= Block && w.serving.Load() && !w.unaimed && rand.IntN(4) != 0 {
		// Held until a few requests sent there have finished, counted rather than timed: on a
		// slow machine a fixed pause lets none through. Bounded: the workload may be between
		// epochs, or a request may wait for what the step holds.
		a := &aimAt{Span: at, done: make(chan struct{})}
		a.left.Store(int32(1 + rand.IntN(3)))
		w.aim.Store(a)
		select {
		case <-a.done:
		case <-time.After(200 * time.Millisecond):
		}
		w.aim.Store(nil)
		return
	}
	if rand.IntN(4) == 0 {
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
	}
}

// awaitMapWrite holds the caller until the region map's flusher has begun a flush and had a
// moment to write it, bounded by twice the map's idle time (its lazy work runs every half of it).
// A flush that is still being written at the cut only makes the cut weaker, never wrong: the
// harness's checks hold whatever reached the disk.
func (w *world) awaitMapWrite() {
	from, limit := w.mapWrites.Load(), time.Now().Add(2*w.mapIdle+50*time.Millisecond)
	for w.mapWrites.Load() == from && time.Now().Before(limit) {
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(2 * time.Millisecond)
	w.logf("held for a region map write (%d begun)", w.mapWrites.Load()-from)
}

var failpoints = []string{
	array.FailpointRebuildRegion, array.FailpointRebuildCursor, array.FailpointResyncRegion,
	array.FailpointFailed, array.FailpointMapFlush,
	array.FailpointGrowTrim, array.FailpointGrowMap, array.FailpointGrowCommit,
	"superblock-write", "map-write", "data-write", "disk-flush",
}

// describeSuperblocks says what each device's superblock claims, for a failure's triage.
func describeSuperblocks(paths []string) string {
	var out []string
	for _, p := range paths {
		d := filepath.Base(p) + " "
		f, err := os.Open(p)
		if err != nil {
			out = append(out, d+err.Error())
			continue
		}
		sb, err := raid.ReadSuperblock(f)
		f.Close()
		if err != nil {
			out = append(out, d+err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("%s index %d role %d events %d", d, sb.Index, sb.Role, sb.Events))
	}
	return strings.Join(out, "; ")
}
