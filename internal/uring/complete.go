package uring

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// cqReady is the number of completions in the CQ not yet consumed. The
// atomic load of the tail orders the kernel's CQE writes before our reads.
func (r *Ring) cqReady() uint32 {
	return atomic.LoadUint32(r.cqTail) - *r.cqHead
}

// cqNeedsEnter reports whether completions exist that only an
// io_uring_enter(GETEVENTS) will post: parked in the overflow list, or
// waiting as task work. (IORING_SQ_TASKRUN is only reported to rings made
// with IORING_SETUP_TASKRUN_FLAG.)
func (r *Ring) cqNeedsEnter() bool {
	return atomic.LoadUint32(r.sqFlags)&(uapi.IORING_SQ_CQ_OVERFLOW|uapi.IORING_SQ_TASKRUN) != 0
}

// flushCQ moves parked completions into the CQ without waiting. Errors are
// kept for the next Submit* because the callers cannot return them.
func (r *Ring) flushCQ() {
	for {
		_, errno := r.enter(0, 0, uapi.IORING_ENTER_GETEVENTS, nil, 0)
		switch errno {
		case 0, unix.EAGAIN, unix.EBUSY:
			// EAGAIN/EBUSY: the CQ filled up again; the caller
			// reaps and we come back.
			return
		case unix.EINTR:
			r.eintr++
		case unix.EBADR:
			r.deferred = fmt.Errorf("%w (%d lost so far)", ErrCompletionsDropped, r.Dropped())
			return
		default:
			r.deferred = fmt.Errorf("io_uring flush completions: %w", os.NewSyscallError("io_uring_enter", errno))
			return
		}
	}
}

// PeekCQE returns the oldest unconsumed completion without consuming it,
// or false when there is none. The pointer is into the ring: read it before
// AdvanceCQ. If the CQ is empty but the kernel has parked completions,
// PeekCQE flushes them in first.
func (r *Ring) PeekCQE() (*uapi.CQE, bool) {
	if r.cqes == nil {
		return nil, false
	}
	if r.cqReady() == 0 {
		if !r.cqNeedsEnter() {
			return nil, false
		}
		r.flushCQ()
		if r.cqReady() == 0 {
			return nil, false
		}
	}
	return r.cqeAt(*r.cqHead), true
}

func (r *Ring) cqeAt(i uint32) *uapi.CQE {
	return (*uapi.CQE)(unsafe.Add(r.cqes, uintptr(i&r.cqMask)<<r.cqeShift))
}

// AdvanceCQ consumes n completions, returning their slots to the kernel.
func (r *Ring) AdvanceCQ(n uint32) {
	if r.cqes == nil || n == 0 {
		return
	}
	atomic.StoreUint32(r.cqHead, *r.cqHead+n)
}

// CQESeen consumes the completion PeekCQE returned.
func (r *Ring) CQESeen() { r.AdvanceCQ(1) }

// ForEachCQE calls fn for every completion ready now, oldest first,
// including completions the kernel had parked in its overflow list, and
// returns how many it handled. Each CQE is consumed after fn returns, so fn
// may submit and even wait on the ring, but must not call ForEachCQE or
// PeekCQE itself and must not keep the pointer.
func (r *Ring) ForEachCQE(fn func(*uapi.CQE)) int {
	if r.cqes == nil {
		return 0
	}
	n := 0
	for {
		for r.cqReady() > 0 {
			head := *r.cqHead
			fn(r.cqeAt(head))
			atomic.StoreUint32(r.cqHead, head+1)
			n++
		}
		if !r.cqNeedsEnter() {
			return n
		}
		r.flushCQ()
		if r.cqReady() == 0 {
			return n
		}
	}
}

// Dropped returns how many completions the kernel has lost since the ring
// was created: completions it could not even park in the overflow list.
// Anything but zero means requests that will never complete.
func (r *Ring) Dropped() uint32 {
	if r.cqOverflow == nil {
		return 0
	}
	return atomic.LoadUint32(r.cqOverflow)
}
