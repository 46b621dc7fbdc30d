package raid

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"uraid/discard"
	"uraid/mapping"
	"uraid/ublk"
)

// The array serves its ublk device as a ublk.RingTarget: reads, writes and flushes of members are
// submitted on the queue's own io_uring and complete in Reap, on the queue goroutine, so the hot
// path needs no other goroutine, lock or allocation. Discards go to the discard engine, whose
// goroutines complete them.

// Per-tag state. A queue's tags are touched only by that queue's goroutine, except that a
// discard's completion runs on an engine goroutine after the queue has let go of the tag.
type tagState struct {
	pieces  []mapping.Piece  // READ: the logical pieces and their copies
	copyIdx []int            // READ: which copy of each piece is being read
	exts    []mapping.Extent // WRITE and FLUSH: one per member I/O
	failed  []bool           // WRITE: which extents failed
	ranges  []discard.Range  // DISCARD: the member ranges handed to the engine
	pending int              // member I/Os not yet reaped
	err     int32            // first negative errno, or 0
	newFail bool             // WRITE: a member failed during this request
}

// Most requests touch a handful of members; the slices grow on the first bigger one and stay.
const tagPrealloc = 8

func (t *tagState) init() {
	t.pieces = make([]mapping.Piece, 0, 2)
	t.copyIdx = make([]int, 0, tagPrealloc)
	t.exts = make([]mapping.Extent, 0, tagPrealloc)
	t.failed = make([]bool, 0, tagPrealloc)
	t.ranges = make([]discard.Range, 0, tagPrealloc)
}

// memberStats counts a member's I/O; the daemon reads it while queues write it.
type memberStats struct {
	reads, writes, readBytes, writeBytes, errors atomic.Uint64
}

