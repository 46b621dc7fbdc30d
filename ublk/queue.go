package ublk

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
	"uraid/internal/uring"
	"uraid/internal/verify"
)

// user_data of every SQE on a queue ring says who its completion is for:
// the top byte is the kind, the rest depends on it.
const (
	udKindShift = 56
	udIO        = 1 << udKindShift // FETCH / COMMIT_AND_FETCH; low 16 bits: tag
	udWake      = 2 << udKindShift // poll on the wake eventfd
	udTarget    = 3 << udKindShift // target I/O; bits 32-47: tag, low 32: sub
	udBuf       = 4 << udKindShift // REGISTER/UNREGISTER_IO_BUF; low 16 bits: tag
	udBufUnreg  = 1 << 16          // with udBuf: the unregister
)

// Per-tag states, owned by the queue goroutine.
const (
	tagFetching uint8 = iota // a FETCH or COMMIT_AND_FETCH is outstanding
	tagServing               // the target holds the request
	tagAborted               // the kernel cancelled the fetch: never reissue
	tagWithheld              // the request arrived while draining: withheld from the target
)

// queue serves one hardware queue. Everything but the fields marked
// otherwise is owned by the queue goroutine (run), which is locked to its OS
// thread for the life of the device because the driver binds the queue to
// the thread that fetched on it.
type queue struct {
	id     uint16
	depth  int
	charFd int32
	target Target
	rt     RingTarget // target's ring side, or nil
	// size is the device's size in bytes; UpdateSize changes it while the queue serves.
	size atomic.Int64

	ring    *uring.Ring
	iods    []uapi.IODesc // shared with the kernel, read-only; views descMem
	descMem []byte
	// mode says how request data moves. In modeCopy every tag has a
	// buffer in bufs (views of bufMem, an anonymous mmap) that the kernel
	// copies to and from. In the zero-copy modes there are no buffers:
	// the request's pages sit at index tag of the ring's buffer table,
	// and fixed I/O addresses them by offset from fixedBase[tag] (nil:
	// 0, the kernel's registration; the Harness registers its own
	// buffers there instead).
	mode      dataMode
	maxIO     int
	bufs      [][]byte
	bufMem    []byte
	fixedBase []uint64
	// copyFixed is, in copy mode, how many bytes at the head of each
	// tag's buffer are registered as fixed buffer tag (0: none). Member
	// I/O that fits in them is READ_FIXED or WRITE_FIXED, whose pages
	// the kernel pinned once, instead of pinning them on every I/O
	// (registerCopyBuffers).
	copyFixed int64
	// ownReg[tag] is true while this queue, not the kernel, has the
	// tag's request registered: it unregisters it before the commit.
	// canRegister says the device has UBLK_F_SUPPORT_ZERO_COPY, without
	// which only the kernel registers.
	ownReg      []bool
	canRegister bool
	reqs        []Request
	state       []uint8
	// serving counts tags in state tagServing; aborted those in
	// tagAborted; withheld those in tagWithheld.
	serving, aborted, withheld int
	// reported is the drain request this queue has answered.
	reported *drainRequest

	// held[tag] is true from dispatch until the target's first
	// completion of that request; any goroutine may clear it.
	held []atomic.Bool
	// done is filled by any goroutine (Request.Complete) and drained by
	// the queue goroutine.
	done completions
	// resumes lists held requests a target wants to carry on with on the
	// queue goroutine (Request.Resume); res is unused. rs is the target's
	// Resumer side, or nil.
	resumes completions
	rs      Resumer
	// sleeping is 1 while the queue goroutine is about to block or is
	// blocked in io_uring_enter, 2 once a completer has written the
	// eventfd for that sleep; 0 otherwise. It keeps completers from
	// paying a write(2) when the queue will look at done anyway.
	sleeping atomic.Uint32
	// stopping is set by Device.stop after STOP_DEV: exit once the
	// target holds no request, even if the kernel left fetches pending.
	stopping atomic.Bool
	// draining, when not nil, withholds new requests from the target
	// (tagWithheld) and asks the queue to say on draining.done once the
	// target holds none. Device.Drain sets it, Device.EndDrain clears it,
	// and the withheld requests are then served.
	draining atomic.Pointer[drainRequest]
	// abandon is set by Device.Abandon: close the ring, without any
	// stop, once the target holds no request.
	abandon atomic.Bool
	// fault, when set, ends the queue with that error (Device.FailQueue).
	fault atomic.Pointer[error]
	// waker's eventfd has a poll armed in the ring, so a write from any
	// goroutine ends the queue's io_uring_enter.
	waker *uring.Waker
	// kicking counts completers between their push and the end of their
	// wake: close waits for them, or a late wake could write to the
	// eventfd's number after it was closed and reused.
	kicking atomic.Int32

	// batch, when set, is the state of the batch I/O commands, which
	// replace FETCH and COMMIT_AND_FETCH (batch.go).
	batch *batch
	// commitBlocked is set when commitDone left finished requests in
	// done because both commit buffers were still with the kernel: wait
	// must then sleep for a commit's CQE instead of returning to them.
	commitBlocked bool

	// enters counts the io_uring_enter calls of the queue's ring (its
	// only one on the hot path), tid is the thread the queue goroutine is
	// locked to: both for QueueCounts, read from other goroutines.
	enters atomic.Uint64
	tid    atomic.Int32
	// yielded is when the queue goroutine last passed through the
	// scheduler (yieldEvery).
	yielded time.Time
	yields  int // how many; for tests

	// err is why the queue goroutine stopped early; read after it exits.
	err error

	// parked is closed when the queue stops serving on its own (park);
	// release, closed by the Device, lets a parked queue close its ring
	// and end; gone is closed when the queue goroutine has ended. started
	// and released are the Device's, under its mutex.
	parked, release, gone chan struct{}
	started, released     bool
}

