package array

import (
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"uraid/discard"
	"uraid/internal/plant"
	"uraid/latency"
	"uraid/mapping"
	"uraid/raid"
	"uraid/ublk"
)

// The array serves its ublk device as a ublk.Resumer: reads, writes and flushes of members are
// submitted on the queue's own io_uring and complete in Reap, on the queue goroutine, so the hot
// path needs no other goroutine, lock or allocation. Every read and write is admitted by the
// discard engine first (BeginRead, BeginWrite), which keeps the rules of discard against data; a
// request the engine parks (its bytes have a TRIM pending) keeps its tag and comes back through
// Resume, on the queue goroutine again, when it may go on. Discards go to the engine, whose lanes
// complete them; a discard never blocks the queue either.

// Per-tag state. A queue's tags are touched only by that queue's goroutine, except what the
// engine owns while it holds a parked request or a discard.
type tagState struct {
	read      discard.Read     // READ: the logical pieces and the copies to read them from, as planned (read.Pieces) and admitted
	exts      []mapping.Extent // WRITE and FLUSH: one per member I/O
	write     discard.Write    // WRITE: exts as the engine admits them (the slots' own: Length 0 for a member out of service)
	refill    []uint32         // READ: per piece, its copy's slot's Array.refilled when prepared
	failed    []bool           // WRITE: which extents failed
	shadow    []*raid.Member   // WRITE: the replacement an extent goes to, nil for a slot's own
	disc      discard.Discard  // DISCARD: the member extents handed to the engine
	flushLost bool             // FLUSH: a member's flush failed (and the member with it)
	pending   int              // member I/Os not yet reaped
	err       int32            // first negative errno, or 0
	req       *ublk.Request    // the request the tag holds, to resume it

	// For the latency histograms: when the kernel handed the request over, and when its member
	// I/O went out (READ, WRITE). A read that fails over to another copy keeps the first issue
	// time: what the member histogram then shows is what the request waited.
	start, issued latency.Stamp
	// discarded times a DISCARD on its way back to the kernel: the engine tells it, not r.
	discarded timedDiscard

	// The region map's hold on a write (regions.go).
	mapBegun  bool      // WRITE: counted in flight in the map
	mapFailed bool      // WRITE: the map refused it
	mapLost   bool      // WRITE: the map generation it waited for reached no member
	mapGen    uint64    // WRITE: the map generation it waits for
	mapNext   *tagState // link in a map wait list

	// The reshape's hold on a request (reshape_online.go): rs is the reshape that counts it in
	// flight (nil: none), rsParked that it waits for a step's window, linked by rsNext, and is
	// served again from the start when resumed.
	rs       *onlineReshape
	rsParked bool
	rsNext   *tagState
}

// Most requests touch a handful of members; the slices grow on the first bigger one and stay.
const tagPrealloc = 8

func (t *tagState) init() {
	t.read.Pieces = make([]mapping.Piece, 0, 2)
	t.refill = make([]uint32, 0, 2)
	t.exts = make([]mapping.Extent, 0, tagPrealloc)
	t.failed = make([]bool, 0, tagPrealloc)
	t.shadow = make([]*raid.Member, 0, tagPrealloc)
	t.disc.Extents = make([]mapping.Extent, 0, tagPrealloc)
}

// timedDiscard is the discard.Completer of a DISCARD: it records the request's latency, then
// completes it. It lives in the tag, so that handing it to the engine allocates nothing.
type timedDiscard struct {
	r     *ublk.Request
	start latency.Stamp
	hist  *latency.Histogram
	a     *Array
	t     *tagState
}

func (d *timedDiscard) Done(err error) {
	d.a.reshapeEnd(d.r, d.t)
	if err == nil {
		d.hist.Observe(latency.Since(d.start))
	}
	d.r.Done(err) // last: the tag may be reused from here on
}

// requestLatency times the requests the kernel sends the array, from their arrival to their
// completion, parking for a TRIM included; failed requests are not counted.
type requestLatency struct {
	read, write, discard latency.Histogram
}

