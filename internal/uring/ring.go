package uring

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// Ring is one io_uring instance: its fd and the three shared mappings.
// Not safe for concurrent use (see the package documentation).
type Ring struct {
	fd       int
	flags    uint32 // IORING_SETUP_* the ring was created with
	features uint32 // IORING_FEAT_* the kernel reported

	// The mappings, kept to unmap them. cqMem aliases sqMem under
	// IORING_FEAT_SINGLE_MMAP.
	sqMem, cqMem, sqeMem []byte

	// SQ ring. The kernel advances *sqHead as it consumes entries; this
	// side owns *sqTail. Both are accessed atomically.
	sqHead, sqTail, sqFlags, sqDropped *uint32
	sqMask, sqEntries                  uint32
	sqes                               unsafe.Pointer
	sqeShift                           uint // log2 of the slot size: 6 or 7

	// sqeTail counts slots handed out by NextSQE; sqePublished counts
	// those already made visible through *sqTail. sqePublished <=
	// sqeTail, and sqeTail - *sqHead <= sqEntries.
	sqeTail, sqePublished uint32

	// CQ ring. The kernel advances *cqTail; this side owns *cqHead.
	cqHead, cqTail, cqOverflow *uint32
	cqMask, cqEntries          uint32
	cqes                       unsafe.Pointer
	cqeShift                   uint // log2 of the CQE size: 4 or 5

	// deferred holds an error met while flushing overflowed completions
	// from a path that cannot return one (ForEachCQE); the next Submit*
	// returns it.
	deferred error

	// eintr counts waits restarted after a signal; tests read it.
	eintr uint64
	// enters counts io_uring_enter calls: WithEnterCounter's, else
	// ownEnters. One atomic add per system call, which costs a hundred
	// times more.
	enters    *atomic.Uint64
	ownEnters atomic.Uint64

	// extArg and ts are the io_uring_enter argument of timed waits,
	// kept here so that passing their address does not allocate.
	extArg uapi.GeteventsArg
	ts     unix.Timespec
}

// New creates a ring with room for entries SQEs (rounded up to a power of
// two by the kernel) and, unless WithCQSize says otherwise, twice as many
// CQEs.
func New(entries uint32, opts ...Option) (*Ring, error) {
	cfg := config{cqSize: 2 * entries}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.flags&(uapi.IORING_SETUP_SQPOLL|uapi.IORING_SETUP_IOPOLL|uapi.IORING_SETUP_NO_MMAP|uapi.IORING_SETUP_NO_SQARRAY) != 0 {
		return nil, fmt.Errorf("io_uring setup: flags %#x: SQPOLL, IOPOLL, NO_MMAP and NO_SQARRAY are not supported by this ring", cfg.flags)
	}
	p := uapi.URingParams{Flags: cfg.flags | uapi.IORING_SETUP_CQSIZE, CqEntries: cfg.cqSize}
	fd, errno := setup(entries, &p)
	if errno != 0 {
		err := os.NewSyscallError("io_uring_setup", errno)
		switch errno {
		case unix.ENOSYS:
			return nil, fmt.Errorf("%w (kernel built without io_uring)", err)
		case unix.EPERM:
			return nil, fmt.Errorf("%w (io_uring disabled? check sysctl kernel.io_uring_disabled)", err)
		case unix.ENOMEM:
			return nil, fmt.Errorf("%w (locked memory limit too low? raise ulimit -l)", err)
		case unix.EINVAL:
			return nil, fmt.Errorf("%w (entries %d, cq %d, flags %#x: SQ must be 1..32768 and CQ from the SQ size to 65536)", err, entries, cfg.cqSize, p.Flags)
		}
		return nil, err
	}
	r := &Ring{fd: fd, flags: p.Flags, features: p.Features}
	r.enters = cfg.enters
	if r.enters == nil {
		r.enters = &r.ownEnters
	}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	if p.Features&uapi.IORING_FEAT_NODROP == 0 {
		r.Close()
		return nil, fmt.Errorf("io_uring setup: IORING_FEAT_NODROP: %w", ErrNotSupported)
	}
	return r, nil
}

