package discard

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/blkdiscard"
	"uraid/internal/uring"
)

// RingIssuer trims a member through an io_uring of its own, driven by the
// member's lane: BLOCK_URING_CMD_DISCARD on a block device, fallocate
// punch-hole on a file. A TRIM in flight is an SQE outstanding, not a
// thread. On a kernel without the block command it falls back to the
// BLKDISCARD ioctl (internal/blkdiscard's policy), one at a time on the
// lane: the kernel serializes that ioctl on a device anyway.
type RingIssuer struct {
	ring  *uring.Ring
	waker *uring.Waker
	fd    int
	block bool
	base  int64 // added to every offset: where the member's data starts
	armed bool  // the waker's poll is queued in the ring

	policy blkdiscard.Policy
	slots  []ringSlot
	// ioctl lists the TRIMs to run with BLKDISCARD, once the policy chose it.
	ioctl []int
	// retry lists TRIMs to submit again (EAGAIN), or to probe with the ioctl.
	retry []int

	report   func(int, error) // reportTo, marking the slot reported
	reportTo func(int, error)
}

type ringSlot struct {
	off, n int64
	probe  bool // answered EOPNOTSUPP: try the ioctl
	out    bool // started and not reported yet
}

// user_data of the waker's poll; TRIMs use their slot id.
const udWake = 1 << 62

// NewRingIssuer returns an issuer for fd, a block device (block) or a
// regular file open for writing, whose member offsets start base bytes into
// the device, with room for inflight TRIMs at once.
func NewRingIssuer(fd int, block bool, base int64, inflight int) (*RingIssuer, error) {
	inflight = max(inflight, 1)
	ring, err := uring.New(uint32(inflight + 1))
	if err != nil {
		return nil, fmt.Errorf("discard issuer: %w", err)
	}
	w, err := uring.NewWaker()
	if err != nil {
		ring.Close()
		return nil, fmt.Errorf("discard issuer: %w", err)
	}
	return &RingIssuer{ring: ring, waker: w, fd: fd, block: block, base: base, slots: make([]ringSlot, inflight)}, nil
}

// Async reports whether TRIMs go through io_uring; false once a block
// device's kernel has shown it lacks BLOCK_URING_CMD_DISCARD.
func (r *RingIssuer) Async() bool { return r.policy.Async() }

// Start queues the TRIM of slot id.
func (r *RingIssuer) Start(id int, off, n int64) {
	r.slots[id] = ringSlot{off: off + r.base, n: n, out: true}
	if r.block && !r.policy.Async() {
		r.ioctl = append(r.ioctl, id)
		return
	}
	r.prep(id)
}

func (r *RingIssuer) prep(id int) {
	s := r.slots[id]
	sqe := r.ring.NextSQE()
	if sqe == nil {
		// Cannot happen: the ring has a slot per TRIM and one for the waker,
		// and every Wait submits what is queued. Retry from Wait rather than
		// lose the TRIM.
		r.retry = append(r.retry, id)
		return
	}
	if r.block {
		uring.PrepDiscard(sqe, r.fd, uint64(s.off), uint64(s.n))
	} else {
		// A punched hole reads back as zeros and frees the blocks underneath.
		uring.PrepFallocate(sqe, r.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, uint64(s.off), uint64(s.n))
	}
	sqe.UserData = uint64(id)
}

// Wait submits what is queued and reports what finished.
func (r *RingIssuer) Wait(timeout time.Duration, done func(int, error)) {
	report := r.reporter(done)
	// TRIMs waiting for the ioctl run here, on the lane, one per call so
	// that the lane looks at its queue between them.
	if len(r.ioctl) > 0 {
		id := r.ioctl[0]
		r.ioctl = append(r.ioctl[:0], r.ioctl[1:]...)
		s := r.slots[id]
		report(id, blkdiscard.Ioctl(r.fd, s.off, s.n))
		timeout = 0
	}
	for _, id := range r.retry {
		if r.slots[id].probe {
			r.slots[id].probe = false
			s := r.slots[id]
			report(id, r.policy.Probe(r.fd, s.off, s.n))
			timeout = 0
			continue
		}
		r.prep(id)
	}
	r.retry = r.retry[:0]
	if !r.armed {
		if sqe := r.ring.NextSQE(); sqe != nil {
			r.waker.ArmPoll(sqe, udWake)
			r.armed = true
		}
	}
	var err error
	switch {
	case timeout == 0:
		_, err = r.ring.Submit()
	case timeout < 0:
		_, err = r.ring.SubmitAndWait(1)
	default:
		_, err = r.ring.SubmitAndWaitTimeout(1, timeout)
	}
	if err != nil && !errors.Is(err, unix.ETIME) && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EBUSY) {
		// The ring itself failed: no completion will come, so fail what is
		// outstanding rather than leave the lane waiting for it forever.
		r.failAll(err, report)
		return
	}
	for {
		cqe, ok := r.ring.PeekCQE()
		if !ok {
			return
		}
		ud, res := cqe.UserData, cqe.Res
		r.ring.AdvanceCQ(1)
		r.reap(ud, res, report)
	}
}

// reporter returns done wrapped to mark the slot reported. It is cached, so
// that a Wait does not allocate.
func (r *RingIssuer) reporter(done func(int, error)) func(int, error) {
	if r.report == nil || r.reportTo == nil {
		r.reportTo = done
		r.report = func(id int, err error) {
			r.slots[id].out = false
			r.reportTo(id, err)
		}
	}
	r.reportTo = done
	return r.report
}

func (r *RingIssuer) reap(ud uint64, res int32, report func(int, error)) {
	if ud == udWake {
		r.armed = false
		_ = r.waker.Drain()
		return
	}
	id := int(ud)
	if id < 0 || id >= len(r.slots) || !r.slots[id].out {
		return
	}
	if !r.block {
		report(id, cqeErr("io_uring fallocate punch hole", res))
		return
	}
	switch blkdiscard.Classify(res) {
	case blkdiscard.Retry:
		r.retry = append(r.retry, id) // the block layer had no request to spare
	case blkdiscard.Probe:
		r.slots[id].probe = true
		r.retry = append(r.retry, id)
	default:
		report(id, cqeErr("io_uring BLOCK_URING_CMD_DISCARD", res))
	}
}

// failAll reports every TRIM the ring may still hold as failed with err.
// The issuer is unusable afterwards; its lane keeps failing TRIMs loudly.
func (r *RingIssuer) failAll(err error, done func(int, error)) {
	err = fmt.Errorf("discard issuer: %w", err)
	for id := range r.slots {
		if r.slots[id].out {
			done(id, err)
		}
	}
	r.ioctl, r.retry = r.ioctl[:0], r.retry[:0]
}

func cqeErr(call string, res int32) error {
	if res >= 0 {
		return nil
	}
	return os.NewSyscallError(call, unix.Errno(-res))
}

// Wake makes a Wait return; safe from any goroutine.
func (r *RingIssuer) Wake() { _ = r.waker.Wake() }

// Close releases the ring; the lane must have stopped.
func (r *RingIssuer) Close() error {
	return errors.Join(r.ring.Close(), r.waker.Close())
}