// memberStats counts a member's I/O; the daemon reads it while queues write it.
type memberStats struct {
	reads, writes, readBytes, writeBytes, errors atomic.Uint64
	// readLat and writeLat time the user's successful member reads and writes, from their issue
	// (once the engine admitted them) to their completion.
	readLat, writeLat latency.Histogram
	// The sync worker's own reads and writes (resync, check, repair), apart from the user's.
	syncReadBytes, syncWriteBytes atomic.Uint64
}

// Params describes the array's block device.
func (a *Array) Params() ublk.Params {
	lbs := int64(512)
	var gran int64
	a.membersMu.Lock() // a rebuild's replace may be swapping a member in
	for i, m := range a.members {
		if m == nil {
			continue
		}
		lbs = max(lbs, m.LogicalBlock)
		gran = max(gran, a.gran[i].Bytes)
	}
	a.membersMu.Unlock()
	m := a.Map() // once: a grow may swap the layout meanwhile
	p := ublk.Params{
		Size:              m.Size(),
		LogicalBlockSize:  uint32(lbs),
		PhysicalBlockSize: uint32(max(lbs, 4096)),
		// Members may cache writes: FLUSH and FUA must reach them.
		VolatileCache: true,
		FUA:           true,
	}
	if c := m.ChunkBytes(); c > 0 {
		// Reads and writes never straddle a chunk, so each maps to one extent per copy.
		p.ChunkSize = uint32(c)
		p.IOMin = uint32(c)
		if w := c * int64(m.Members()/m.Copies()); w&(w-1) == 0 && m.Members()%m.Copies() == 0 {
			p.IOOpt = uint32(w)
		}
	}
	if gran > 0 {
		g := max(gran, lbs)
		if g&(g-1) != 0 {
			g = lbs // the engine rounds each member's range inward anyway
		}
		p.DiscardGranularity = uint32(g)
	}
	return p
}

func (a *Array) tag(r *ublk.Request) *tagState { return &a.tags[r.Queue][r.Tag] }

func (a *Array) active(i int) bool { return MemberState(a.state[i].Load()) == MemberActive }

// Serve starts a request; see ublk.Target.
func (a *Array) Serve(r *ublk.Request) {
	t := a.tag(r)
	t.pending, t.err, t.req = 0, 0, r
	t.start = latency.Now()
	t.mapBegun, t.mapFailed, t.mapLost, t.flushLost = false, false, false, false
	a.dispatch(r, t)
}

// dispatch serves r by its op, from the start.
func (a *Array) dispatch(r *ublk.Request, t *tagState) {
	switch r.Op {
	case ublk.OpRead:
		a.serveRead(r, t)
	case ublk.OpWrite:
		a.serveWrite(r, t)
	case ublk.OpFlush:
		a.serveFlush(r, t)
	case ublk.OpDiscard:
		a.serveDiscard(r, t)
	default:
		r.Complete(-int32(unix.EOPNOTSUPP))
	}
}

// Resume carries on with a request the engine parked; see ublk.Resumer.
func (a *Array) Resume(r *ublk.Request) {
	t := a.tag(r)
	if t.rsParked {
		// It waited for a reshape step's window, before anything was mapped.
		t.rsParked = false
		a.dispatch(r, t)
		return
	}
	switch r.Op {
	case ublk.OpRead:
		for i := range t.read.Pieces {
			a.keepReadable(&t.read.Pieces[i])
		}
		a.admitRead(r, t)
	case ublk.OpWrite:
		a.admitWrite(r, t)
	}
}

// keepReadable leaves out of a read's piece the copies whose member is no longer active: while
// the read waited, a member may have failed and a blank device, still being rebuilt, may have
// taken its slot in the engine.
func (a *Array) keepReadable(p *mapping.Piece) {
	for k := range p.Copies[:p.N] {
		if !a.active(p.Copies[k].Member) {
			p.Copies[k].Length = 0
		}
	}
}

// readFrom narrows a planned piece to the copies it may be read from: those on active members, and
// only the first of them when one (the copy a resync copies from). They keep their order at the
// head of Copies, N counts them; the plan's other copies follow them, in order too, for
// widenResyncRead.
func (a *Array) readFrom(p *mapping.Piece, one bool) {
	var rest [mapping.MaxCopies]mapping.Extent
	k, n := 0, 0
	for _, e := range p.Copies[:p.N] {
		if a.active(e.Member) && (!one || k == 0) {
			p.Copies[k] = e // k never passes the copy being looked at
			k++
		} else {
			rest[n] = e
			n++
		}
	}
	copy(p.Copies[k:], rest[:n])
	p.N = k
}