func newQueue(id uint16, depth int, target Target, size int64) *queue {
	q := &queue{
		id:      id,
		depth:   depth,
		charFd:  -1,
		target:  target,
		reqs:    make([]Request, depth),
		state:   make([]uint8, depth),
		held:    make([]atomic.Bool, depth),
		bufs:    make([][]byte, depth),
		ownReg:  make([]bool, depth),
		done:    newCompletions(depth),
		resumes: newCompletions(depth),
		parked:  make(chan struct{}),
		release: make(chan struct{}),
		gone:    make(chan struct{}),
	}
	q.rt, _ = target.(RingTarget)
	q.rs, _ = target.(Resumer)
	for tag := range q.reqs {
		q.reqs[tag] = Request{Queue: id, Tag: uint16(tag), q: q}
	}
	q.size.Store(size)
	return q
}

// queueRingFlags set up a queue ring for the one thread that ever touches
// it: no locking for several submitters, and completions (the kernel's
// requests included) processed only when that thread waits, instead of
// interrupting it.
var queueRingFlags uint32 = uapi.IORING_SETUP_COOP_TASKRUN | uapi.IORING_SETUP_SINGLE_ISSUER | uapi.IORING_SETUP_DEFER_TASKRUN

// ringEntries sizes a queue ring: a commit per tag plus the target's own
// I/O and the wake poll fit without forcing an early submit.
func ringEntries(depth int) uint32 {
	n := uint32(1)
	for n < uint32(2*depth+1) {
		n <<= 1
	}
	return n
}

// complete records res for tag and, if the queue goroutine is asleep in
// the kernel, wakes it. Safe from any goroutine; does not allocate.
func (q *queue) complete(tag uint16, res int32) {
	// A second completion of the same request (a target bug) would link
	// the tag into the stack twice and loop it; drop it instead.
	if !q.held[tag].CompareAndSwap(true, false) {
		if verify.On {
			panic(fmt.Sprintf("ublk queue %d tag %d: request completed twice", q.id, tag))
		}
		return
	}
	q.kicking.Add(1)
	q.done.push(tag, res)
	q.kick()
	q.kicking.Add(-1)
}

// resume hands tag back to the queue goroutine, which calls the target's
// Resume with it. Safe from any goroutine; does not allocate.
func (q *queue) resume(tag uint16) {
	if verify.On {
		verify.Check(q.held[tag].Load(), "ublk queue %d tag %d: resume of a request the target does not hold", q.id, tag)
		verify.Check(q.rs != nil, "ublk queue %d: %T resumes a request but has no Resume method", q.id, q.target)
	}
	q.kicking.Add(1)
	q.resumes.push(tag, 0)
	q.kick()
	q.kicking.Add(-1)
}

