package array

// reshape_online.go serves an array while it reshapes: the planner's steps (package reshape) run
// on a job of the array's own while requests keep coming, each request placed by the planner's
// Route at the position the reshape stands at (docs/design.md, "Reshape").

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/clock"
	"uraid/internal/failpoint"
	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
	"uraid/reshape"
	"uraid/ublk"
)

// ErrReshaping means the array is reshaping, and what was asked must wait until it is done.
var ErrReshaping = errors.New("a reshape runs")

// onlineReshape is the reshape an array serves through: where requests go (pos), the requests in
// flight that a step must wait for, those parked for its window, and the job that runs the steps.
//
// The rule every request follows (admit): it is routed at the position it was admitted at, and
// counted in flight until its member I/O is over; one that touches the window of the step under
// way parks until the step's state is persisted, but for a read in a plain Copy step, which the
// old places serve. A step moves the window only once no request admitted before it is in flight
// there (hold), so that no user write lands on a place the step has already read, and lets the
// window go only once the reads it let through are over (release), so that the next step, which
// may overwrite those old places, finds none.
type onlineReshape struct {
	a     *Array
	r     *reshaper // the plan, the step, the buffer; r.members is a.members
	plan  *reshape.Reshape
	depth int

	mu       sync.Mutex
	cond     sync.Cond // on mu: a request in flight in the window ended
	pos      reshape.Position
	readsOld bool       // reads in the window go to the old places
	broken   bool       // the window's state reached no member: its requests fail
	flight   []flight   // by queue*depth+tag
	waiters  *tagState  // parked for the window, linked through rsNext
	status   ReshapeJob // under mu

	quit     chan struct{}
	done     chan struct{} // closed when the job ends (or never started and stopped)
	started  atomic.Bool
	stopOnce sync.Once
	// onDone, when set, hears of the reshape's end with the array's new size, from the job;
	// under mu.
	onDone func(size int64)
	// paceStart and paced: when the job began to pace, and the array bytes it moved since, by
	// clock (Options.Clock).
	clock     clock.Clock
	paceStart time.Time
	// startTime and startCursor: when the job started and where, for its rate; under mu.
	startTime   time.Time
	startCursor int64
	paced       int64
}

// flight is the range of a request admitted and not over.
type flight struct {
	off, end int64
	on       bool
}

// ReshapeJob is what an array knows of its reshape, for status.
type ReshapeJob struct {
	OldMembers int `json:"old_members"`
	NewMembers int `json:"new_members"`
	// Cursor and End: array bytes below Cursor are in the new layout; the reshape is done when
	// Cursor reaches End.
	Cursor  int64 `json:"cursor_bytes"`
	End     int64 `json:"end_bytes"`
	OldSize int64 `json:"old_size_bytes"`
	NewSize int64 `json:"new_size_bytes"`
	// State is running, paused (Why says why; the array serves meanwhile) or done.
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// Steps counts the steps this run carried out; ReadBytes, WriteBytes and DiscardBytes what
	// they moved.
	Steps        int   `json:"steps"`
	ReadBytes    int64 `json:"read_bytes"`
	WriteBytes   int64 `json:"write_bytes"`
	DiscardBytes int64 `json:"discard_bytes"`
}

// Reshape job states.
const (
	ReshapeRunning = "running"
	ReshapePaused  = "paused"
	ReshapeDone    = "done"
)

