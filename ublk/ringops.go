package ublk

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"uraid/internal/plant"
	"uraid/internal/uapi"
	"uraid/internal/uring"
)

// The Prep methods queue I/O on the ring of r's queue for a RingTarget.
// They may be called only on the queue goroutine, that is inside
// Target.Serve or RingTarget.Reap, and only while r is being served. The
// I/O is submitted when the queue next enters the kernel, and its result
// reaches RingTarget.Reap(r, sub, res). buf must be memory that stays put
// until then, such as r.Buf or a slice of it. PrepReadInto and
// PrepWriteFrom name a range of the request's data instead of a buffer and
// work the same whether the device copies or not: targets should use them.

// errDataRange is what PrepReadInto and PrepWriteFrom return for a range
// outside the request's data; a variable, so that returning it does not
// allocate.
var errDataRange = errors.New("ublk: member I/O range outside the request's data")

// errNoBuf is what PrepRead and PrepWrite return in zero-copy mode, where
// r.Buf is nil.
var errNoBuf = errors.New("ublk: the request has no buffer in zero-copy mode (use PrepReadInto and PrepWriteFrom, or implement ByteTarget)")

// PrepReadInto reads n bytes at off of fd into the request's data at byte
// reqOff (a READ request). In zero-copy mode the kernel reads straight into
// the request's pages (IORING_OP_READ_FIXED on the slot the request is
// registered in); otherwise into r.Buf, by fixed I/O where the queue
// registered that part of it. The range must lie within Length.
func (r *Request) PrepReadInto(fd int, reqOff, n, off int64, sub uint32) error {
	if reqOff < 0 || n <= 0 || reqOff > r.Length-n {
		return errDataRange
	}
	q := r.q
	if !q.mode.zeroCopy() && reqOff+n > q.copyFixed {
		return r.PrepRead(fd, r.Buf[reqOff:reqOff+n], off, sub)
	}
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	tag := r.Tag
	if plant.Is("fixedtag") && !q.mode.zeroCopy() && len(q.fixedBase) > 1 {
		tag ^= 1 // the neighbour's registered buffer: its request, not this one, gets the data
	}
	uring.PrepReadFixed(sqe, fd, tag, q.fixedAddr(tag, reqOff), uint32(n), uint64(off))
	return nil
}

// PrepWriteFrom writes n bytes of the request's data from byte reqOff (a
// WRITE request) at off of fd, durably when fua is set (as PrepWrite). In
// zero-copy mode the kernel writes straight from the request's pages
// (IORING_OP_WRITE_FIXED); several writes of one request, such as the
// copies of a mirror, share its slot.
func (r *Request) PrepWriteFrom(fd int, reqOff, n, off int64, fua bool, sub uint32) error {
	if reqOff < 0 || n <= 0 || reqOff > r.Length-n {
		return errDataRange
	}
	q := r.q
	if !q.mode.zeroCopy() && reqOff+n > q.copyFixed {
		return r.PrepWrite(fd, r.Buf[reqOff:reqOff+n], off, fua, sub)
	}
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	uring.PrepWriteFixed(sqe, fd, r.Tag, q.fixedAddr(r.Tag, reqOff), uint32(n), uint64(off))
	if fua {
		sqe.OpFlags = unix.RWF_DSYNC
	}
	return nil
}

// PrepRead reads len(buf) bytes at off of fd into buf.
func (r *Request) PrepRead(fd int, buf []byte, off int64, sub uint32) error {
	if len(buf) == 0 && r.q.mode.zeroCopy() {
		return errNoBuf
	}
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	uring.PrepRead(sqe, fd, uintptr(bufAddr(buf)), uint32(len(buf)), uint64(off))
	return nil
}

// PrepWrite writes buf at off of fd; with fua the write is durable when it
// completes (RWF_DSYNC, which the block layer turns into a FUA write).
func (r *Request) PrepWrite(fd int, buf []byte, off int64, fua bool, sub uint32) error {
	if len(buf) == 0 && r.q.mode.zeroCopy() {
		return errNoBuf
	}
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	uring.PrepWrite(sqe, fd, uintptr(bufAddr(buf)), uint32(len(buf)), uint64(off))
	if fua {
		sqe.OpFlags = unix.RWF_DSYNC
	}
	return nil
}

// PrepFsync makes fd's written data durable (fdatasync when datasync).
func (r *Request) PrepFsync(fd int, datasync bool, sub uint32) error {
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	uring.PrepFsync(sqe, fd, datasync)
	return nil
}

// PrepFallocate is fallocate(fd, mode, off, length), run by the kernel off
// the queue thread.
func (r *Request) PrepFallocate(fd int, mode uint32, off, length int64, sub uint32) error {
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	uring.PrepFallocate(sqe, fd, mode, uint64(off), uint64(length))
	return nil
}

// PrepBlockDiscard discards [off, off+length) of the block device fd (open
// for writing) without blocking the queue (BLOCK_URING_CMD_DISCARD, Linux
// 6.12+). What to do with its result is internal/blkdiscard's policy: retry
// on -EAGAIN, and on -EOPNOTSUPP probe with BLKDISCARD off the queue
// goroutine. Unlike BLKDISCARD it does not exclude overlapping reads and
// writes.
func (r *Request) PrepBlockDiscard(fd int, off, length int64, sub uint32) error {
	sqe, err := r.targetSQE(sub)
	if err != nil {
		return err
	}
	uring.PrepDiscard(sqe, fd, uint64(off), uint64(length))
	return nil
}

func (r *Request) targetSQE(sub uint32) (*uapi.SQE, error) {
	q := r.q
	if q.rt == nil {
		return nil, fmt.Errorf("ublk: %T prepares ring I/O but has no Reap method to receive it", q.target)
	}
	sqe, err := q.sqe()
	if err != nil {
		return nil, err
	}
	sqe.UserData = udTarget | uint64(r.Tag)<<32 | uint64(sub)
	return sqe, nil
}
