package array

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"uraid/discard"
	"uraid/internal/clock"
	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
)

// The sync worker brings and keeps the copies of a mirrored array in step, one region at a time,
// in the background, while the array serves I/O:
//
//   - resync, after an unclean stop (a crash, a killed daemon) or a write that failed on a copy:
//     only the regions the region map says need it, from the first working copy of each piece (the
//     copy reads of such a region are served from meanwhile) to the others;
//   - check: every region that is not trimmed, every copy read and compared with the first,
//     bytes discarded since the array started and not written since left out (their contents are
//     whatever each drive returns for a trimmed block);
//   - repair: a check that rewrites what differs from the first copy.
//
// A region being worked on is locked against writes: the worker waits for the writes in flight
// there to end, and writes that arrive meanwhile park until it is done, so a copy never goes
// stale under the worker. Its member I/O is admitted by the discard engine like any other, so it
// never reads bytes with a TRIM pending nor writes under a TRIM in flight. It yields to user I/O
// (SyncOptions), and its progress is checkpointed in the map's cursor: a resync interrupted by a
// crash or a stop resumes where it stopped.

// Sync actions, as status reports them.
const (
	SyncIdle = "idle"
	// SyncReshape is the reshape's job (reshape_online.go), in SyncStatus.Action only: it is
	// not started by StartSync.
	SyncReshape = "reshape"
	SyncResync  = "resync"
	SyncCheck   = "check"
	SyncRepair  = "repair"
)

// Rates of the sync worker in bytes per second.
const (
	// DefaultSyncFloor is the rate a job keeps to while the array serves I/O, so that it always
	// progresses and takes little from the user: md's default speed_limit_min.
	DefaultSyncFloor = 1 << 20
	// syncStep is the most the worker reads per member I/O.
	syncStep = 256 << 10
	// maxMismatchRegions bounds the mismatching regions a check lists (it counts them all).
	maxMismatchRegions = 64
	// userIdle is how long the array must see no user I/O before a job runs faster than its floor.
	userIdle = 200 * time.Millisecond
)

// ErrSyncBusy means a job is already running on the array.
var ErrSyncBusy = errors.New("a sync job is running")

// SyncOptions shapes a job.
type SyncOptions struct {
	// MaxRate caps the job's rate while the array is otherwise idle (0: no cap).
	MaxRate int64
	// Floor is the rate it keeps to while the array serves I/O (0: DefaultSyncFloor), and
	// never goes below.
	Floor int64
}

// SyncStatus is the sync worker's state, as status and detail show it.
type SyncStatus struct {
	Action string `json:"action"` // idle, resync, check, repair or rebuild
	// Member is the slot a rebuild fills.
	Member        *int  `json:"member,omitempty"`
	DoneBytes     int64 `json:"done_bytes"`
	TotalBytes    int64 `json:"total_bytes"`
	RateBytesPerS int64 `json:"rate_bytes_per_s"`
	MismatchBytes int64 `json:"mismatch_bytes"`
	// RepairedBytes counts the bytes a repair rewrote.
	RepairedBytes int64 `json:"repaired_bytes"`
	// MismatchRegions lists the first regions a check found copies differing in.
	MismatchRegions []int `json:"mismatch_regions,omitempty"`
	// Waiting says why a resync that is needed does not run ("" when none is needed or it runs).
	Waiting string `json:"waiting,omitempty"`
	// Last is the outcome of the last job that ended.
	Last *SyncResult `json:"last,omitempty"`
	// Reshape is the reshape under way (Action reshape): DoneBytes is its cursor, TotalBytes
	// its end.
	Reshape *ReshapeJob `json:"reshape,omitempty"`
}

// SyncResult is how a job ended.
type SyncResult struct {
	Action          string    `json:"action"`
	Ended           time.Time `json:"ended"`
	Seconds         float64   `json:"seconds"`
	DoneBytes       int64     `json:"done_bytes"`
	MismatchBytes   int64     `json:"mismatch_bytes"`
	RepairedBytes   int64     `json:"repaired_bytes"`
	MismatchRegions []int     `json:"mismatch_regions,omitempty"`
	Cancelled       bool      `json:"cancelled"`
	Error           string    `json:"error,omitempty"`
}