// widenResyncRead gives a read restricted to the copy a resync copies from (serveRead) the copy
// the resync copies from once that one is gone: the next working one of the plan.
func (a *Array) widenResyncRead(p *mapping.Piece) {
	if p.N != 1 || plant.Is("widen") {
		return
	}
	for k := 1; k < len(p.Copies) && p.Copies[k].Length > 0; k++ {
		if e := p.Copies[k]; e.Member != p.Copies[0].Member && a.active(e.Member) {
			p.Copies[1], p.Copies[k] = e, p.Copies[1]
			p.N = 2
			return
		}
	}
}

func (a *Array) serveRead(r *ublk.Request, t *tagState) {
	var err error
	t.read.Reset()
	if o := a.reshaping(); o != nil {
		p, ok := o.admit(r, t)
		if !ok {
			return // parked until the step's window is let go
		}
		t.read.Pieces, err = o.read(p, r.Offset, r.Length, t.read.Pieces)
	} else {
		t.read.Pieces, err = a.Map().Read(r.Offset, r.Length, t.read.Pieces)
	}
	if err != nil {
		a.reshapeEnd(r, t)
		r.Complete(-int32(unix.EIO))
		return
	}
	t.read.Waiter = r
	t.refill = t.refill[:0]
	for i := range t.read.Pieces {
		t.refill = append(t.refill, 0)
		p := &t.read.Pieces[i]
		// Copies of a region that needs resync may differ: until it is resynced every read of
		// it comes from the copy the resync copies from, so that reads are repeatable.
		one := p.N > 1 && a.regions != nil && a.regions.needsResync(p.Logical, p.Length)
		a.readFrom(p, one)
	}
	a.admitRead(r, t)
}

// admitRead issues the read once the engine admits it: each piece from the copy the engine picks,
// the one whose TRIMs delay it least, spreading reads over the mirrors. Parked, it comes back
// through Resume.
func (a *Array) admitRead(r *ublk.Request, t *tagState) {
	// Round robin per queue: only the queue goroutine counts, so no atomics are needed.
	turn := a.readTurn[r.Queue]
	if !a.engine.BeginRead(&t.read, turn) {
		a.discard.parkedReads.Add(1)
		return
	}
	a.readTurn[r.Queue] = turn + uint32(len(t.read.Pieces))
	t.issued = latency.Now()
	for i := range t.read.Pieces {
		a.prepRead(r, t, i)
	}
	a.finishIfDone(r, t)
}

// prepRead reads piece i from the copy the engine picked; with no copy left the request fails.
func (a *Array) prepRead(r *ublk.Request, t *tagState, i int) {
	if !t.read.HasPick(i) {
		t.err = -int32(unix.EIO)
		return
	}
	c := t.read.Pick(i)
	p := &t.read.Pieces[i]
	t.refill[i] = a.refilled[c.Member].Load()
	if err := r.PrepReadInto(a.fd(c.Member), p.Logical-r.Offset, p.Length, a.dataOff[c.Member]+c.Offset, uint32(i)); err != nil {
		a.engine.EndRead(&t.read, i)
		t.err = -int32(unix.EIO)
		return
	}
	t.pending++
}

