package ublk

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Op is the operation of a Request.
type Op uint8

// Operations a Target is asked to do.
const (
	OpRead Op = iota
	OpWrite
	OpFlush
	OpDiscard
	OpWriteZeroes
)

var opNames = [...]string{"read", "write", "flush", "discard", "write-zeroes"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Request is one block I/O request of a queue. The queue owns one per tag
// and reuses it, so a Target must not keep r once it has completed it.
type Request struct {
	Op Op
	// FUA asks that a write be durable when it completes.
	FUA bool
	// NoUnmap asks that a WRITE_ZEROES keep the range allocated.
	NoUnmap bool
	// Offset and Length are in bytes. Length is zero for FLUSH.
	Offset, Length int64
	// Buf is the tag's buffer, Length bytes long, for READ (to fill) and
	// WRITE (to store); nil for the other operations, and nil for every
	// operation in zero-copy mode, where the data stays in the kernel's
	// pages and is reached only through PrepReadInto and PrepWriteFrom
	// (see ByteTarget). It is memory that neither moves nor is freed
	// while the device lives, so its address may be given to the kernel
	// for O_DIRECT or io_uring I/O.
	Buf []byte
	// Queue and Tag name the request within the device.
	Queue, Tag uint16

	q *queue
}

// Complete finishes the request with a raw result: bytes transferred for
// READ and WRITE (fewer than Length makes the kernel resend the rest), 0 for
// the other operations, or a negative errno. It may be called from any
// goroutine, once per request.
func (r *Request) Complete(res int32) {
	r.q.complete(r.Tag, res)
}

// Resume hands a request the target holds back to its queue goroutine,
// which calls the target's Resume (see Resumer) with it: a request that had
// to wait (for a TRIM, a metadata write) carries on where ring I/O can be
// prepared, without a goroutine of its own. Safe from any goroutine, once
// per wait; the target must not touch r between Resume and its Resume
// method being called.
func (r *Request) Resume() {
	r.q.resume(r.Tag)
}

// Done finishes the request: with success (all of Length for READ and
// WRITE) when err is nil, else with the errno that err wraps, or EIO.
func (r *Request) Done(err error) {
	r.Complete(r.result(err))
}

// result maps the outcome of the whole request to the value the kernel
// expects for its operation.
func (r *Request) result(err error) int32 {
	if err != nil {
		return errnoResult(err)
	}
	if r.Op == OpRead || r.Op == OpWrite {
		return int32(r.Length)
	}
	return 0
}

// errnoResult turns err into a negative errno; errors that carry none
// become EIO, the block layer's generic failure.
func errnoResult(err error) int32 {
	// A bare Errno is the common case and needs no errors.As, which
	// would allocate.
	if errno, ok := err.(unix.Errno); ok && errno != 0 {
		return -int32(errno)
	}
	var errno unix.Errno
	if errors.As(err, &errno) && errno != 0 {
		return -int32(errno)
	}
	return -int32(unix.EIO)
}

func (r *Request) String() string {
	return fmt.Sprintf("q%d/t%d %s off=%d len=%d fua=%t nounmap=%t", r.Queue, r.Tag, r.Op, r.Offset, r.Length, r.FUA, r.NoUnmap)
}