// syncer runs an array's sync jobs, one at a time.
type syncer struct {
	a     *Array
	g     *regions
	clock clock.Clock

	mu sync.Mutex // guards cur, last, wait, rebuildOpts and the current job's regions list
	// rebuildOpts paces rebuilds (Array.SetRebuildOptions).
	rebuildOpts SyncOptions

	cur  *syncJob
	last *SyncResult
	wait string
	wg   sync.WaitGroup
}

// syncJob is one resync, check or repair.
type syncJob struct {
	action  string
	target  rebuildTarget // SyncRebuild
	opts    SyncOptions
	cancel  chan struct{}
	stopped sync.Once // closes cancel
	start   time.Time
	regions []int // mismatching regions, guarded by syncer.mu

	total                    int64
	done, mismatch, repaired atomic.Int64

	// Owned by the job's goroutine.
	pieces      []mapping.Piece
	bufs        [][]byte
	rd          discard.Read
	wr          discard.Write
	resumed     chanWaiter
	lastUser    uint64    // user I/O count at the last look
	lastBusy    time.Time // when user I/O was last seen
	windowStart time.Time
	windowBytes int64
	reported    int64 // tenths of total reported in progress events
}

// chanWaiter is a discard.Waiter for a goroutine that may block: Resume leaves a token.
type chanWaiter chan struct{}

func (c chanWaiter) Resume() {
	select {
	case c <- struct{}{}:
	default:
	}
}

func newSyncer(a *Array, g *regions) *syncer {
	c := a.opts.Clock
	if c == nil {
		c = clock.Real{}
	}
	return &syncer{a: a, g: g, clock: c}
}

// StartSync starts a check (repair: and repair) with opts. It refuses while another job runs, and
// a check while a resync is needed: the copies of those regions are known to differ until it
// has run.
func (a *Array) StartSync(action string, opts SyncOptions) error {
	if a.syncer == nil {
		return fmt.Errorf("array %s: %w: level %s has no copies to compare; check and repair are for raid1 and raid10", a.Name, ErrNoCopies, a.sb.Level)
	}
	switch action {
	case SyncCheck, SyncRepair:
	default:
		return fmt.Errorf("array %s: sync action %q: use check or repair", a.Name, action)
	}
	if a.reshaping() != nil {
		return a.syncer.start(action, opts, 0) // refused, saying why
	}
	if a.regions.needResync() {
		s := a.syncer.status()
		why := "it runs by itself once every member is back"
		switch {
		case s.Action == SyncResync:
			why = fmt.Sprintf("it runs now; wait for it (uraid wait %s) and check then", a.Name)
		case s.Waiting != "":
			why = "it waits: " + s.Waiting
		}
		return fmt.Errorf("array %s: %w: a resync is needed first (its regions' copies are known to differ); %s", a.Name, ErrResyncNeeded, why)
	}
	return a.syncer.start(action, opts, 0)
}

// ErrNoCopies means the array's level keeps one copy of each byte: there is nothing to compare.
var ErrNoCopies = errors.New("no copies")

// ErrResyncNeeded means a check was asked for while some regions' copies are known to differ.
var ErrResyncNeeded = fmt.Errorf("%w (resync)", ErrSyncBusy)

// CancelCheck stops a running check or repair and waits until it has; it returns the action
// stopped, "" when none ran. A resync or a rebuild is refused: the copies differ until it ends,
// and a cancelled one would only start again at the next start of the array.
func (a *Array) CancelCheck() (string, error) {
	if a.syncer == nil {
		return "", fmt.Errorf("array %s: %w: level %s has no check to cancel", a.Name, ErrNoCopies, a.sb.Level)
	}
	s := a.syncer
	s.mu.Lock()
	j := s.cur
	s.mu.Unlock()
	if j == nil {
		return "", nil
	}
	switch j.action {
	case SyncCheck, SyncRepair:
	default:
		return "", fmt.Errorf("array %s: a %s runs, not a check: it is not cancelled, since the copies are not in step until it ends; wait for it: uraid wait %s", a.Name, j.action, a.Name)
	}
	s.stopJob(j)
	return j.action, nil
}