func (a *Array) serveWrite(r *ublk.Request, t *tagState) {
	var err error
	if o := a.reshaping(); o != nil {
		p, ok := o.admit(r, t)
		if !ok {
			return // parked until the step's window is let go
		}
		t.exts, err = o.write(p, r.Offset, r.Length, t.exts[:0])
	} else {
		t.exts, err = a.Map().Write(r.Offset, r.Length, t.exts[:0])
	}
	if err != nil {
		a.reshapeEnd(r, t)
		a.log.Error("write not mapped; the request fails", "offset", r.Offset, "length", r.Length, "err", err)
		r.Complete(-int32(unix.EIO))
		return
	}
	t.failed = t.failed[:0]
	t.shadow = t.shadow[:0]
	t.write.Waiter = r
	for i, e := range t.exts {
		if !a.writable(e.Member) {
			t.exts[i].Length = 0 // nothing goes to a member out of service: the engine skips it
		}
		t.failed = append(t.failed, t.exts[i].Length == 0)
		t.shadow = append(t.shadow, nil)
	}
	// A slot being replaced: its writes reach the replacement too, as extra extents that the
	// discard engine does not know (the replacement gets no TRIMs) and that do not count for the
	// write's result (the slot's own device is the copy until the swap).
	n := len(t.exts)
	for i := range n {
		if sh := a.shadows[t.exts[i].Member].Load(); sh != nil && !t.failed[i] {
			t.exts = append(t.exts, t.exts[i])
			t.failed = append(t.failed, false)
			t.shadow = append(t.shadow, sh)
		}
	}
	// The engine admits the slots' own extents, the plan's: the same memory, not a copy.
	t.write.Extents = t.exts[:n]
	a.admitWrite(r, t)
}

// admitWrite issues every copy of the write once the region map and the engine admit it: its
// regions are dirty on every member's disk, queued TRIMs of these bytes are gone and none is in
// flight over them. Parked, it comes back through Resume.
func (a *Array) admitWrite(r *ublk.Request, t *tagState) {
	if a.regions != nil && !a.regions.beginWrite(r, t) {
		return
	}
	if t.mapFailed {
		a.reshapeEnd(r, t)
		r.Complete(-int32(unix.EIO))
		return
	}
	if t.mapLost {
		a.regions.endWrite(r, t, false)
		a.reshapeEnd(r, t)
		r.Complete(-int32(unix.EIO))
		return
	}
	if !a.engine.BeginWrite(&t.write) {
		a.discard.parkedWrites.Add(1)
		return
	}
	t.issued = latency.Now()
	for i, e := range t.exts {
		if t.failed[i] {
			continue
		}
		if t.shadow[i] == nil && !a.writable(e.Member) {
			// Its member left while the write waited (failed, perhaps removed): the copy is
			// left out, and the write waits for that failure to be on record.
			a.engine.EndWrite(&t.write, i)
			t.failed[i] = true
			continue
		}
		// Every copy of a mirror writes from the request's same pages.
		fd := a.fd(e.Member)
		if sh := t.shadow[i]; sh != nil {
			fd = int(sh.File.Fd())
		}
		if err := r.PrepWriteFrom(fd, e.Logical-r.Offset, e.Length, a.dataOff[e.Member]+e.Offset, r.FUA, uint32(i)); err != nil {
			a.engine.EndWrite(&t.write, i)
			t.failed[i] = true
			continue
		}
		t.pending++
	}
	a.finishIfDone(r, t)
}

func (a *Array) serveFlush(r *ublk.Request, t *tagState) {
	t.exts = t.exts[:0]
	for i := range a.members {
		if !a.writable(i) {
			continue
		}
		t.exts = append(t.exts, mapping.Extent{Member: i})
		if err := r.PrepFsync(a.fd(i), true, uint32(len(t.exts)-1)); err != nil {
			t.err = -int32(unix.EIO)
			continue
		}
		t.pending++
		if sh := a.shadows[i].Load(); sh != nil {
			// A flush of the replacement too: its writes are durable by the swap. Its failure
			// is the replace's, not the request's (Reap tells by Member -1).
			t.exts = append(t.exts, mapping.Extent{Member: -1 - i})
			if r.PrepFsync(int(sh.File.Fd()), true, uint32(len(t.exts)-1)) == nil {
				t.pending++
			}
		}
	}
	a.finishIfDone(r, t)
}