// kick wakes the queue goroutine if it is asleep in the kernel. Dekker-style
// handshake with wait: the queue sets sleeping before its last look at done
// and resumes, a completer pushes before it looks at sleeping, so at least
// one of them sees the other.
func (q *queue) kick() {
	if q.sleeping.CompareAndSwap(1, 2) {
		_ = q.waker.Wake() // fails only on a closed eventfd: the queue is gone
	}
}

// run is the queue goroutine. ready receives nil once every tag has a
// FETCH submitted (the precondition of START_DEV), or the setup error.
//
// failed is called with the error that ended a queue that had been
// serving, before it parks (see park); a queue that ends because the
// device stopped or was abandoned does not call it.
func (q *queue) run(ready chan<- error, failed func(error)) {
	defer close(q.gone)
	// The driver binds the queue to this thread. Never unlocked: when run
	// returns the thread exits with it, which is what the kernel expects
	// of a queue whose device is gone.
	runtime.LockOSThread()
	q.tid.Store(int32(unix.Gettid()))

	// Writeback to this device may wait on this thread; without the flag
	// its own allocations could recurse into that writeback and deadlock.
	// Best effort: older kernels and unprivileged callers lack it.
	_ = unix.Prctl(unix.PR_SET_IO_FLUSHER, 1, 0, 0, 0)

	ring, err := uring.New(ringEntries(q.depth), uring.WithFlags(queueRingFlags), uring.WithEnterCounter(&q.enters))
	if err != nil {
		ready <- fmt.Errorf("ublk queue %d: %w", q.id, err)
		return
	}
	q.ring = ring
	defer func() {
		// Closing the ring cancels any fetch still outstanding, which
		// is how the kernel learns this queue is gone.
		if cerr := ring.Close(); cerr != nil && q.err == nil {
			q.err = fmt.Errorf("ublk queue %d: %w", q.id, cerr)
		}
		// After the ring, whose close cancelled the fetch that selects
		// from it: only unmaps what is left.
		if q.batch != nil && q.batch.ring != nil {
			_ = q.batch.ring.Close()
		}
	}()
	if q.mode.zeroCopy() {
		// The driver registers requests into this ring's table, one
		// slot per tag; it must exist before the first fetch.
		if err := ring.RegisterBuffersSparse(uint32(q.depth)); err != nil {
			ready <- fmt.Errorf("ublk queue %d: zero copy: %w", q.id, err)
			return
		}
	} else {
		q.registerCopyBuffers(ring)
	}

	if q.batch != nil {
		if err := q.startBatch(); err != nil {
			ready <- err
			return
		}
	} else {
		for tag := range q.depth {
			if err := q.prepIO(uapi.UBLK_U_IO_FETCH_REQ, uint16(tag), 0); err != nil {
				ready <- err
				return
			}
		}
	}
	if err := q.armWake(); err != nil {
		ready <- err
		return
	}
	if q.batch != nil {
		// PREP completes as it is issued; START_DEV needs it done.
		if err := q.awaitPrep(); err != nil {
			ready <- err
			return
		}
	} else if _, err := q.ring.Submit(); err != nil {
		ready <- fmt.Errorf("ublk queue %d: submit fetches: %w", q.id, err)
		return
	}
	ready <- nil
	if q.err = q.loop(); q.err != nil {
		q.park(failed)
	}
}

// park holds a queue that stopped serving on its own (its ring failed, or
// FailQueue) while the device is live: its ring stays open and its
// goroutine on its thread until the Device releases it (Stop, Abandon) or
// the process exits. Closing the ring, or ending the thread, is what tells
// the driver that the queue's server is gone, and for this one queue alone
// while the others serve that is not a state the 6.12 driver recovers from
// reliably: it aborts the requests the server held, but requests it was
// handing to the queue as it went were seen to stay started for good
// (ublk's quiesce, which waits for every started request of the device,
// then never ends, the device never quiesces and no successor can take it
// over). A server whose device failed therefore exits with every queue
// still open (Device.Settle first), and the kernel tears them down
// together, as it does for a server that was killed.
func (q *queue) park(failed func(error)) {
	close(q.parked)
	failed(q.err)
	<-q.release
}