// CancelSync stops the running job, if any, and waits until it has; a resync resumes at the
// next start of the array.
func (a *Array) CancelSync() bool {
	if a.syncer == nil {
		return false
	}
	return a.syncer.stop()
}

// SyncStatus reports the sync worker's state.
func (a *Array) SyncStatus() SyncStatus {
	if rj, ok := a.ReshapeStatus(); ok && rj.State != ReshapeDone {
		// The reshape is the array's job while it runs, or waits: no other runs meanwhile.
		st := SyncStatus{Action: SyncReshape, DoneBytes: rj.Cursor, TotalBytes: rj.End, RateBytesPerS: a.rsJob.rate(), Reshape: &rj}
		if rj.State == ReshapePaused {
			st.Waiting = "the reshape is paused: " + rj.Why
		}
		return st
	}
	if a.syncer == nil {
		return SyncStatus{Action: SyncIdle}
	}
	return a.syncer.status()
}

// WaitSync blocks until no job runs.
func (a *Array) WaitSync() {
	a.WaitReshape() // done, paused or stopped; the resync its end may start is waited for next
	if a.syncer != nil {
		a.syncer.wg.Wait()
	}
}

// resumeRebuild restarts the rebuild of a slot found being rebuilt (or replaced) at assembly,
// from the map's checkpoint when it is that rebuild's. It reports whether one was started.
func (s *syncer) resumeRebuild() bool {
	a := s.a
	for i := range a.members {
		sh := a.shadows[i].Load()
		if MemberState(a.state[i].Load()) != MemberRebuilding && sh == nil {
			continue
		}
		t := rebuildTarget{slot: i, dev: a.members[i]}
		if sh != nil {
			t = rebuildTarget{slot: i, dev: sh, shadow: true}
		}
		from := 0
		s.g.mu.Lock()
		if c := s.g.m.Cursor(); c.Action.Fills() && int(c.Member) == i {
			from = c.Position
			t.onlyResync = c.Action == region.ActionReAdd && !t.shadow
		}
		s.g.mu.Unlock()
		a.log.Info("rebuild of member resumes at region", "member", i, "path", t.dev.Path, "region", from)
		if err := s.startRebuild(t, from); err != nil {
			a.log.Error("rebuild failed to resume", "member", i, "path", t.dev.Path, "err", err)
			return false
		}
		return true
	}
	return false
}

// resyncIfNeeded starts a resync when some region needs one, from where an interrupted one
// stopped.
func (s *syncer) resyncIfNeeded() {
	if !s.g.needResync() {
		return
	}
	if s.a.Degraded() {
		s.mu.Lock()
		s.wait = "a member is missing or failed: the regions written meanwhile are resynced when it is back"
		s.mu.Unlock()
		return
	}
	from := 0
	s.g.mu.Lock()
	if c := s.g.m.Cursor(); c.Action == region.ActionResync {
		from = c.Position
	}
	s.g.mu.Unlock()
	if err := s.start(SyncResync, SyncOptions{}, from); err != nil {
		s.a.log.Error("resync failed to start", "err", err)
	}
}

func (s *syncer) start(action string, opts SyncOptions, from int) error {
	return s.startJob(action, opts, from, rebuildTarget{})
}

// startRebuild starts the rebuild of t from region from.
func (s *syncer) startRebuild(t rebuildTarget, from int) error {
	s.mu.Lock()
	o := s.rebuildOpts
	s.mu.Unlock()
	return s.startJob(SyncRebuild, o, from, t)
}

