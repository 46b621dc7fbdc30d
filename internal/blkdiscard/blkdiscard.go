// Package blkdiscard holds what every discard of a block device in uraid
// shares: the BLKDISCARD ioctl, and the one policy for choosing between it
// and io_uring's asynchronous BLOCK_URING_CMD_DISCARD (Linux 6.12).
//
// BLKDISCARD takes the device's invalidate lock, so concurrent calls on one
// device run one after another in the kernel and block their thread; the
// io_uring command does neither, so a drive with queued TRIM (NVMe) gets as
// many TRIMs at once as the caller sends. Neither excludes reads and writes
// of the range: ordering them is the caller's job.
//
// The policy: use the io_uring command; retry it on EAGAIN; on EOPNOTSUPP
// try the ioctl for that range. If the ioctl works the kernel lacks the
// command, and the device's Policy uses the ioctl from then on; if it fails
// too, the device cannot discard and its error is the answer. Any other
// error is the answer as it is. A Policy is safe for concurrent use.
package blkdiscard

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ioctl discards [off, off+n) of the block device fd with the BLKDISCARD
// ioctl, blocking the calling thread until the device has trimmed.
func Ioctl(fd int, off, n int64) error {
	r := [2]uint64{uint64(off), uint64(n)}
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKDISCARD, uintptr(unsafe.Pointer(&r)))
		switch errno {
		case 0:
			return nil
		case unix.EINTR: // Go's preemption signals interrupt the wait
			continue
		}
		return os.NewSyscallError("ioctl BLKDISCARD", errno)
	}
}

// Action is what to do with the result of a BLOCK_URING_CMD_DISCARD.
type Action int

const (
	// Done: the result is the answer (0 or an error).
	Done Action = iota
	// Retry: submit the same command again.
	Retry
	// Probe: run Policy.Probe for the range, off the thread that must not
	// block.
	Probe
)

// Policy is one device's choice between the io_uring command and the
// ioctl. The zero value tries io_uring first.
type Policy struct {
	ioctl atomic.Bool
}

// Async reports whether discards should go through io_uring.
func (p *Policy) Async() bool { return !p.ioctl.Load() }

// Classify says what to do with res, the CQE result of an io_uring discard.
func Classify(res int32) Action {
	switch res {
	case -int32(unix.EAGAIN):
		return Retry
	case -int32(unix.EOPNOTSUPP):
		return Probe
	}
	return Done
}

// Probe discards [off, off+n) of fd with the ioctl after the io_uring
// command answered EOPNOTSUPP. If the ioctl works, the kernel lacks the
// command and the policy switches to the ioctl for good; if not, the device
// cannot discard and the ioctl's error is returned. It blocks.
func (p *Policy) Probe(fd int, off, n int64) error {
	if err := Ioctl(fd, off, n); err != nil {
		return err
	}
	p.ioctl.Store(true)
	return nil
}
