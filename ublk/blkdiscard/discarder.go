package blkdiscard

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uring"
)

// Discarder discards ranges of one block device.
type Discarder struct {
	fd    int
	rings chan *uring.Ring // idle rings: one per concurrent call
	// ioctl is set once the kernel has shown it lacks the io_uring command: every later call goes
	// straight to BLKDISCARD.
	ioctl  atomic.Bool
	closed atomic.Bool
}

// New returns a Discarder for fd (a block device open for writing) that runs up to concurrency
// TRIMs at once through io_uring.
func New(fd, concurrency int) (*Discarder, error) {
	if concurrency < 1 {
		concurrency = 1
	}
	d := &Discarder{fd: fd, rings: make(chan *uring.Ring, concurrency)}
	for range concurrency {
		r, err := uring.New(2)
		if err != nil {
			if len(d.rings) == 0 {
				// No io_uring at all (disabled by sysctl, seccomp): the ioctl still works.
				d.ioctl.Store(true)
				break
			}
			d.Close()
			return nil, fmt.Errorf("blkdiscard: %w", err)
		}
		d.rings <- r
	}
	return d, nil
}

// Async reports whether discards go through io_uring (false once the kernel lacked the command).
func (d *Discarder) Async() bool { return !d.ioctl.Load() }

// Discard trims [off, off+n) of the device and returns once the device has. off and n must be
// multiples of the device's logical block size.
func (d *Discarder) Discard(off, n int64) error {
	if d.closed.Load() {
		return fmt.Errorf("blkdiscard: %w", os.ErrClosed)
	}
	if !d.ioctl.Load() {
		err := d.viaRing(off, n)
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
			return err
		}
		// Kernels before 6.12 answer EOPNOTSUPP (block devices had no uring_cmd), and so does a
		// device that cannot discard: BLKDISCARD tells the two apart.
		if ierr := Ioctl(d.fd, off, n); ierr != nil {
			return ierr
		}
		d.ioctl.Store(true)
		return nil
	}
	return Ioctl(d.fd, off, n)
}

func (d *Discarder) viaRing(off, n int64) error {
	r := <-d.rings
	defer func() { d.rings <- r }()
	for {
		sqe := r.NextSQE()
		uring.PrepDiscard(sqe, d.fd, uint64(off), uint64(n))
		res, err := r.SubmitAndWaitOne()
		if err != nil {
			return fmt.Errorf("blkdiscard: %w", err)
		}
		switch {
		case res == 0:
			return nil
		case res == -int32(unix.EAGAIN):
			continue // the block layer had no request to spare; try again
		default:
			return os.NewSyscallError("io_uring BLOCK_URING_CMD_DISCARD", unix.Errno(-res))
		}
	}
}

// Ioctl discards [off, off+n) of the block device fd with the BLKDISCARD ioctl, blocking the
// calling thread until the device has trimmed; concurrent calls on one device serialize in the
// kernel.
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

// Close releases the rings. Calls in progress must have returned.
func (d *Discarder) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	var errs []error
	for {
		select {
		case r := <-d.rings:
			errs = append(errs, r.Close())
		default:
			return errors.Join(errs...)
		}
	}
}