func (a *Array) serveDiscard(r *ublk.Request, t *tagState) {
	var exts []mapping.Extent
	var err error
	if o := a.reshaping(); o != nil {
		p, ok := o.admit(r, t)
		if !ok {
			return // parked until the step's window is let go
		}
		exts, err = o.discard(p, r.Offset, r.Length, a.gran, t.disc.Extents[:0])
	} else {
		exts, err = a.Map().Discard(r.Offset, r.Length, a.gran, t.disc.Extents[:0])
	}
	t.disc.Extents = exts
	if err != nil {
		a.reshapeEnd(r, t)
		a.log.Error("discard not mapped; the request fails", "offset", r.Offset, "length", r.Length, "err", err)
		r.Complete(-int32(unix.EIO))
		return
	}
	// A member out of service gets nothing; the others' extents stay, in order.
	skipped := false
	t.disc.Extents = slices.DeleteFunc(t.disc.Extents, func(e mapping.Extent) bool {
		out := !a.writable(e.Member)
		skipped = skipped || out
		return out
	})
	a.discard.requests.Add(1)
	a.discard.bytes.Add(uint64(r.Length))
	a.discard.memberRanges.Add(uint64(len(t.disc.Extents)))
	t.disc.Watch = 0
	if a.regions != nil {
		// Before the engine has it: the map must know of the discard before any write that
		// follows it, and before the engine can tell it trimmed (trimDone, perhaps from within
		// Discard). A discard a member skipped trims no region.
		t.disc.Watch = a.regions.startTrim(r.Offset, r.Length, !skipped)
	}
	t.discarded = timedDiscard{r: r, start: t.start, hist: &a.lat.discard, a: a, t: t}
	t.disc.Done = &t.discarded
	a.engine.Discard(&t.disc)
}

// Reap takes the result of one member I/O; see ublk.RingTarget.
func (a *Array) Reap(r *ublk.Request, sub uint32, res int32) {
	t := a.tag(r)
	t.pending--
	i := int(sub)
	switch r.Op {
	case ublk.OpRead:
		p := &t.read.Pieces[i]
		c := t.read.Pick(i)
		err := ioResult(res, p.Length)
		took := latency.Since(t.issued)
		a.account(c.Member, ublk.OpRead, p.Length, err, took)
		refilled := a.refilled[c.Member].Load() != t.refill[i]
		if err == nil && !refilled {
			a.engine.EndReadTook(&t.read, i, took) // the member's lane learns from it
			break
		}
		if !refilled {
			a.fail(c.Member, err)
		} // else a device was installed in the slot since the read was prepared: what it read
		// may be the new device's, not rebuilt yet. Either way another copy is read; with none
		// left the request fails.
		a.widenResyncRead(p)
		a.keepReadable(p)
		if a.engine.Reread(&t.read, i) {
			a.prepRead(r, t, i)
		} else {
			t.err = -int32(unix.EIO)
		}
	case ublk.OpWrite:
		e := t.exts[i]
		err := ioResult(res, e.Length)
		took := time.Duration(-1) // not timed: the lane learns only from writes that succeeded
		if err == nil {
			took = latency.Since(t.issued)
		}
		a.engine.EndWriteTook(&t.write, i, took)
		if t.shadow[i] != nil {
			if err != nil {
				a.replacementFailed(e.Member, t.shadow[i], err)
			}
			break
		}
		a.account(e.Member, ublk.OpWrite, e.Length, err, took)
		if err != nil {
			t.failed[i] = true
			a.fail(e.Member, err)
		}
	case ublk.OpFlush:
		if m := t.exts[i].Member; m < 0 {
			if res < 0 {
				if sh := a.shadows[-1-m].Load(); sh != nil {
					a.replacementFailed(-1-m, sh, unix.Errno(-res))
				}
			}
		} else if res < 0 {
			// The member's failure, not the flush's, while another copy of everything is left
			// (finishIfDone): what the flush made durable is durable where the data is read.
			a.fail(m, unix.Errno(-res))
			t.flushLost = true
		}
	}
	a.finishIfDone(r, t)
}