func (r *Ring) mapRings(p *uapi.URingParams) error {
	sqSize := int(p.SqOff.Array + p.SqEntries*4)
	r.cqeShift = 4
	if p.Flags&uapi.IORING_SETUP_CQE32 != 0 {
		r.cqeShift = 5
	}
	cqSize := int(p.CqOff.Cqes + p.CqEntries<<r.cqeShift)
	single := p.Features&uapi.IORING_FEAT_SINGLE_MMAP != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}

	var err error
	r.sqMem, err = mmap(r.fd, uapi.IORING_OFF_SQ_RING, sqSize)
	if err != nil {
		return err
	}
	r.cqMem = r.sqMem
	if !single {
		if r.cqMem, err = mmap(r.fd, uapi.IORING_OFF_CQ_RING, cqSize); err != nil {
			return err
		}
	}
	r.sqeShift = 6
	if p.Flags&uapi.IORING_SETUP_SQE128 != 0 {
		r.sqeShift = 7
	}
	if r.sqeMem, err = mmap(r.fd, uapi.IORING_OFF_SQES, int(p.SqEntries)<<r.sqeShift); err != nil {
		return err
	}

	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.SqOff.Head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.SqOff.Tail))
	r.sqFlags = (*uint32)(unsafe.Add(sq, p.SqOff.Flags))
	r.sqDropped = (*uint32)(unsafe.Add(sq, p.SqOff.Dropped))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.SqOff.RingMask))
	r.sqEntries = *(*uint32)(unsafe.Add(sq, p.SqOff.RingEntries))
	r.sqes = unsafe.Pointer(&r.sqeMem[0])
	// Slots are handed out in ring order, so the indirection array is
	// the identity and is written once here.
	array := unsafe.Slice((*uint32)(unsafe.Add(sq, p.SqOff.Array)), r.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqeTail = *r.sqTail
	r.sqePublished = r.sqeTail

	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.CqOff.Head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.CqOff.Tail))
	r.cqOverflow = (*uint32)(unsafe.Add(cq, p.CqOff.Overflow))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.CqOff.RingMask))
	r.cqEntries = *(*uint32)(unsafe.Add(cq, p.CqOff.RingEntries))
	r.cqes = unsafe.Add(cq, p.CqOff.Cqes)
	return nil
}

func mmap(fd int, off int64, size int) ([]byte, error) {
	b, err := unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("io_uring mmap offset %#x, %d bytes: %w", off, size, os.NewSyscallError("mmap", err))
	}
	return b, nil
}

// Close unmaps the rings and closes the fd. The kernel cancels whatever is
// still in flight. Closing a closed ring does nothing.
func (r *Ring) Close() error {
	if r.fd < 0 {
		return nil
	}
	var errs []error
	if r.sqeMem != nil {
		errs = append(errs, munmap(r.sqeMem))
	}
	if r.cqMem != nil && !sameMapping(r.cqMem, r.sqMem) {
		errs = append(errs, munmap(r.cqMem))
	}
	if r.sqMem != nil {
		errs = append(errs, munmap(r.sqMem))
	}
	if err := unix.Close(r.fd); err != nil {
		errs = append(errs, os.NewSyscallError("close", err))
	}
	*r = Ring{fd: -1}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("io_uring close: %w", err)
	}
	return nil
}

func sameMapping(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

func munmap(b []byte) error {
	if err := unix.Munmap(b); err != nil {
		return os.NewSyscallError("munmap", err)
	}
	return nil
}

// Enters is the number of io_uring_enter calls the ring has made. Safe
// from any goroutine.
func (r *Ring) Enters() uint64 { return r.enters.Load() }

// Fd returns the ring's file descriptor, for io_uring_register calls this
// package does not wrap and for IORING_OP_MSG_RING targets.
func (r *Ring) Fd() int { return r.fd }

// Flags returns the IORING_SETUP_* flags the ring was created with,
// including IORING_SETUP_CQSIZE which New always sets.
func (r *Ring) Flags() uint32 { return r.flags }

// Features returns the IORING_FEAT_* bits the kernel reported.
func (r *Ring) Features() uint32 { return r.features }

// SQEntries and CQEntries return the ring sizes the kernel chose.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries returns the number of CQ slots.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }
