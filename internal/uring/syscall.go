package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// The raw system calls. They return the bare errno so that the hot path
// allocates nothing; callers wrap it with os.NewSyscallError.
//
// unix.Syscall6 (not RawSyscall) tells the Go scheduler that the thread may
// block, so other goroutines keep running while a ring waits.

func setup(entries uint32, p *uapi.URingParams) (int, unix.Errno) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return int(fd), errno
}

func enter(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSz uintptr) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete),
		uintptr(flags), uintptr(arg), argSz)
	return int(n), errno
}

// enter is the ring's io_uring_enter, counted.
func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSz uintptr) (int, unix.Errno) {
	r.enters.Add(1)
	return enter(r.fd, toSubmit, minComplete, flags, arg, argSz)
}

func register(fd int, op uint32, arg unsafe.Pointer, nrArgs uint32) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), uintptr(op), uintptr(arg), uintptr(nrArgs), 0, 0)
	return int(n), errno
}