// busyWith names the running job, "" when none.
func (s *syncer) busyWith() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return ""
	}
	return s.cur.action
}

// yieldTo stops a running check or resync so that a job of action can run: a rebuild comes
// first (a resync resumes after it). A running rebuild does not yield.
func (s *syncer) yieldTo(action string) error {
	if cur := s.busyWith(); cur == SyncRebuild {
		return fmt.Errorf("array %s: %w (a rebuild); wait for it or fail its member", s.a.Name, ErrSyncBusy)
	}
	s.stop()
	return nil
}

// cancelRebuildOf stops a rebuild into slot i.
func (s *syncer) cancelRebuildOf(i int) {
	s.mu.Lock()
	j := s.cur
	s.mu.Unlock()
	if j != nil && j.action == SyncRebuild && j.target.slot == i {
		s.stop()
	}
}

func (s *syncer) startJob(action string, opts SyncOptions, from int, t rebuildTarget) error {
	if opts.Floor <= 0 {
		opts.Floor = DefaultSyncFloor
	}
	if opts.MaxRate > 0 && opts.MaxRate < opts.Floor {
		opts.Floor = opts.MaxRate
	}
	if o := s.a.reshaping(); o != nil {
		// The jobs walk the regions by one layout; a reshape moves them from one to another.
		return fmt.Errorf("array %s: %s: %w: wait for it to finish (uraid wait %s); a resync the array needs runs by itself then",
			s.a.Name, action, ErrReshaping, s.a.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		fix := fmt.Sprintf("wait for it: uraid wait %s", s.a.Name)
		if s.cur.action == SyncCheck || s.cur.action == SyncRepair {
			fix = fmt.Sprintf("wait for it (uraid wait %s) or cancel it (uraid check --cancel %s)", s.a.Name, s.a.Name)
		}
		return fmt.Errorf("array %s: %w (%s); %s", s.a.Name, ErrSyncBusy, s.cur.action, fix)
	}
	j := &syncJob{action: action, target: t, opts: opts, cancel: make(chan struct{}), start: s.clock.Now(), resumed: make(chanWaiter, 1)}
	j.rd.Waiter, j.wr.Waiter = j.resumed, j.resumed
	j.lastUser = s.a.userIO()
	s.g.mu.Lock()
	rs := s.g.m.RegionSize()
	if action == SyncResync {
		j.total = int64(s.g.m.Resyncs()) * rs
	} else {
		j.total = int64(s.g.m.Regions()-s.g.m.Count(region.Trimmed)) * rs
	}
	s.g.mu.Unlock()
	if action == SyncRebuild {
		j.total = s.a.Map().Size()
	}
	j.total = min(j.total, s.a.Map().Size())
	s.cur, s.wait = j, ""
	s.wg.Add(1)
	s.a.emit(s.jobEvent(j, EventSyncStarted, fmt.Sprintf("%s started (%d bytes)", action, j.total)))
	go s.run(j, from)
	return nil
}

// jobEvent is an event of job j.
func (s *syncer) jobEvent(j *syncJob, typ, msg string) Event {
	e := Event{Type: typ, Action: j.action, DoneBytes: j.done.Load(), TotalBytes: j.total, Message: msg}
	if j.action == SyncRebuild {
		e.Member, e.Path = slotPtr(j.target.slot), j.target.dev.Path
	}
	return e
}

// progress reports each tenth of the job done; on the job's goroutine.
func (s *syncer) progress(j *syncJob) {
	if j.total <= 0 {
		return
	}
	tenth := min(j.done.Load(), j.total) * progressStep / j.total
	if tenth <= j.reported || tenth >= progressStep { // the end is sync_finished's
		return
	}
	j.reported = tenth
	s.a.emit(s.jobEvent(j, EventSyncProgress, fmt.Sprintf("%s %d%% done", j.action, tenth*100/progressStep)))
}

func (s *syncer) stop() bool {
	s.mu.Lock()
	j := s.cur
	s.mu.Unlock()
	if j == nil {
		return false
	}
	s.stopJob(j)
	return true
}

// stopJob cancels j and waits until no job runs. Stops may come at once from the control
// socket and from the array's own stop: the cancel is closed once.
func (s *syncer) stopJob(j *syncJob) {
	j.stopped.Do(func() { close(j.cancel) })
	s.wg.Wait()
}

func (s *syncer) status() SyncStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SyncStatus{Action: SyncIdle, Waiting: s.wait, Last: s.last}
	if j := s.cur; j != nil {
		st.Action = j.action
		if j.action == SyncRebuild {
			slot := j.target.slot
			st.Member = &slot
		}
		st.DoneBytes, st.TotalBytes = j.done.Load(), j.total
		st.MismatchBytes, st.RepairedBytes = j.mismatch.Load(), j.repaired.Load()
		st.MismatchRegions = append([]int(nil), j.regions...)
		if el := s.clock.Now().Sub(j.start).Seconds(); el > 0 {
			st.RateBytesPerS = int64(float64(st.DoneBytes) / el)
		}
	}
	return st
}

// run is the job's goroutine.
func (s *syncer) run(j *syncJob, from int) {
	defer s.wg.Done()
	err := s.work(j, from)
	cancelled := errors.Is(err, errCancelled)
	res := &SyncResult{
		Action: j.action, Ended: s.clock.Now(), Seconds: s.clock.Now().Sub(j.start).Seconds(),
		DoneBytes: j.done.Load(), MismatchBytes: j.mismatch.Load(), RepairedBytes: j.repaired.Load(),
		Cancelled: cancelled,
	}
	if err != nil && !cancelled {
		res.Error = err.Error()
		s.a.log.Error("sync job failed", "action", j.action, "err", err)
	} else if !cancelled {
		s.a.log.Info("sync job done", "action", j.action, "done_bytes", res.DoneBytes,
			"mismatch_bytes", res.MismatchBytes, "repaired_bytes", res.RepairedBytes)
	}
	s.mu.Lock()
	res.MismatchRegions = j.regions
	s.cur, s.last = nil, res
	s.mu.Unlock()
	if !cancelled {
		s.g.setCursor(region.Cursor{}) // done (or failed): nothing to resume
	}
	e := s.jobEvent(j, EventSyncFinished, "")
	e.MismatchBytes, e.RepairedBytes, e.Error = res.MismatchBytes, res.RepairedBytes, res.Error
	switch {
	case cancelled:
		e.Outcome, e.Message = OutcomeCancelled, j.action+" cancelled"
	case err != nil:
		e.Outcome, e.Message = OutcomeFailed, fmt.Sprintf("%s failed: %v", j.action, err)
	default:
		e.Outcome = OutcomeOK
		e.Message = fmt.Sprintf("%s done: %d bytes, %d mismatching, %d repaired", j.action, res.DoneBytes, res.MismatchBytes, res.RepairedBytes)
	}
	s.a.emit(e)
	if j.action == SyncRebuild && !cancelled && err == nil {
		s.resyncIfNeeded() // members of a wider mirror may still differ where the array was degraded
		s.a.fillFromSpares(false)
	}
}

var errCancelled = errors.New("cancelled")

func (s *syncer) work(j *syncJob, from int) error {
	if j.action == SyncRebuild {
		return s.rebuild(j, j.target, from)
	}
	if j.action == SyncResync {
		// ResyncFrom wraps around once, so regions below an old cursor that were written since
		// are found too; the scan ends when none is left.
		for r := s.g.nextResync(from); r >= 0; r = s.g.nextResync(r + 1) {
			if err := s.region(j, r); err != nil {
				return err
			}
			s.g.setCursor(region.Cursor{Action: region.ActionResync, Position: r + 1})
		}
		s.g.resyncDone()
		return nil
	}
	n := s.g.regionCount()
	for r := from; r < n; r++ {
		if s.g.trimmed(r) {
			continue
		}
		if err := s.region(j, r); err != nil {
			return err
		}
		s.g.setCursor(region.Cursor{Action: region.ActionCheck, Position: r + 1})
	}
	return nil
}

// region resyncs, checks or repairs region r with writes to it locked out.
func (s *syncer) region(j *syncJob, r int) error {
	select {
	case <-j.cancel:
		return errCancelled
	default:
	}
	s.g.hitRegion(FailpointResyncRegion, r)
	off, n := s.g.lock(r)
	defer s.g.unlock()
	if j.action == SyncResync && !s.g.stillNeedsResync(r) {
		return nil // trimmed whole since, or resynced by a rebuild
	}
	for pos := off; pos < off+n; pos += syncStep {
		step := min(int64(syncStep), off+n-pos)
		if plant.Is("resyncend") && j.action == SyncResync && pos+step >= off+n {
			break
		}
		var err error
		j.pieces, err = s.a.Map().Read(pos, step, j.pieces[:0])
		if err != nil {
			return err
		}
		for i := range j.pieces {
			if err := s.piece(j, r, &j.pieces[i]); err != nil {
				return err
			}
		}
		j.done.Add(step)
		s.progress(j)
		if err := s.pace(j, step); err != nil {
			return err
		}
	}
	if j.action == SyncResync {
		if err := s.flushUnlessPlanted(); err != nil { // the copies are durable before the map says so
			return err
		}
		s.g.resynced(r)
	}
	return nil
}

// flushUnlessPlanted is a.Flush, which the planted defect "resync" leaves out.
func (s *syncer) flushUnlessPlanted() error {
	if plant.Is("resync") {
		return nil
	}
	return s.a.Flush()
}

// piece works on one piece of a region: its copies on the working members, the first of which
// is the one resync and repair copy from.
func (s *syncer) piece(j *syncJob, r int, p *mapping.Piece) error {
	for {
		var copies [mapping.MaxCopies]mapping.Extent
		k := 0
		for _, e := range p.Copies[:p.N] {
			if s.a.active(e.Member) {
				copies[k] = e
				k++
			}
		}
		if k < 2 {
			return nil // nothing to keep in step with
		}
		err := s.compare(j, r, copies[:k], p.Logical)
		var rf readFailure
		if errors.As(err, &rf) {
			if !errors.Is(rf.err, errSlotChanged) {
				s.a.fail(rf.member, rf.err)
			}
			continue // try again with the copies left
		}
		return err
	}
}

// readFailure is a member read that failed: the member is failed and the piece tried again.
type readFailure struct {
	member int
	err    error
}

func (e readFailure) Error() string { return fmt.Sprintf("member %d: %v", e.member, e.err) }

