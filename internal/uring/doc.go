// Package uring is a minimal io_uring written over golang.org/x/sys/unix:
// one submission queue, one completion queue, the opcodes uraid uses, and
// nothing else. There is no io_uring module for Go that uraid can depend
// on, and ublk needs control of details a general library hides: 128-byte
// SQEs for /dev/ublk-control, URING_CMD payloads written in place, and a
// ring bound to the one thread that serves a ublk queue.
//
// # Ownership
//
// A Ring is not safe for concurrent use. It belongs to one goroutine, which
// alone calls NextSQE, Submit*, PeekCQE/AdvanceCQ and ForEachCQE. Rings
// that serve a ublk queue, or that are created WithFlags(SINGLE_ISSUER),
// are further bound to an OS thread: the owning goroutine must call
// runtime.LockOSThread before New and stay locked for the ring's life,
// because the kernel ties them to the task that created or first entered
// them. A ring shared by several goroutines (the ublk control ring) works
// if every use is serialized by a mutex and SINGLE_ISSUER is not set.
//
// # Submission and completion
//
// NextSQE hands out a zeroed slot, or nil when every slot is queued and not
// yet consumed by the kernel. The caller fills it (the Prep* helpers, then
// UserData as a plain field) and Submit or SubmitAndWait publishes all
// queued slots with one atomic store of the SQ tail and one io_uring_enter.
// Completions are read in place: PeekCQE/AdvanceCQ one at a time, or
// ForEachCQE for a batch; a CQE pointer is valid until the head moves past
// it. Neither path allocates (see TestHotPathDoesNotAllocate).
//
// Waiting is restarted on EINTR, which Go's preemption signals cause often.
// EAGAIN and EBUSY mean the kernel wants completions reaped first: if some
// are ready, SubmitAndWait returns early without an error; otherwise the
// error is returned (test with errors.Is). Either way the unconsumed SQEs
// stay queued and go with the next call.
//
// # Completion overflow
//
// New requires IORING_FEAT_NODROP: when the CQ is full the kernel parks
// further completions in an overflow list and sets IORING_SQ_CQ_OVERFLOW in
// the SQ flags instead of dropping them. Whenever the CQ has been drained
// and that flag (or IORING_SQ_TASKRUN) is set, PeekCQE and ForEachCQE call
// io_uring_enter(GETEVENTS) with no wait to move the parked completions into
// the CQ, so every completion is eventually seen. The CQ is sized to twice
// the SQ by default so that overflow stays the exception. Only if the
// kernel cannot even allocate an overflow entry is a completion dropped; it
// then counts it in the CQ's overflow word (Ring.Dropped) and fails the
// next wait with EBADR, which Submit* return as ErrCompletionsDropped.
//
// # Waking a waiting ring
//
// A goroutine blocked in SubmitAndWait is woken by a completion. To wake it
// from another goroutine, keep a PrepPollAdd (or PrepRead) on a Waker's
// eventfd queued in the ring and call Waker.Wake. RegisterEventfd is the
// opposite direction: it makes the ring signal an eventfd on completions.
package uring