// releaseOnce closes release, once; for the Device, under its mutex.
func (q *queue) releaseOnce() {
	if !q.released {
		q.released = true
		close(q.release)
	}
}

// loop commits finished requests, waits for the kernel and dispatches what
// it returns, until every tag is aborted, or the device is stopping or
// abandoned and the target holds nothing.
func (q *queue) loop() error {
	q.yielded = queueClock()
	for {
		if err := q.commitDone(); err != nil {
			return err
		}
		if err := q.fault.Load(); err != nil {
			return *err
		}
		if err := q.checkDrain(); err != nil {
			return err
		}
		if q.ended() || (q.stopping.Load() && q.serving == 0) {
			return nil
		}
		if q.abandon.Load() && q.serving == 0 {
			// The commits just queued must reach the kernel: a request
			// whose commit is lost with the ring would be reissued to
			// the successor (or failed) although it is done.
			if _, err := q.ring.Submit(); err != nil {
				return fmt.Errorf("ublk queue %d: submit last commits: %w", q.id, err)
			}
			return nil
		}
		if err := q.wait(); err != nil {
			return err
		}
		q.maybeYield()
	}
}

// maybeYield passes through the scheduler when yieldEvery has passed since
// the last time.
func (q *queue) maybeYield() {
	if now := queueClock(); now.Sub(q.yielded) >= yieldEvery {
		q.yielded = now
		q.yields++
		runtime.Gosched()
	}
}

// queueClock is time.Now; tests replace it.
var queueClock = time.Now

// yieldEvery is how often a busy queue goroutine passes through the Go
// scheduler. It otherwise never does: it only ever blocks in system calls,
// so the runtime sees one goroutine running on its P for ever, and once it
// has for 10 ms (the runtime's preemption slice) the monitor thread takes
// the P from it every time it finds it in io_uring_enter, however short the
// wait; the thread then gets a P back on its way out and wakes the sleeping
// monitor to do it again: about one more context switch per request, in a
// thread that does no serving (measured: make bench, scenario j). A yield of
// this locked goroutine costs two switches (another thread takes the P and
// hands it back), so it is made as rarely as keeps the slice fresh.
const yieldEvery = 8 * time.Millisecond

// drainRequest is one Device.Drain: each queue sends its id on done, once,
// when the target holds none of its requests.
type drainRequest struct{ done chan uint16 }

// checkDrain follows Drain and EndDrain: while draining, it reports once
// the target holds nothing (with the last commits submitted, so the kernel
// has them); once the drain ends, it serves the requests withheld.
func (q *queue) checkDrain() error {
	p := q.draining.Load()
	if p == nil {
		q.reported = nil
		for tag := 0; q.withheld > 0 && tag < q.depth; tag++ {
			if q.state[tag] == tagWithheld {
				q.withheld--
				q.dispatch(uint16(tag))
			}
		}
		return nil
	}
	if q.serving == 0 && q.reported != p {
		if _, err := q.ring.Submit(); err != nil {
			return fmt.Errorf("ublk queue %d: submit commits before the drain: %w", q.id, err)
		}
		q.reported = p
		p.done <- q.id // buffered for every queue: never blocks
	}
	return nil
}

// wait submits what is queued, sleeps in the kernel until a completion
// arrives unless a target has already finished a request, and handles the
// completions.
func (q *queue) wait() error {
	q.sleeping.Store(1)
	if (!q.done.empty() && !q.commitBlocked) || !q.resumes.empty() {
		q.sleeping.Store(0)
		return nil
	}
	// One completion more per batch commit in flight, whose own CQEs
	// do not count; while finished requests wait for a commit buffer,
	// those CQEs are all it waits for.
	n := uint32(1)
	if q.batch != nil {
		n += uint32(q.batch.unreaped)
		if q.commitBlocked {
			n = uint32(q.batch.unreaped)
		}
	}
	_, err := q.ring.SubmitAndWait(n)
	q.sleeping.Store(0)
	if err != nil {
		return fmt.Errorf("ublk queue %d: %w", q.id, err)
	}
	return q.reap()
}

