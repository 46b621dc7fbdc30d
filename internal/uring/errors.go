package uring

import "errors"

// Sentinel errors. Errors from the kernel are returned as *os.SyscallError
// wrapping the unix.Errno, so errors.Is(err, unix.EINVAL) works as well.
var (
	// ErrClosed is returned by any operation on a closed Ring.
	ErrClosed = errors.New("io_uring: ring is closed")

	// ErrNotSupported is returned by New when the kernel's io_uring lacks
	// a feature uraid relies on (IORING_FEAT_NODROP, Linux 5.5).
	ErrNotSupported = errors.New("io_uring: kernel feature not supported (uraid needs Linux 6.12 or later)")

	// ErrCompletionsDropped means the kernel lost completions because it
	// could not allocate room to park them while the CQ was full. Requests
	// whose CQEs were lost will never complete; the ring's owner must treat
	// its in-flight state as unknown.
	ErrCompletionsDropped = errors.New("io_uring: completion queue overflowed and completions were dropped")
)