func (a *Array) finishIfDone(r *ublk.Request, t *tagState) {
	if t.pending > 0 {
		return
	}
	a.reshapeEnd(r, t) // its member I/O is over
	switch r.Op {
	case ublk.OpWrite:
		res := a.writeResult(r, t)
		if a.regions != nil {
			ok := true
			for i, f := range t.failed {
				ok = ok && (!f || t.shadow[i] != nil)
			}
			a.regions.endWrite(r, t, ok)
		}
		if !a.failuresRecorded() && a.leftOutCopy(t) && !plant.Is("C") {
			// A copy this write left out must be on record as failed before the write is
			// acknowledged, or a crash could bring the stale copy back as current. Superblock
			// writes block: off the queue goroutine. Not on record, the write is not done.
			go a.completeRecorded(r, t.start, res, &a.lat.write)
			return
		}
		a.observe(&a.lat.write, t.start, res)
		r.Complete(res)
	case ublk.OpRead:
		if t.err != 0 {
			r.Complete(t.err)
			return
		}
		a.observe(&a.lat.read, t.start, int32(r.Length))
		r.Complete(int32(r.Length))
	case ublk.OpFlush:
		switch {
		case t.err == 0 && t.flushLost && !a.readable():
			r.Complete(-int32(unix.EIO)) // some data is durable nowhere it can be read
		case t.err == 0 && !a.failuresRecorded() && (t.flushLost || !plant.Is("flushrec")):
			// As a write that left out a copy: a member out of service, whether this flush
			// failed it or it failed before, was left out, and its cache may still hold writes
			// it took before. It must be on record as failed, or a crash could bring it back
			// as current without data this flush said was durable.
			go a.completeRecorded(r, t.start, 0, nil)
		default:
			r.Complete(t.err)
		}
	default:
		r.Complete(t.err)
	}
}

// completeRecorded completes a write (or a flush) once the failures it depends on are on
// record; h, when not nil, times it.
func (a *Array) completeRecorded(r *ublk.Request, start latency.Stamp, res int32, h *latency.Histogram) {
	if err := a.recordFailures(); err != nil {
		a.log.Error("member failure not on record; the request fails", "err", err)
		res = -int32(unix.EIO)
	}
	if h != nil {
		a.observe(h, start, res)
	}
	r.Complete(res)
}

// leftOutCopy reports whether the write left out a copy of some piece: a member out of service,
// or one that failed it.
func (a *Array) leftOutCopy(t *tagState) bool {
	for i, f := range t.failed {
		if f && t.shadow[i] == nil {
			return true
		}
	}
	return false
}

// writeResult succeeds when every logical piece reached at least one copy.
func (a *Array) writeResult(r *ublk.Request, t *tagState) int32 {
	for i, e := range t.exts {
		if !t.failed[i] {
			continue
		}
		saved := false
		for j, o := range t.exts {
			if j != i && !t.failed[j] && t.shadow[j] == nil && o.Logical == e.Logical {
				saved = true
				break
			}
		}
		if !saved {
			return -int32(unix.EIO)
		}
	}
	return int32(r.Length)
}

func ioResult(res int32, want int64) error {
	switch {
	case res < 0:
		return unix.Errno(-res)
	case int64(res) != want:
		return unix.EIO // members are whole-sized: a short transfer is a device problem
	}
	return nil
}

func (a *Array) account(member int, op ublk.Op, n int64, err error, took time.Duration) {
	s := &a.stats[member]
	if err != nil {
		s.errors.Add(1)
		return
	}
	if op == ublk.OpRead {
		s.reads.Add(1)
		s.readBytes.Add(uint64(n))
		s.readLat.Observe(took)
	} else {
		s.writes.Add(1)
		s.writeBytes.Add(uint64(n))
		s.writeLat.Observe(took)
	}
}

// observe records the latency of a request that completes with res, if it succeeded.
func (a *Array) observe(h *latency.Histogram, start latency.Stamp, res int32) {
	if res >= 0 {
		h.Observe(latency.Since(start))
	}
}

// accountSync counts a member read or write of the sync worker.
func (a *Array) accountSync(member int, write bool, n int64, err error) {
	s := &a.stats[member]
	switch {
	case err != nil:
		s.errors.Add(1)
	case write:
		s.syncWriteBytes.Add(uint64(n))
	default:
		s.syncReadBytes.Add(uint64(n))
	}
}

// userIO counts the user's member reads and writes so far, for the sync worker to yield to.
func (a *Array) userIO() uint64 {
	var n uint64
	for i := range a.stats {
		n += a.stats[i].reads.Load() + a.stats[i].writes.Load()
	}
	return n
}

// fd is member's descriptor; -1 (the I/O fails) for a slot emptied meanwhile.
func (a *Array) fd(member int) int {
	if m := a.members[member]; m != nil {
		return int(m.File.Fd())
	}
	return -1
}