// reap handles every completion waiting in the ring.
func (q *queue) reap() error {
	for {
		cqe, ok := q.ring.PeekCQE()
		if !ok {
			return nil
		}
		ud, res, flags := cqe.UserData, cqe.Res, cqe.Flags
		q.ring.AdvanceCQ(1)
		switch ud & (0xff << udKindShift) {
		case udIO:
			q.onIO(uint16(ud), res)
		case udWake:
			if err := q.onWake(res); err != nil {
				return err
			}
		case udTarget:
			tag := uint16(ud >> 32)
			if int(tag) < q.depth && q.rt != nil {
				q.rt.Reap(&q.reqs[tag], uint32(ud), res)
			}
		case udBuf:
			if err := q.onBuf(uint16(ud), ud&udBufUnreg != 0, res); err != nil {
				return err
			}
		case udBatch:
			if err := q.onBatch(ud, res, flags); err != nil {
				return err
			}
		}
	}
}

// onIO handles the completion of a FETCH or COMMIT_AND_FETCH: a new
// request for tag, or the end of the tag.
func (q *queue) onIO(tag uint16, res int32) {
	if int(tag) >= q.depth || q.state[tag] != tagFetching {
		return
	}
	if res == uapi.UBLK_IO_RES_OK {
		q.arrived(tag)
		return
	}
	// ABORT (-ENODEV) is the device going away. Any other error means
	// the driver refused the command; the tag is unusable either way.
	q.state[tag] = tagAborted
	q.aborted++
	if res != uapi.UBLK_IO_RES_ABORT && q.err == nil {
		q.err = fmt.Errorf("ublk queue %d tag %d: fetch refused: %w", q.id, tag, unix.Errno(-res))
	}
}

// arrived takes the new request of a fetching tag: to the target, or
// withheld while draining.
func (q *queue) arrived(tag uint16) {
	if q.draining.Load() != nil {
		// The kernel owns nothing of it now: it stays with this
		// server, to be served on EndDrain or, if the server leaves
		// the device, reissued to its successor.
		q.state[tag] = tagWithheld
		q.withheld++
		return
	}
	q.dispatch(tag)
}

// ended reports whether the kernel will send this queue nothing more and
// the target holds nothing: every tag aborted, or (batch I/O) the fetch
// ended for good.
func (q *queue) ended() bool {
	if q.batch != nil {
		return q.batch.dead && q.serving == 0
	}
	return q.aborted == q.depth
}

// dispatch decodes the descriptor the kernel wrote for tag and hands the
// request to the target.
func (q *queue) dispatch(tag uint16) {
	iod := &q.iods[tag]
	opFlags, nr, start := iod.OpFlags, iod.NrSectors, iod.StartSector

	r := &q.reqs[tag]
	r.Offset = int64(start << 9)
	r.Length = int64(nr) << 9
	r.FUA = opFlags&uapi.UBLK_IO_F_FUA != 0
	r.NoUnmap = false
	r.Buf = nil
	q.state[tag] = tagServing
	q.held[tag].Store(true)
	q.serving++

	switch uint8(opFlags) {
	case uapi.UBLK_IO_OP_READ:
		r.Op = OpRead
	case uapi.UBLK_IO_OP_WRITE:
		r.Op = OpWrite
	case uapi.UBLK_IO_OP_FLUSH:
		// A flush has no range; its sector field is whatever the
		// block layer's reused flush request last held.
		r.Op = OpFlush
		r.Offset, r.Length = 0, 0
		q.target.Serve(r)
		return
	case uapi.UBLK_IO_OP_DISCARD:
		r.Op = OpDiscard
	case uapi.UBLK_IO_OP_WRITE_ZEROES:
		r.Op = OpWriteZeroes
		r.NoUnmap = opFlags&uapi.UBLK_IO_F_NOUNMAP != 0
	default:
		q.complete(tag, -int32(unix.EOPNOTSUPP))
		return
	}
	// The block layer never sends a range past the end of the device, and
	// max_sectors keeps reads and writes within the tag's buffer. Targets
	// may rely on both, so a descriptor that says otherwise is failed here
	// rather than trusted.
	if size := q.size.Load(); start > uint64(size)>>9 || r.Length > size-r.Offset {
		q.complete(tag, -int32(unix.EIO))
		return
	}
	if r.Op == OpRead || r.Op == OpWrite {
		if r.Length > int64(q.maxIO) {
			q.complete(tag, -int32(unix.EIO))
			return
		}
		switch {
		case !q.mode.zeroCopy():
			r.Buf = q.bufs[tag][:r.Length]
		case q.mode == modeRegister || opFlags&uapi.UBLK_IO_F_NEED_REG_BUF != 0:
			// The pages are not in the table yet: served once
			// the registration completes (onBuf).
			if err := q.prepBuf(uapi.UBLK_U_IO_REGISTER_IO_BUF, tag); err != nil {
				q.complete(tag, -int32(unix.EIO))
			}
			return
		}
	}
	q.target.Serve(r)
}

