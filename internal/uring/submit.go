package uring

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// NextSQE returns the next free slot, zeroed, or nil when every slot is
// queued and not yet consumed by the kernel (submit, then try again). On an
// SQE128 ring the 64 bytes after the returned SQE are the rest of the
// slot's command area; NextSQE128 gives them a type.
func (r *Ring) NextSQE() *uapi.SQE {
	p := r.nextSlot()
	if p == nil {
		return nil
	}
	return (*uapi.SQE)(p)
}

// NextSQE128 is NextSQE for rings created WithSQE128; on other rings it
// returns nil.
func (r *Ring) NextSQE128() *uapi.SQE128 {
	if r.sqeShift != 7 {
		return nil
	}
	p := r.nextSlot()
	if p == nil {
		return nil
	}
	return (*uapi.SQE128)(p)
}

func (r *Ring) nextSlot() unsafe.Pointer {
	if r.sqes == nil {
		return nil
	}
	// The kernel's head only moves forward, so a stale read can only
	// report less room than there is.
	if r.sqeTail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		return nil
	}
	p := unsafe.Add(r.sqes, uintptr(r.sqeTail&r.sqMask)<<r.sqeShift)
	if r.sqeShift == 7 {
		*(*uapi.SQE128)(p) = uapi.SQE128{}
	} else {
		*(*uapi.SQE)(p) = uapi.SQE{}
	}
	r.sqeTail++
	return p
}

// Queued returns how many SQEs are waiting for the kernel to consume them:
// handed out by NextSQE but not yet submitted.
func (r *Ring) Queued() uint32 {
	if r.sqes == nil {
		return 0
	}
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// publish makes every slot handed out so far visible to the kernel. The
// atomic store orders the plain writes of the SQEs before the new tail.
func (r *Ring) publish() {
	if r.sqePublished != r.sqeTail {
		atomic.StoreUint32(r.sqTail, r.sqeTail)
		r.sqePublished = r.sqeTail
	}
}

// pending is the number of published SQEs the kernel has not consumed.
func (r *Ring) pending() uint32 {
	return r.sqePublished - atomic.LoadUint32(r.sqHead)
}

// Submit hands every queued SQE to the kernel without waiting for
// completions and returns how many it consumed. EINTR is retried. If the
// kernel answers EAGAIN or EBUSY (out of resources, or completions must be
// reaped first), the error wraps that errno and the SQEs stay queued for
// the next call.
func (r *Ring) Submit() (int, error) {
	return r.submit(0, nil)
}

// SubmitAndWait submits every queued SQE and waits until at least waitNr
// completions are ready in the CQ. Waits interrupted by signals are
// restarted. If the kernel answers EAGAIN or EBUSY while completions are
// already ready, it returns early with a nil error so that the caller reaps
// them; the SQEs not consumed stay queued.
func (r *Ring) SubmitAndWait(waitNr uint32) (int, error) {
	return r.submit(waitNr, nil)
}

// SubmitAndWaitTimeout is SubmitAndWait with an upper bound on the wait;
// when it expires the error wraps unix.ETIME. The bound is relative and
// starts again after each signal, so a storm of signals can stretch it. It
// needs IORING_FEAT_EXT_ARG (5.11).
func (r *Ring) SubmitAndWaitTimeout(waitNr uint32, d time.Duration) (int, error) {
	r.ts = unix.NsecToTimespec(d.Nanoseconds())
	r.extArg = uapi.GeteventsArg{Ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
	return r.submit(waitNr, &r.extArg)
}

// SubmitAndWaitOne submits what is queued, waits for one completion,
// consumes it and returns its result. It suits rings that have one request
// in flight at a time, such as the ublk control ring.
func (r *Ring) SubmitAndWaitOne() (int32, error) {
	if _, err := r.SubmitAndWait(1); err != nil {
		return 0, err
	}
	cqe, ok := r.PeekCQE()
	if !ok {
		if r.deferred != nil {
			return 0, r.takeDeferred()
		}
		return 0, fmt.Errorf("io_uring: wait returned without a completion (EBUSY/EAGAIN with an empty CQ?)")
	}
	res := cqe.Res
	r.AdvanceCQ(1)
	return res, nil
}

func (r *Ring) submit(waitNr uint32, arg *uapi.GeteventsArg) (int, error) {
	if r.sqes == nil {
		return 0, ErrClosed
	}
	if r.deferred != nil {
		return 0, r.takeDeferred()
	}
	// The CQ cannot hold more; the kernel clamps the same way.
	waitNr = min(waitNr, r.cqEntries)
	r.publish()
	submitted := 0
	for {
		pending := r.pending()
		ready := r.cqReady()
		wait := waitNr > 0 && ready < waitNr
		var flags uint32
		if wait || r.cqNeedsEnter() {
			flags |= uapi.IORING_ENTER_GETEVENTS
		}
		if pending == 0 && flags == 0 {
			return submitted, nil
		}
		if r.flags&uapi.IORING_SETUP_DEFER_TASKRUN != 0 {
			// Such rings post completions only from inside
			// GETEVENTS; asking costs nothing as we are entering
			// anyway.
			flags |= uapi.IORING_ENTER_GETEVENTS
		}
		minComplete := uint32(0)
		if wait {
			minComplete = waitNr
		}
		var argp unsafe.Pointer
		var argSz uintptr
		if arg != nil && wait {
			flags |= uapi.IORING_ENTER_EXT_ARG
			argp, argSz = unsafe.Pointer(arg), unsafe.Sizeof(*arg)
		}
		n, errno := r.enter(pending, minComplete, flags, argp, argSz)
		switch errno {
		case 0:
			submitted += n
			if r.pending() == 0 && (!wait || r.cqReady() >= waitNr) {
				return submitted, nil
			}
			if n == 0 && !wait {
				// Nothing consumed and nothing to wait for: do
				// not spin; the caller sees Queued() > 0.
				return submitted, nil
			}
			// A partial submission, or a wait cut short after
			// submitting: go round again.
		case unix.EINTR:
			r.eintr++
		case unix.EAGAIN, unix.EBUSY:
			if waitNr > 0 && r.cqReady() > 0 {
				return submitted, nil
			}
			return submitted, os.NewSyscallError("io_uring_enter", errno)
		case unix.EBADR:
			return submitted, fmt.Errorf("%w (%d lost so far)", ErrCompletionsDropped, r.Dropped())
		default:
			return submitted, os.NewSyscallError("io_uring_enter", errno)
		}
	}
}

func (r *Ring) takeDeferred() error {
	err := r.deferred
	r.deferred = nil
	return err
}