// Params describes the array's block device.
func (a *Array) Params() ublk.Params {
	lbs := int64(512)
	var gran int64
	for i, m := range a.members {
		if m == nil {
			continue
		}
		lbs = max(lbs, m.LogicalBlock)
		gran = max(gran, a.gran[i].Bytes)
	}
	p := ublk.Params{
		Size:              a.m.Size(),
		LogicalBlockSize:  uint32(lbs),
		PhysicalBlockSize: uint32(max(lbs, 4096)),
		// Members may cache writes: FLUSH and FUA must reach them.
		VolatileCache: true,
		FUA:           true,
	}
	if c := a.m.ChunkBytes(); c > 0 {
		// Reads and writes never straddle a chunk, so each maps to one extent per copy.
		p.ChunkSize = uint32(c)
		p.IOMin = uint32(c)
		if w := c * int64(a.m.Members()/a.m.Copies()); w&(w-1) == 0 && a.m.Members()%a.m.Copies() == 0 {
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
	t.pending, t.err, t.newFail = 0, 0, false
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

func (a *Array) serveRead(r *ublk.Request, t *tagState) {
	var err error
	t.pieces, err = a.m.Read(r.Offset, r.Length, t.pieces[:0])
	if err != nil {
		r.Complete(-int32(unix.EIO))
		return
	}
	// Copies of a range with a pending discard may disagree until every copy is trimmed; such a
	// read waits, which would block the queue: it finishes on its own goroutine.
	for i := range t.pieces {
		p := &t.pieces[i]
		for _, e := range p.Copies[:p.N] {
			if ok, _ := a.engine.TryRead(e.Member, e.Offset, e.Length); !ok {
				go a.slowRead(r, t)
				return
			}
		}
	}
	t.copyIdx = t.copyIdx[:0]
	for i := range t.pieces {
		t.copyIdx = append(t.copyIdx, 0)
		a.readNextCopy(r, t, i)
	}
	a.finishIfDone(r, t)
}

// pickCopy chooses the copy of piece p to read: an active member, the one whose TRIMs would delay
// the read least (discard.Engine.Stall), trying copies from start on (mod N) so that successive
// reads spread over the mirrors. A member with TRIMs to do is thereby left to do them, and a read
// does not wait behind a SATA SSD's TRIM while its mirror is free. A copy whose read failed has
// had its member failed, so calling it again fails over. It returns -1 when no copy is left.
func (a *Array) pickCopy(p *mapping.Piece, start int) int {
	pick, least := -1, discard.MaxStall+1
	for k := range p.N {
		c := (start + k) % p.N
		m := p.Copies[c].Member
		if !a.active(m) {
			continue
		}
		if s := a.engine.Stall(m); s < least {
			pick, least = c, s
			if s == 0 {
				break
			}
		}
	}
	return pick
}

// readNextCopy reads piece i from the next copy that can serve it; with no copy left the request
// fails.
func (a *Array) readNextCopy(r *ublk.Request, t *tagState, i int) {
	p := &t.pieces[i]
	// Round robin per queue: only the queue goroutine counts, so no atomics are needed.
	a.readTurn[r.Queue]++
	c := a.pickCopy(p, int(a.readTurn[r.Queue]%uint32(p.N)))
	if c < 0 {
		t.err = -int32(unix.EIO)
		return
	}
	if a.engine.StartIO(p.Copies[c].Member) {
		// A TRIM started since pickCopy looked: choose again with it counted.
		if c2 := a.pickCopy(p, c+1); c2 >= 0 && c2 != c {
			a.engine.EndIO(p.Copies[c].Member)
			c = c2
			a.engine.StartIO(p.Copies[c].Member)
		}
	}
	t.copyIdx[i] = c
	e := p.Copies[c]
	buf := r.Buf[p.Logical-r.Offset : p.Logical-r.Offset+p.Length]
	if err := r.PrepRead(a.fd(e.Member), buf, a.dataOff[e.Member]+e.Offset, uint32(i)); err != nil {
		a.engine.EndIO(e.Member)
		t.err = -int32(unix.EIO)
		return
	}
	t.pending++
}

// slowRead serves a read that must wait for pending discards, with plain syscalls.
func (a *Array) slowRead(r *ublk.Request, t *tagState) {
	for i := range t.pieces {
		p := &t.pieces[i]
		for _, e := range p.Copies[:p.N] {
			_ = a.engine.WaitRead(e.Member, e.Offset, e.Length)
		}
	}
	for i := range t.pieces {
		p := &t.pieces[i]
		buf := r.Buf[p.Logical-r.Offset : p.Logical-r.Offset+p.Length]
		for c := a.pickCopy(p, 0); ; c = a.pickCopy(p, 0) {
			if c < 0 {
				r.Complete(-int32(unix.EIO))
				return
			}
			e := p.Copies[c]
			n, err := unix.Pread(a.fd(e.Member), buf, a.dataOff[e.Member]+e.Offset)
			if err == nil && int64(n) != e.Length {
				err = unix.EIO
			}
			a.account(e.Member, ublk.OpRead, e.Length, err)
			if err == nil {
				break
			}
			a.fail(e.Member, err)
		}
	}
	r.Complete(int32(r.Length))
}

func (a *Array) serveWrite(r *ublk.Request, t *tagState) {
	var err error
	t.exts, err = a.m.Write(r.Offset, r.Length, t.exts[:0])
	if err != nil {
		r.Complete(-int32(unix.EIO))
		return
	}
	t.failed = t.failed[:0]
	wait := false
	for _, e := range t.exts {
		t.failed = append(t.failed, false)
		// A queued TRIM of these bytes must not run after the write lands: TryWrite drops it.
		// A TRIM already in flight may land after the write: the write must wait for it.
		if ok, _ := a.engine.TryWrite(e.Member, e.Offset, e.Length); !ok {
			wait = true
		}
	}
	if wait {
		go a.slowWrite(r, t)
		return
	}
	for i, e := range t.exts {
		if !a.active(e.Member) {
			t.failed[i] = true
			continue
		}
		buf := r.Buf[e.Logical-r.Offset : e.Logical-r.Offset+e.Length]
		a.engine.StartIO(e.Member)
		if err := r.PrepWrite(a.fd(e.Member), buf, a.dataOff[e.Member]+e.Offset, r.FUA, uint32(i)); err != nil {
			a.engine.EndIO(e.Member)
			t.failed[i] = true
			continue
		}
		t.pending++
	}
	a.finishIfDone(r, t)
}

// slowWrite waits for the TRIMs in flight that the write overlaps, then writes every copy with
// plain syscalls, off the queue goroutine.
func (a *Array) slowWrite(r *ublk.Request, t *tagState) {
	for _, e := range t.exts {
		_ = a.engine.WaitWrite(e.Member, e.Offset, e.Length)
	}
	for i, e := range t.exts {
		if !a.active(e.Member) {
			t.failed[i] = true
			continue
		}
		buf := r.Buf[e.Logical-r.Offset : e.Logical-r.Offset+e.Length]
		flags := 0
		if r.FUA {
			flags = unix.RWF_DSYNC
		}
		n, err := unix.Pwritev2(a.fd(e.Member), [][]byte{buf}, a.dataOff[e.Member]+e.Offset, flags)
		if err == nil && int64(n) != e.Length {
			err = unix.EIO
		}
		a.account(e.Member, ublk.OpWrite, e.Length, err)
		if err != nil {
			t.failed[i] = true
			t.newFail = true
			a.fail(e.Member, err)
		}
	}
	res := a.writeResult(r, t)
	if t.newFail {
		_ = a.writeSuperblocks(StateDirty)
	}
	r.Complete(res)
}

func (a *Array) serveFlush(r *ublk.Request, t *tagState) {
	t.exts = t.exts[:0]
	for i := range a.members {
		if !a.active(i) {
			continue
		}
		t.exts = append(t.exts, mapping.Extent{Member: i})
		if err := r.PrepFsync(a.fd(i), true, uint32(len(t.exts)-1)); err != nil {
			t.err = -int32(unix.EIO)
			continue
		}
		t.pending++
	}
	a.finishIfDone(r, t)
}

func (a *Array) serveDiscard(r *ublk.Request, t *tagState) {
	exts, err := a.m.Discard(r.Offset, r.Length, a.gran, t.exts[:0])
	t.exts = exts
	if err != nil {
		r.Complete(-int32(unix.EIO))
		return
	}
	t.ranges = t.ranges[:0]
	var bytes int64
	for _, e := range exts {
		if !a.active(e.Member) {
			continue
		}
		t.ranges = append(t.ranges, discard.Range{Member: e.Member, Off: e.Offset, Len: e.Length})
		bytes += e.Length
	}
	a.discard.requests.Add(1)
	a.discard.bytes.Add(uint64(r.Length))
	a.discard.memberRanges.Add(uint64(len(t.ranges)))
	if len(t.ranges) == 0 {
		r.Complete(0)
		return
	}
	a.engine.Discard(t.ranges, r.Done)
}

// Reap takes the result of one member I/O; see ublk.RingTarget.
func (a *Array) Reap(r *ublk.Request, sub uint32, res int32) {
	t := a.tag(r)
	t.pending--
	i := int(sub)
	switch r.Op {
	case ublk.OpRead:
		p := &t.pieces[i]
		e := p.Copies[t.copyIdx[i]]
		a.engine.EndIO(e.Member)
		err := ioResult(res, p.Length)
		a.account(e.Member, ublk.OpRead, p.Length, err)
		if err != nil {
			a.fail(e.Member, err)
			a.readNextCopy(r, t, i) // fail over; sets t.err when no copy is left
		}
	case ublk.OpWrite:
		e := t.exts[i]
		a.engine.EndIO(e.Member)
		err := ioResult(res, e.Length)
		a.account(e.Member, ublk.OpWrite, e.Length, err)
		if err != nil {
			t.failed[i] = true
			t.newFail = true
			a.fail(e.Member, err)
		}
	case ublk.OpFlush:
		if res < 0 {
			a.fail(t.exts[i].Member, unix.Errno(-res))
			t.err = res
		}
	}
	a.finishIfDone(r, t)
}

func (a *Array) finishIfDone(r *ublk.Request, t *tagState) {
	if t.pending > 0 {
		return
	}
	switch r.Op {
	case ublk.OpWrite:
		res := a.writeResult(r, t)
		if t.newFail {
			// A failed copy must be on record as failed before the write is acknowledged, or a
			// crash could bring the stale copy back as current. Superblock writes block: off the
			// queue goroutine.
			go func() {
				_ = a.writeSuperblocks(StateDirty)
				r.Complete(res)
			}()
			return
		}
		r.Complete(res)
	case ublk.OpRead:
		if t.err != 0 {
			r.Complete(t.err)
			return
		}
		r.Complete(int32(r.Length))
	default:
		r.Complete(t.err)
	}
}

// writeResult succeeds when every logical piece reached at least one copy.
func (a *Array) writeResult(r *ublk.Request, t *tagState) int32 {
	for i, e := range t.exts {
		if !t.failed[i] {
			continue
		}
		saved := false
		for j, o := range t.exts {
			if j != i && !t.failed[j] && o.Logical == e.Logical {
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

func (a *Array) account(member int, op ublk.Op, n int64, err error) {
	s := &a.stats[member]
	if err != nil {
		s.errors.Add(1)
		return
	}
	if op == ublk.OpRead {
		s.reads.Add(1)
		s.readBytes.Add(uint64(n))
	} else {
		s.writes.Add(1)
		s.writeBytes.Add(uint64(n))
	}
}

func (a *Array) fd(member int) int { return int(a.members[member].File.Fd()) }
