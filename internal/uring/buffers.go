package uring

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// The ring's fixed-buffer table, which READ_FIXED and WRITE_FIXED index
// (SQE.BufIndex). It is filled either by the application from its own
// memory (RegisterBuffers) or, slot by slot, by a driver that lends the
// ring the pages of a kernel request: ublk's UBLK_F_AUTO_BUF_REG and
// UBLK_U_IO_REGISTER_IO_BUF fill slots of a sparse table. The address of a
// fixed I/O is then the user address inside an application buffer, or the
// byte offset into a kernel request's pages.

// RegisterBuffersSparse makes a table of n empty slots (Linux 5.19).
func (r *Ring) RegisterBuffersSparse(n uint32) error {
	arg := uapi.RsrcRegister{Nr: n, Flags: uapi.IORING_RSRC_REGISTER_SPARSE}
	return r.registerBuffers2(&arg, n)
}

// RegisterBuffers fills the table with bufs, slot i with bufs[i]. The
// memory must stay mapped until the ring is closed or the table
// unregistered; the kernel pins it.
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	iov := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) > 0 {
			iov[i].Base = unsafe.SliceData(b)
			iov[i].SetLen(len(b))
		}
	}
	arg := uapi.RsrcRegister{Nr: uint32(len(bufs))}
	if len(iov) > 0 {
		arg.Data = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(iov))))
	}
	return r.registerBuffers2(&arg, uint32(len(bufs)))
}

func (r *Ring) registerBuffers2(arg *uapi.RsrcRegister, n uint32) error {
	if r.fd < 0 {
		return ErrClosed
	}
	_, errno := register(r.fd, uapi.IORING_REGISTER_BUFFERS2, unsafe.Pointer(arg), uint32(unsafe.Sizeof(*arg)))
	if errno != 0 {
		err := fmt.Errorf("io_uring register %d buffers: %w", n, os.NewSyscallError("io_uring_register", errno))
		if errno == unix.ENOMEM {
			err = fmt.Errorf("%w (locked memory limit too low? raise ulimit -l)", err)
		}
		return err
	}
	return nil
}

// UnregisterBuffers empties the table.
func (r *Ring) UnregisterBuffers() error {
	if r.fd < 0 {
		return ErrClosed
	}
	if _, errno := register(r.fd, uapi.IORING_UNREGISTER_BUFFERS, nil, 0); errno != 0 {
		return fmt.Errorf("io_uring unregister buffers: %w", os.NewSyscallError("io_uring_register", errno))
	}
	return nil
}