// compare reads copies (all of them for a check, the first for a resync), compares and copies
// as the job asks. Member reads and writes are admitted by the discard engine.
func (s *syncer) compare(j *syncJob, r int, copies []mapping.Extent, logical int64) error {
	n := copies[0].Length
	read := 1
	if j.action != SyncResync {
		read = len(copies)
	}
	for len(j.bufs) < len(copies) {
		j.bufs = append(j.bufs, raid.AlignedBytes(syncStep))
	}
	j.rd.Reset()
	for _, e := range copies[:read] {
		j.rd.Add(e)
	}
	for !s.a.engine.BeginRead(&j.rd, 0) {
		<-j.resumed
	}
	var rerr error
	for i, e := range copies[:read] {
		buf := j.bufs[i][:n]
		if err := s.pread(e, buf); err != nil && rerr == nil {
			rerr = readFailure{member: e.Member, err: err}
		}
		s.a.engine.EndRead(&j.rd, i)
	}
	if rerr != nil {
		return rerr
	}
	src := j.bufs[0][:n]
	var targets []mapping.Extent
	switch j.action {
	case SyncResync:
		targets = copies[1:]
	default:
		for i := 1; i < len(copies); i++ {
			d := s.g.differing(logical, src, j.bufs[i][:n])
			if d == 0 {
				continue
			}
			j.mismatch.Add(d)
			s.mu.Lock()
			if len(j.regions) < maxMismatchRegions && (len(j.regions) == 0 || j.regions[len(j.regions)-1] != r) {
				j.regions = append(j.regions, r)
			}
			s.mu.Unlock()
			if j.action == SyncRepair {
				targets = append(targets, copies[i])
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	j.wr.Reset()
	j.wr.Extents = append(j.wr.Extents, targets...)
	for !s.a.engine.BeginWrite(&j.wr) {
		<-j.resumed
	}
	for i, e := range targets {
		if err := s.pwrite(e, src); errors.Is(err, errSlotChanged) {
			// The copy left the array (failed, so out of service, before it could): nothing to
			// keep in step; a device installed since is filled by its own rebuild.
		} else if err != nil {
			s.a.fail(e.Member, err) // that copy is out; the others are in step
		} else if j.action == SyncRepair {
			j.repaired.Add(n)
		}
		s.a.engine.EndWrite(&j.wr, i)
	}
	return nil
}

// errSlotChanged: a sync I/O's slot lost its device, or took another, while the I/O was on it.
// What such a read returned is not that copy's, and the error is not the slot's device's to
// answer for: the device that was there is failed already (it could not have been removed
// otherwise), and a device installed since is another's.
var errSlotChanged = errors.New("the slot's device changed during the I/O")

func (s *syncer) pread(e mapping.Extent, buf []byte) error { return s.memberIO(e, buf, false) }

func (s *syncer) pwrite(e mapping.Extent, buf []byte) error { return s.memberIO(e, buf, true) }

// memberIO reads or writes buf at e on its slot's device. A sync job chooses its copies by their
// states, but an administrator may fail and remove a member, and add a device to its slot,
// between that choice and the I/O. The slot's descriptor number stays the slot's for the array's
// life (install, keepNumber), so the I/O reaches the device, a hole on which it fails, or a
// device installed after; the count of devices the slot has had, taken with the number under
// membersMu and read again after the I/O, tells the last two from the first.
func (s *syncer) memberIO(e mapping.Extent, buf []byte, write bool) error {
	hit(FailpointSyncIO)
	a := s.a
	a.membersMu.Lock()
	m := a.members[e.Member]
	gen := a.refilled[e.Member].Load()
	fd := -1
	if m != nil {
		fd = int(m.File.Fd())
	}
	a.membersMu.Unlock()
	if m == nil {
		return errSlotChanged
	}
	op, io := "pread", unix.Pread
	if write {
		op, io = "pwrite", unix.Pwrite
	}
	got, err := io(fd, buf, a.dataOff[e.Member]+e.Offset)
	if a.refilled[e.Member].Load() != gen && !plant.Is("syncslot") {
		return errSlotChanged
	}
	if err == nil && got != len(buf) {
		err = unix.EIO
	}
	a.accountSync(e.Member, write, int64(len(buf)), err)
	if err != nil {
		return os.NewSyscallError(op, err)
	}
	return nil
}

// pace keeps the job to its floor while the array serves user I/O and to its cap otherwise, and
// answers a cancel.
func (s *syncer) pace(j *syncJob, n int64) error {
	now := s.clock.Now()
	if user := s.a.userIO(); user != j.lastUser {
		j.lastUser, j.lastBusy = user, now
	}
	rate := j.opts.MaxRate
	if !j.lastBusy.IsZero() && now.Sub(j.lastBusy) < userIdle {
		rate = j.opts.Floor
	}
	if j.windowStart.IsZero() || now.Sub(j.windowStart) > time.Second {
		j.windowStart, j.windowBytes = now, 0
	}
	j.windowBytes += n
	if rate <= 0 {
		return nil
	}
	due := time.Duration(float64(j.windowBytes) / float64(rate) * float64(time.Second))
	if wait := due - now.Sub(j.windowStart); wait > 0 {
		t := s.clock.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C():
		case <-j.cancel:
			return errCancelled
		}
	}
	return nil
}
