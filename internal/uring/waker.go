package uring

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// Waker is an eventfd that lets any goroutine wake the owner of a ring
// blocked in SubmitAndWait: the owner keeps a poll on it queued
// (ArmPoll), and Wake makes that poll complete. Wake is safe for
// concurrent use from any goroutine; ArmPoll and Drain belong to the ring's
// owner.
type Waker struct {
	fd int
}

// NewWaker creates the eventfd (non-blocking, close-on-exec).
func NewWaker() (*Waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("io_uring waker: %w", os.NewSyscallError("eventfd", err))
	}
	return &Waker{fd: fd}, nil
}

// Fd returns the eventfd.
func (w *Waker) Fd() int { return w.fd }

// Wake makes the armed poll complete. Wakes before the owner drains
// coalesce into one.
func (w *Waker) Wake() error {
	one := uint64(1)
	for {
		_, _, errno := unix.Syscall(unix.SYS_WRITE, uintptr(w.fd), uintptr(unsafe.Pointer(&one)), 8)
		switch errno {
		case 0, unix.EAGAIN:
			// EAGAIN: the counter is saturated, so a wake is
			// already pending.
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("io_uring wake: %w", os.NewSyscallError("write", errno))
		}
	}
}

// Drain resets the eventfd after its poll completed, so that the next
// ArmPoll waits for a new Wake.
func (w *Waker) Drain() error {
	var v uint64
	for {
		_, _, errno := unix.Syscall(unix.SYS_READ, uintptr(w.fd), uintptr(unsafe.Pointer(&v)), 8)
		switch errno {
		case 0, unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("io_uring waker drain: %w", os.NewSyscallError("read", errno))
		}
	}
}

// ArmPoll prepares sqe as a one-shot POLLIN on the eventfd with the given
// user data. After its CQE, Drain and arm again.
func (w *Waker) ArmPoll(sqe *uapi.SQE, userData uint64) {
	PrepPollAdd(sqe, w.fd, unix.POLLIN)
	sqe.UserData = userData
}

// Close closes the eventfd. A poll still armed on it completes with
// -ECANCELED or stays until the ring closes.
func (w *Waker) Close() error {
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	w.fd = -1
	if err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// RegisterEventfd makes the kernel signal efd whenever a completion is
// posted to the ring, for waiting on the ring through epoll or a blocking
// read elsewhere.
func (r *Ring) RegisterEventfd(efd int) error {
	if r.sqes == nil {
		return ErrClosed
	}
	fd := int32(efd)
	if _, errno := register(r.fd, uapi.IORING_REGISTER_EVENTFD, unsafe.Pointer(&fd), 1); errno != 0 {
		return fmt.Errorf("io_uring register eventfd: %w", os.NewSyscallError("io_uring_register", errno))
	}
	return nil
}

// UnregisterEventfd undoes RegisterEventfd.
func (r *Ring) UnregisterEventfd() error {
	if r.sqes == nil {
		return ErrClosed
	}
	if _, errno := register(r.fd, uapi.IORING_UNREGISTER_EVENTFD, nil, 0); errno != 0 {
		return fmt.Errorf("io_uring unregister eventfd: %w", os.NewSyscallError("io_uring_register", errno))
	}
	return nil
}