// onBuf handles the completion of a buffer registration or
// unregistration this queue sent for tag.
func (q *queue) onBuf(tag uint16, unreg bool, res int32) error {
	if int(tag) >= q.depth {
		return nil
	}
	if unreg {
		// A slot left registered would fail every later request of
		// the tag and keep this one from ever completing.
		if res < 0 {
			return fmt.Errorf("ublk queue %d tag %d: unregister request buffer: %w", q.id, tag, unix.Errno(-res))
		}
		return nil
	}
	if q.state[tag] != tagServing {
		return nil
	}
	if res < 0 {
		q.complete(tag, res)
		return nil
	}
	q.ownReg[tag] = true
	q.target.Serve(&q.reqs[tag])
	return nil
}

// commitDone lets the target carry on with the requests it resumed, then
// turns every finished request into a COMMIT_AND_FETCH, or with batch I/O
// all of them into one COMMIT_IO_CMDS.
func (q *queue) commitDone() error {
	q.resumeHeld()
	q.commitBlocked = false
	if q.batch != nil {
		free, err := q.commitFree()
		if err != nil {
			return err
		}
		if !free {
			q.commitBlocked = true
			return nil
		}
	}
	for l := q.done.takeAll(); l != 0; {
		tag, res, rest := q.done.walk(l)
		l = rest
		if ok, err := q.retire(tag); !ok {
			if err != nil {
				return err
			}
			continue
		}
		if q.batch != nil {
			q.addCommit(tag, res)
			continue
		}
		if err := q.prepIO(uapi.UBLK_U_IO_COMMIT_AND_FETCH_REQ, tag, res); err != nil {
			return err
		}
	}
	if q.batch != nil {
		if err := q.flushCommit(); err != nil {
			return err
		}
	}
	if verify.On {
		q.verify()
	}
	return nil
}

// resumeHeld lets the target carry on with the requests it resumed.
func (q *queue) resumeHeld() {
	for l := q.resumes.takeAll(); l != 0; {
		tag, _, rest := q.resumes.walk(l)
		l = rest
		if q.state[tag] == tagServing && q.held[tag].Load() && q.rs != nil {
			q.rs.Resume(&q.reqs[tag])
		}
	}
}

// retire returns a finished tag to fetching, ready to be committed; false
// when it must not be (completed twice) or its buffer could not be given up.
func (q *queue) retire(tag uint16) (bool, error) {
	if q.state[tag] != tagServing {
		// Completed twice: a target bug. Committing again would
		// hand the kernel a tag it has not given us.
		if verify.On {
			panic(fmt.Sprintf("ublk queue %d tag %d: committed twice", q.id, tag))
		}
		return false, nil
	}
	q.state[tag] = tagFetching
	q.serving--
	if q.ownReg[tag] {
		// Before the commit, so that the slot is free when the
		// kernel registers the tag's next request in it.
		q.ownReg[tag] = false
		if err := q.prepBuf(uapi.UBLK_U_IO_UNREGISTER_IO_BUF, tag); err != nil {
			return false, err
		}
	}
	return true, nil
}

// verify checks the queue's bookkeeping against its per-tag states; verify
// mode only, on the queue goroutine.
func (q *queue) verify() {
	var serving, aborted, withheld int
	for tag, st := range q.state {
		switch st {
		case tagServing:
			serving++
		case tagAborted:
			aborted++
			verify.Check(!q.held[tag].Load(), "ublk queue %d tag %d: aborted but held", q.id, tag)
		case tagFetching:
			verify.Check(!q.held[tag].Load(), "ublk queue %d tag %d: fetching but held by the target", q.id, tag)
		case tagWithheld:
			withheld++
			verify.Check(!q.held[tag].Load(), "ublk queue %d tag %d: withheld from the target but held by it", q.id, tag)
		}
	}
	verify.Check(serving == q.serving && aborted == q.aborted && withheld == q.withheld && q.serving >= 0,
		"ublk queue %d: counts say %d serving, %d aborted, %d withheld; tags say %d, %d, %d",
		q.id, q.serving, q.aborted, q.withheld, serving, aborted, withheld)
	if b := q.batch; b != nil {
		busy := 0
		for _, on := range b.busy {
			if on {
				busy++
			}
		}
		verify.Check(b.unreaped == busy && b.n == 0, "ublk queue %d: %d commits unreaped, %d commit buffers busy, %d elements unsent",
			q.id, b.unreaped, busy, b.n)
	}
}

// prepIO queues a FETCH or COMMIT_AND_FETCH for tag.
func (q *queue) prepIO(op uint32, tag uint16, res int32) error {
	sqe, err := q.sqe()
	if err != nil {
		return err
	}
	uring.PrepURingCmd(sqe, int(q.charFd), op)
	*sqe.IOCmd() = uapi.IOCmd{QID: q.id, Tag: tag, Result: res, Addr: bufAddr(q.bufs[tag])}
	if q.mode == modeAutoReg {
		// Where the driver registers the tag's next request. With
		// the fallback, a registration that fails (it should not: the
		// slot is the tag's own) delivers the request for us to
		// register instead of failing it.
		reg := uapi.AutoBufReg{Index: tag}
		if q.canRegister {
			reg.Flags = uapi.UBLK_AUTO_BUF_REG_FALLBACK
		}
		sqe.Addr = reg.SQEAddr()
	}
	sqe.UserData = udIO | uint64(tag)
	return nil
}

// prepBuf queues a REGISTER_IO_BUF or UNREGISTER_IO_BUF of tag's request
// at index tag of the ring's buffer table.
func (q *queue) prepBuf(op uint32, tag uint16) error {
	sqe, err := q.sqe()
	if err != nil {
		return err
	}
	uring.PrepURingCmd(sqe, int(q.charFd), op)
	*sqe.IOCmd() = uapi.IOCmd{QID: q.id, Tag: tag, Addr: uint64(tag)}
	sqe.UserData = udBuf | uint64(tag)
	if op == uapi.UBLK_U_IO_UNREGISTER_IO_BUF {
		sqe.UserData |= udBufUnreg
	}
	return nil
}

// fixedAddr is the fixed-I/O address of byte off of tag's request.
func (q *queue) fixedAddr(tag uint16, off int64) uint64 {
	if q.fixedBase == nil {
		return uint64(off)
	}
	return q.fixedBase[tag] + uint64(off)
}

// copyFixedBytes is how much of each tag's buffer copy mode registers: the
// pages of every registered byte stay resident (8 MiB per queue of depth
// 128), and pinning per I/O costs most where the I/O is small. Larger I/O
// pins its pages as before.
const copyFixedBytes = 64 << 10

// registerCopyBuffers registers the head of each tag's buffer (copy mode)
// as fixed buffer tag, so that member I/O into it skips pinning its pages:
// the kernel's own per-I/O work for a 4 KiB read is small enough that the
// pinning is a visible share of it. Without the registration (an old
// kernel, a memlock limit) member I/O takes plain buffers, as before.
func (q *queue) registerCopyBuffers(ring *uring.Ring) {
	n := min(q.maxIO, copyFixedBytes)
	if n <= 0 || len(q.bufs) == 0 || q.bufs[0] == nil {
		return
	}
	heads := make([][]byte, len(q.bufs))
	base := make([]uint64, len(q.bufs))
	for tag, b := range q.bufs {
		heads[tag] = b[:n]
		base[tag] = bufAddr(b)
	}
	if err := ring.RegisterBuffers(heads); err != nil {
		return
	}
	q.fixedBase, q.copyFixed = base, int64(n)
}

// bufferBytes is the memory mapped for copies of request data: none in
// zero-copy mode.
func (q *queue) bufferBytes() int64 { return int64(len(q.bufMem)) }

// armWake queues a one-shot poll on the wake eventfd.
func (q *queue) armWake() error {
	sqe, err := q.sqe()
	if err != nil {
		return err
	}
	q.waker.ArmPoll(sqe, udWake)
	return nil
}

// onWake resets the eventfd and re-arms its poll; the completions it
// announced are picked up by the next commitDone.
func (q *queue) onWake(res int32) error {
	if res < 0 && res != -int32(unix.ECANCELED) {
		return fmt.Errorf("ublk queue %d: poll wake eventfd: %w", q.id, unix.Errno(-res))
	}
	if err := q.waker.Drain(); err != nil {
		return fmt.Errorf("ublk queue %d: %w", q.id, err)
	}
	return q.armWake()
}

// sqe returns a zeroed SQE, submitting what is queued if the ring is full.
func (q *queue) sqe() (*uapi.SQE, error) {
	for range 2 {
		if sqe := q.ring.NextSQE(); sqe != nil {
			return sqe, nil
		}
		if _, err := q.ring.Submit(); err != nil && !errors.Is(err, unix.EINTR) {
			return nil, fmt.Errorf("ublk queue %d: submit: %w", q.id, err)
		}
	}
	return nil, fmt.Errorf("ublk queue %d: submission queue stays full", q.id)
}

func bufAddr(b []byte) uint64 {
	if cap(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// mapDescriptors maps the queue's descriptor array from /dev/ublkcN: the
// kernel writes each request's descriptor there.
func (q *queue) mapDescriptors(charFd int) error {
	page := os.Getpagesize()
	desc, err := unix.Mmap(charFd, uapi.CmdBufOffset(q.id, page), uapi.CmdBufSize(uint16(q.depth), page), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("ublk queue %d: map descriptors: %w", q.id, os.NewSyscallError("mmap", err))
	}
	q.descMem = desc
	q.iods = unsafe.Slice((*uapi.IODesc)(unsafe.Pointer(unsafe.SliceData(desc))), q.depth)
	q.charFd = int32(charFd)
	return nil
}

// openBuffers maps the per-tag buffers (in copy mode, or always when own:
// the harness, which has no driver to lend request pages) from anonymous
// memory, which neither moves nor is freed behind the kernel's back, and
// makes the wake eventfd: everything but the kernel's descriptors.
func (q *queue) openBuffers(maxIO int, own bool) error {
	q.maxIO = maxIO
	if !q.mode.zeroCopy() || own {
		mem, err := unix.Mmap(-1, 0, q.depth*maxIO, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("ublk queue %d: map %d buffers of %d bytes: %w", q.id, q.depth, maxIO, os.NewSyscallError("mmap", err))
		}
		q.bufMem = mem
		for tag := range q.bufs {
			q.bufs[tag] = mem[tag*maxIO : (tag+1)*maxIO : (tag+1)*maxIO]
		}
	}
	w, err := uring.NewWaker()
	if err != nil {
		return fmt.Errorf("ublk queue %d: %w", q.id, err)
	}
	q.waker = w
	return nil
}

// close releases what open made. Only after the queue goroutine is gone.
func (q *queue) close() error {
	var errs []error
	if q.descMem != nil {
		q.iods = nil
		errs = append(errs, unix.Munmap(q.descMem))
		q.descMem = nil
	}
	if q.bufMem != nil {
		clear(q.bufs)
		errs = append(errs, unix.Munmap(q.bufMem))
		q.bufMem = nil
	}
	errs = append(errs, q.closeBatch())
	if q.waker != nil {
		for q.kicking.Load() > 0 {
			runtime.Gosched() // a completer is between its push and its wake: nanoseconds
		}
		errs = append(errs, q.waker.Close())
		q.waker = nil
	}
	return errors.Join(errs...)
}