func newOnlineReshape(a *Array, r *reshaper) *onlineReshape {
	o := &onlineReshape{
		a: a, r: r, plan: r.plan, depth: a.opts.Depth,
		flight: make([]flight, a.opts.Queues*a.opts.Depth),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	o.cond.L = &o.mu
	o.clock = a.opts.Clock
	if o.clock == nil {
		o.clock = clock.Real{}
	}
	st := r.sb.Reshape.State
	o.pos = st.Position()
	o.status = ReshapeJob{
		OldMembers: int(r.sb.Reshape.OldMembers), NewMembers: len(r.members),
		Cursor: st.Cursor, End: r.plan.End(), OldSize: r.plan.From().Size(), NewSize: r.plan.To().Size(),
		State: ReshapeRunning,
	}
	return o
}

// reshaping returns the reshape the array serves through, nil when none.
func (a *Array) reshaping() *onlineReshape { return a.rs.Load() }

// ReshapeStatus returns the state of the reshape this array was assembled with, done or not;
// false when none.
func (a *Array) ReshapeStatus() (ReshapeJob, bool) {
	o := a.rsJob
	if o == nil {
		return ReshapeJob{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status, true
}

// WaitReshape waits until the reshape job has ended: done, paused or stopped. At once when none
// runs.
func (a *Array) WaitReshape() {
	if o := a.rsJob; o != nil && o.started.Load() {
		<-o.done
	}
}

// OnReshaped sets f to hear, from the reshape's job, that the reshape is done and the array has
// its new size, which the device is to be told of.
//
// Set once the reshape is done already, f hears of it at once.
func (a *Array) OnReshaped(f func(size int64)) {
	o := a.rsJob
	if o == nil {
		return
	}
	o.mu.Lock()
	o.onDone = f
	done := o.status.State == ReshapeDone
	o.mu.Unlock()
	if done {
		f(o.plan.To().Size())
	}
}

// admit routes request r at the position the reshape stands at and counts it in flight, or parks
// it (false) when it touches the window of the step under way; a parked request comes back
// through Resume. One that touches a window whose state is unknown fails (false too). Queue
// goroutine.
func (o *onlineReshape) admit(r *ublk.Request, t *tagState) (reshape.Position, bool) {
	off, end := r.Offset, r.Offset+r.Length
	o.mu.Lock()
	p := o.pos
	inWindow := p.WindowEnd > p.Cursor && off < p.WindowEnd && p.Cursor < end
	if inWindow && o.broken {
		o.mu.Unlock()
		r.Complete(-int32(unix.EIO))
		return p, false
	}
	if inWindow && !(r.Op == ublk.OpRead && o.readsOld) && !(plant.Is("reshapepark") && r.Op == ublk.OpWrite) {
		t.rsParked = true
		t.rsNext = o.waiters
		o.waiters = t
		o.mu.Unlock()
		return p, false
	}
	o.flight[int(r.Queue)*o.depth+int(r.Tag)] = flight{off: off, end: end, on: true}
	t.rs = o
	o.mu.Unlock()
	return p, true
}

// end says that request r, admitted by admit, has no member I/O left.
func (o *onlineReshape) end(r *ublk.Request) {
	o.mu.Lock()
	o.flight[int(r.Queue)*o.depth+int(r.Tag)].on = false
	if o.pos.WindowEnd > o.pos.Cursor {
		o.cond.Broadcast()
	}
	o.mu.Unlock()
}

// reshapeEnd ends the reshape's count of t's request, if it was counted.
func (a *Array) reshapeEnd(r *ublk.Request, t *tagState) {
	if o := t.rs; o != nil {
		t.rs = nil
		o.end(r)
	}
}

// busy counts the requests in flight over [from, to); mu held.
func (o *onlineReshape) busy(from, to int64) int {
	n := 0
	for _, f := range o.flight {
		if f.on && f.off < to && from < f.end {
			n++
		}
	}
	return n
}

// read appends the pieces of [off, off+n) at position p: reads in the window go to the old
// places (admit let them in only in a Copy step).
func (o *onlineReshape) read(p reshape.Position, off, n int64, dst []mapping.Piece) ([]mapping.Piece, error) {
	for end := off + n; off < end; {
		z, l, err := o.plan.Route(p, off, end-off)
		if err != nil {
			return dst, err
		}
		if z == reshape.ZoneWait {
			z = reshape.ZoneOld
		}
		if dst, err = o.plan.Map(z).Read(off, l, dst); err != nil {
			return dst, err
		}
		off += l
	}
	return dst, nil
}

// write appends the member extents of a write of [off, off+n) at position p, which admit let in
// outside the window.
func (o *onlineReshape) write(p reshape.Position, off, n int64, dst []mapping.Extent) ([]mapping.Extent, error) {
	for end := off + n; off < end; {
		z, l, err := o.plan.Route(p, off, end-off)
		if err != nil {
			return dst, err
		}
		if z == reshape.ZoneWait {
			if !plant.Is("reshapepark") {
				return dst, fmt.Errorf("reshape: a write of %d+%d admitted into the window [%d, %d)", off, l, p.Cursor, p.WindowEnd)
			}
			z = reshape.ZoneOld // planted: the write goes where the step already read
		}
		if dst, err = o.plan.Map(z).Write(off, l, dst); err != nil {
			return dst, err
		}
		off += l
	}
	return dst, nil
}

// discard appends the member extents of a discard of [off, off+n) at position p.
func (o *onlineReshape) discard(p reshape.Position, off, n int64, gran []mapping.Granularity, dst []mapping.Extent) ([]mapping.Extent, error) {
	for end := off + n; off < end; {
		z, l, err := o.plan.Route(p, off, end-off)
		if err != nil {
			return dst, err
		}
		if z == reshape.ZoneWait {
			return dst, fmt.Errorf("reshape: a discard of %d+%d admitted into the window [%d, %d)", off, l, p.Cursor, p.WindowEnd)
		}
		mp := o.plan.Map(z)
		if dst, err = mp.Discard(off, l, gran[:mp.Members()], dst); err != nil {
			return dst, err
		}
		off += l
	}
	return dst, nil
}

// rate is the array bytes per second the job has moved since it started, 0 before.
func (o *onlineReshape) rate() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	el := o.clock.Now().Sub(o.startTime).Seconds()
	if o.startTime.IsZero() || el <= 0 {
		return 0
	}
	return int64(float64(o.status.Cursor-o.startCursor) / el)
}

// start runs the job, once; MarkDirty calls it when the array begins to serve.
func (o *onlineReshape) start() {
	if o.started.Swap(true) {
		return
	}
	o.mu.Lock()
	o.startTime, o.startCursor = o.clock.Now(), o.status.Cursor
	o.mu.Unlock()
	o.a.background(o.run)
}

// stop ends the job at its next step boundary and waits for it.
func (o *onlineReshape) stop() {
	o.stopOnce.Do(func() { close(o.quit) })
	if o.started.Load() {
		<-o.done
	}
}

// persisted is the reshape state on the members.
func (o *onlineReshape) persisted() reshape.State {
	a := o.a
	a.sbMu.Lock()
	defer a.sbMu.Unlock()
	return a.sb.Reshape.State
}

// run carries out steps until the reshape is done, the array stops or a member fails.
func (o *onlineReshape) run() {
	defer close(o.done)
	a := o.a
	for {
		select {
		case <-o.quit:
			return
		default:
		}
		st := o.persisted()
		if st.Done {
			if err := o.finish(); err != nil {
				o.pause(fmt.Sprintf("finish: %v", err))
				return
			}
			return
		}
		if a.Degraded() && st.Backup.Length() == 0 {
			// (A persisted backup is restored first, if it can be: its window waits for it.)
			o.pause("a member failed or is missing: the reshape waits at a step boundary and the array serves degraded; it resumes once the array is assembled with every member in service (a member recorded failed cannot rejoin during a reshape yet: that needs a rebuild, which waits for the reshape)")
			return
		}
		from := st.Cursor
		if err := o.step(st); err != nil {
			o.pause(err.Error())
			return
		}
		if !o.pace(o.persisted().Cursor - from) {
			return
		}
	}
}

// pace holds the job after a step that moved n array bytes until the rate it has moved at since
// it started is within Options.ReshapeMaxRate (none: no hold); false when the job is to stop.
func (o *onlineReshape) pace(n int64) bool {
	rate := o.a.opts.ReshapeMaxRate
	if rate <= 0 {
		return true
	}
	c := o.clock
	if o.paceStart.IsZero() {
		o.paceStart = c.Now()
	}
	o.paced += n
	wait := o.paceStart.Add(time.Duration(float64(o.paced) / float64(rate) * float64(time.Second))).Sub(c.Now())
	if wait <= 0 {
		return true
	}
	t := c.NewTimer(wait)
	defer t.Stop()
	select {
	case <-o.quit:
		return false
	case <-t.C():
		return true
	}
}

// pause records why the job stopped before the end, and says so.
func (o *onlineReshape) pause(why string) {
	o.mu.Lock()
	o.status.State, o.status.Why = ReshapePaused, why
	cursor := o.status.Cursor
	o.mu.Unlock()
	o.a.log.Warn("reshape paused", "cursor", cursor, "end", o.plan.End(), "why", why)
	o.a.emit(Event{Type: EventReshapePaused, Message: fmt.Sprintf("reshape paused at byte %d of %d: %s", cursor, o.plan.End(), why)})
}

// step carries out the step that follows st as reshape.Step says, while requests keep coming.
func (o *onlineReshape) step(st reshape.State) error {
	s := &o.r.step
	// The window's bounds and kind do not hang on the liveness: the plan without it names them.
	if err := o.plan.Next(st, nil, s); err != nil {
		return err
	}
	from, to, kind := s.From, s.To, s.Kind
	o.hold(s.Position(), kind == reshape.Copy)
	// TRIMs queued over the window's places reach the members before the step reads them: one
	// that lands later would punch out what the step wrote over an old place.
	o.a.engine.Drain()
	// The liveness now: no write or discard in the window is in flight, and none can begin.
	var live reshape.Live
	if o.a.regions != nil {
		live = o.live
	}
	if err := o.plan.Next(st, live, s); err != nil {
		o.release(st)
		return err
	}
	if s.From != from || s.To != to || s.Kind != kind {
		o.release(st)
		return fmt.Errorf("reshape: the step planned [%d, %d) %v, then [%d, %d) %v", from, to, kind, s.From, s.To, s.Kind)
	}
	if err := o.do(s); err != nil {
		st := o.persisted()
		if st.Backup.Length() != 0 {
			// The window's old places are no longer to be trusted, and its backup could not
			// be written home: its requests fail rather than wait for a restore that may never
			// come (a stop and an assembly with every member tries it again).
			o.mu.Lock()
			o.broken = true
			o.mu.Unlock()
		}
		o.release(st)
		return fmt.Errorf("%v step [%d, %d): %w", kind, from, to, err)
	}
	o.release(s.After)
	o.mu.Lock()
	o.status.Cursor = s.After.Cursor
	o.status.Steps++
	o.status.ReadBytes += s.ReadBytes
	o.status.WriteBytes += s.WriteBytes
	o.status.DiscardBytes += s.DiscardBytes
	o.mu.Unlock()
	return nil
}

// hold parks the requests that touch p's window from now on and waits until none admitted before
// is in flight there.
func (o *onlineReshape) hold(p reshape.Position, readsOld bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pos, o.readsOld = p, readsOld
	for o.busy(p.Cursor, p.WindowEnd) > 0 {
		o.cond.Wait()
	}
}

// release lets the window's requests go at the position of st, the state on the members, once
// the reads the step let through to the old places are over.
func (o *onlineReshape) release(st reshape.State) {
	o.mu.Lock()
	o.readsOld = false
	for o.busy(o.pos.Cursor, o.pos.WindowEnd) > 0 {
		o.cond.Wait()
	}
	o.pos = st.Position()
	w := o.waiters
	o.waiters = nil
	o.mu.Unlock()
	for w != nil {
		next := w.rsNext
		w.rsNext = nil
		w.rsParked = true // Resume serves it again from the start
		w.req.Resume()
		w = next
	}
}

// live answers the planner's liveness from the region map: a trimmed region is dead.
func (o *onlineReshape) live(off, end int64) (bool, int64) {
	g := o.a.regions
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.m
	live := m.State(m.RegionOf(off)) != region.Trimmed
	s, n := m.Span(m.RegionOf(off))
	next := s + n
	for next < end && (m.State(m.RegionOf(next)) != region.Trimmed) == live {
		s, n = m.Span(m.RegionOf(next))
		next = s + n
	}
	return live, min(next, end)
}

// do carries out one step's I/O and persists, on the members in service: a read goes to a copy on
// an active member, a write or discard leaves out a member out of service, and a member that
// fails an I/O is failed as a request's would be; the step fails only when some byte has no copy
// left, or the backup cannot be made whole.
func (o *onlineReshape) do(s *reshape.Step) error {
	a, r := o.a, o.r
	if n := int(s.To - s.From); len(r.buf) < n {
		r.buf = raid.AlignedBytes(n)
	}
	buf := r.buf[:s.To-s.From]
	for _, p := range s.Reads {
		if err := o.readPiece(&p, buf[p.Logical-s.From:][:p.Length]); err != nil {
			return err
		}
	}
	held := min(s.To, o.plan.From().Size()) - s.From
	switch s.Kind {
	case reshape.BackupCopy:
		hitWindow(FailpointReshapeBackup, s)
		for _, e := range s.BackupWrites {
			hit(FailpointReshapeIO)
			if err := o.writeExtent(e, buf[e.Logical-s.From:][:e.Length]); err != nil {
				return fmt.Errorf("backup: %w", err) // one copy: a lost piece cannot be made up
			}
		}
		if err := o.flush(); err != nil {
			return err
		}
		mid := s.Mid
		mid.Backup.Sum = backupSum(buf, held)
		hit(FailpointReshapeMid)
		if err := o.persist(mid); err != nil {
			return err
		}
	case reshape.Restore:
		if err := checkRestore(s, buf, held, o.persisted().Backup.Sum); err != nil {
			return err
		}
	}
	hitWindow(FailpointReshapeWrite, s)
	for _, e := range s.Writes {
		hit(FailpointReshapeIO)
		if err := o.writeExtent(e, buf[e.Logical-s.From:][:e.Length]); err != nil && !a.readable() {
			return err
		}
	}
	for _, e := range s.Discards {
		hit(FailpointReshapeIO)
		if !a.writable(e.Member) {
			continue
		}
		if err := discardMember(a.log, a.members[e.Member], a.dataOff[e.Member], e); err != nil {
			a.fail(e.Member, err)
		}
	}
	if err := o.flush(); err != nil {
		return err
	}
	hit(FailpointReshapePersist)
	return o.persist(s.After)
}

// hitWindow hits failpoint name with the step's window as its span: the robustness harness
// aims requests there, which park.
func hitWindow(name string, s *reshape.Step) {
	if !failpoint.Active() {
		return
	}
	failpoint.HitAt(name, failpoint.Span{Off: s.From, Len: s.To - s.From})
}

// readPiece reads piece p into b from a copy on an active member, failing the members whose read
// fails.
func (o *onlineReshape) readPiece(p *mapping.Piece, b []byte) error {
	a := o.a
	var errs []error
	for _, e := range p.Copies[:p.N] {
		if !a.active(e.Member) {
			continue
		}
		m := a.members[e.Member]
		_, err := m.File.ReadAt(b, a.dataOff[e.Member]+e.Offset)
		a.accountSync(e.Member, false, e.Length, err)
		if err == nil {
			return nil
		}
		a.fail(e.Member, err)
		errs = append(errs, fmt.Errorf("member %s: read: %w", m.Path, err))
	}
	return fmt.Errorf("array bytes %d+%d: no copy left to read: %w", p.Logical, p.Length, errors.Join(errs...))
}

// writeExtent writes b to e; a member out of service is left out (an error), one whose write
// fails is failed.
func (o *onlineReshape) writeExtent(e mapping.Extent, b []byte) error {
	a := o.a
	if !a.writable(e.Member) {
		return fmt.Errorf("member %d is out of service", e.Member)
	}
	m := a.members[e.Member]
	_, err := m.File.WriteAt(b, a.dataOff[e.Member]+e.Offset)
	a.accountSync(e.Member, true, e.Length, err)
	if err != nil {
		a.fail(e.Member, err)
		return fmt.Errorf("member %s: write: %w", m.Path, err)
	}
	return nil
}

// flush makes the step's writes durable on every member in service; one whose flush fails is
// failed, and the step with it when some byte has no copy left.
func (o *onlineReshape) flush() error {
	a := o.a
	for i, m := range a.members {
		if m == nil || !a.writable(i) {
			continue
		}
		if err := m.File.Sync(); err != nil {
			a.fail(i, err)
		}
	}
	if !a.readable() {
		return fmt.Errorf("%w: a member's flush failed and some bytes have no copy left", ErrArrayFailed)
	}
	return nil
}

// persist writes st to every member in service in one superblock update. It fails when the
// update reached no member; then the window's state is unknown, and its requests fail.
func (o *onlineReshape) persist(st reshape.State) error {
	a := o.a
	a.sbMu.Lock()
	info := *a.sb.Reshape // a copy: Superblock hands the pointer out
	info.State = st
	a.sb.Reshape = &info
	state := a.sb.State
	a.sbMu.Unlock()
	wrote, err := a.writeSuperblocksN(state, false, true)
	if wrote == 0 {
		o.mu.Lock()
		o.broken = true
		o.mu.Unlock()
		return fmt.Errorf("persist reshape state: %w", err)
	}
	if err != nil {
		a.log.Warn("reshape state not persisted on every member", "err", err)
	}
	return nil
}

// finish ends a reshape persisted done: the region map takes the new size (its new regions
// trimmed) on every member, the superblocks drop the reshape, and the array serves the new
// layout at its new size.
func (o *onlineReshape) finish() error {
	a, r := o.a, o.r
	newSize := o.plan.To().Size()
	if a.regions != nil {
		a.regions.mu.Lock()
		r.regions = a.regions.m
		a.regions.mu.Unlock()
		if err := r.zeroGained(); err != nil {
			return err
		}
		a.regions.holdWrites()
		defer a.regions.releaseWrites()
		hit(FailpointReshapeMap)
		if err := a.regions.resize(newSize); err != nil {
			return fmt.Errorf("region map: %w", err)
		}
	}
	hit(FailpointReshapeFinish)
	a.sbMu.Lock()
	info := a.sb.Reshape
	a.sb.Reshape = nil
	state := a.sb.State
	a.sbMu.Unlock()
	if wrote, err := a.writeSuperblocksN(state, false, true); wrote == 0 {
		a.sbMu.Lock()
		a.sb.Reshape = info
		a.sbMu.Unlock()
		return fmt.Errorf("superblocks: %w", err)
	}
	// Every byte is in the new layout already (the cursor is at the end): the map of the new
	// size places each where Route did.
	a.mp.Store(o.plan.To())
	a.rs.Store(nil) // requests map by it from now on; those in flight end on o
	o.mu.Lock()
	o.status.State, o.status.Cursor = ReshapeDone, o.plan.End()
	st := o.status
	f := o.onDone // read with the state: OnReshaped tells f itself once it is done
	o.mu.Unlock()
	a.log.Info("reshaped", "members", st.NewMembers, "size", newSize, "steps", st.Steps,
		"read_bytes", st.ReadBytes, "write_bytes", st.WriteBytes, "discard_bytes", st.DiscardBytes)
	a.emit(Event{Type: EventReshaped, Message: fmt.Sprintf("reshaped from %d to %d members: %d bytes (was %d)", st.OldMembers, st.NewMembers, newSize, st.OldSize)})
	if a.syncer != nil {
		a.syncer.resyncIfNeeded() // regions a crash left dirty, deferred while the layout moved
	}
	if f != nil {
		f(newSize)
	}
	return nil
}

// assembleReshaping assembles members that carry a reshape under way: the array serves at its
// old size, every request routed by the reshape's position, and the reshape resumes once it
// serves (MarkDirty). Every member, old and new, must be there.
func assembleReshaping(name string, opened []*raid.Member, sbs []raid.MemberSB, o Options) (*Array, error) {
	r, err := openReshape(name, opened, sbs, o.logger(), o.Degraded)
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	for _, m := range opened {
		if !containsMember(r.members, m) {
			m.Close()
		}
	}
	a, err := newArray(r.sb, r.members, o, layout{reshape: r})
	if err != nil {
		for _, m := range r.members {
			if m != nil {
				m.Close()
			}
		}
		return nil, err
	}
	a.log.Info("assemble: the members carry a reshape under way: it resumes while the array serves",
		"cursor", r.sb.Reshape.State.Cursor, "end", r.plan.End(), "from_members", r.sb.Reshape.OldMembers, "to_members", len(r.members))
	return a, nil
}

func containsMember(list []*raid.Member, m *raid.Member) bool {
	for _, x := range list {
		if x == m {
			return true
		}
	}
	return false
}

// StartReshape widens the served raid0 or raid10 (n2, o2) by the devices at add: it vets and
// commits the reshape exactly as Reshape does for a stopped array (the new members' superblocks,
// then the old ones', at cursor 0), and writes nothing on a refusal. The array must be quiet and
// marked clean (MarkClean: no request in flight, the region map clean), as a hand-over leaves it.
//
// This Array was built for the old members: from the commit on it writes no superblock, and must
// be closed and the members assembled again, old and new, which serves the array while the
// reshape runs (every per-member structure of a served array is sized when it is assembled; the
// hand-over is the moment none of it is in use).
func (a *Array) StartReshape(add []string, o ReshapeOptions) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	return a.startReshape(add, o)
}

// CheckReshape makes every check StartReshape would and writes nothing: a daemon asks it before
// it lets its device go for the reshape.
func (a *Array) CheckReshape(add []string, o ReshapeOptions) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	o.checkOnly = true
	return a.startReshape(add, o)
}

