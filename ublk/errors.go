package ublk

import "errors"

// Sentinel errors; test for them with errors.Is.
var (
	// ErrNoUblk means the kernel cannot serve ublk devices: the driver is not
	// loaded, or the kernel was built without it.
	ErrNoUblk = errors.New("ublk is not available")

	// ErrPermission means the caller lacks CAP_SYS_ADMIN.
	ErrPermission = errors.New("ublk needs root (CAP_SYS_ADMIN)")

	// ErrNotSupported means the running kernel lacks a ublk feature the
	// caller asked for.
	ErrNotSupported = errors.New("not supported by this kernel's ublk driver")

	// ErrInvalidParams means the Target's Params cannot describe a block
	// device; the wrapped error says which field is wrong.
	ErrInvalidParams = errors.New("invalid ublk device parameters")

	// ErrStopped means the device has been stopped, or was never started.
	ErrStopped = errors.New("ublk device stopped")

	// ErrDaemonAlive means an orphan cleanup found the device's server
	// process still running, so the device is not an orphan.
	ErrDaemonAlive = errors.New("ublk device's server is still running")

	// ErrBusy means a safe stop found the block device open (mounted,
	// stacked on, used as swap, or open in a process) and left it alone.
	// The wrapped error names what holds it.
	ErrBusy = errors.New("is in use")
)