// startReshape is StartReshape with adminMu held.
func (a *Array) startReshape(add []string, o ReshapeOptions) error {
	switch {
	case a.reshaping() != nil:
		return fmt.Errorf("array %s: %w already: wait for it to finish (uraid wait %s)", a.Name, ErrReshaping, a.Name)
	case a.superseded.Load():
		return fmt.Errorf("array %s: %w", a.Name, errSuperseded)
	case a.Degraded():
		return fmt.Errorf("array %s: %w: a member has failed or is missing: bring it back and let the rebuild finish first", a.Name, ErrReshape)
	}
	if a.syncer != nil {
		if job := a.syncer.busyWith(); job != "" {
			return fmt.Errorf("array %s: %w: a %s runs: wait for it (uraid wait %s) first", a.Name, ErrReshape, job, a.Name)
		}
		if a.regions.needResync() {
			return fmt.Errorf("array %s: %w: regions need a resync (their copies may differ): let it run (uraid wait %s) first", a.Name, ErrReshape, a.Name)
		}
		if c := a.regions.cursor(); c.Action != region.ActionNone {
			return fmt.Errorf("array %s: %w: a %s stopped at region %d is to resume: let it finish (uraid wait %s) first", a.Name, ErrReshape, c.Action, c.Position, a.Name)
		}
	}
	if err := raid.CheckNamedOnce(add); err != nil {
		return fmt.Errorf("array %s: %w", a.Name, err)
	}
	add = raid.StablePaths(add)
	a.membersMu.Lock()
	spares := len(a.spares)
	members := append([]*raid.Member(nil), a.members...)
	a.membersMu.Unlock()
	if spares > 0 {
		return fmt.Errorf("array %s: %w: the array has %d spares: remove them (uraid remove) first", a.Name, ErrReshape, spares)
	}
	var adds []*raid.Member
	defer func() {
		for _, m := range adds {
			m.Close() // the successor opens them again
		}
	}()
	var sbs []raid.MemberSB
	for _, m := range members {
		sb, err := raid.ReadSuperblock(m.File)
		if err != nil {
			return fmt.Errorf("array %s: member %s: %w", a.Name, m.Path, err)
		}
		sbs = append(sbs, raid.MemberSB{Path: m.Path, SB: sb})
	}
	for _, p := range add {
		if slices.ContainsFunc(members, func(m *raid.Member) bool { return m.Path == p }) {
			return fmt.Errorf("array %s: %w: %s is a member already", a.Name, ErrReshape, p)
		}
		m, err := raid.OpenMember(p)
		if err != nil {
			return fmt.Errorf("array %s: %w", a.Name, err)
		}
		adds = append(adds, m)
		sbs = append(sbs, raid.MemberSB{Path: p})
	}
	if o.Log == nil {
		o.Log = a.opts.logger()
	}
	if r, err := commitReshape(a.Name, append(members, adds...), sbs, len(members), o); err != nil {
		if r != nil {
			a.superseded.Store(true) // some old members may carry the commit
		}
		return err
	}
	if !o.checkOnly {
		a.superseded.Store(true)
	}
	return nil
}
