package uapi

// ioctl number encoding from include/uapi/asm-generic/ioctl.h. The package
// writes the ioctl-encoded ublk commands (UBLK_F_CMD_IOCTL_ENCODE) as
// literals so that they read like the kernel's; TestIoctlEncodedCommands
// recomputes each from these rules.
const (
	_IOC_NRBITS   = 8
	_IOC_TYPEBITS = 8
	_IOC_SIZEBITS = 14

	_IOC_NRSHIFT   = 0
	_IOC_TYPESHIFT = _IOC_NRSHIFT + _IOC_NRBITS
	_IOC_SIZESHIFT = _IOC_TYPESHIFT + _IOC_TYPEBITS
	_IOC_DIRSHIFT  = _IOC_SIZESHIFT + _IOC_SIZEBITS

	_IOC_NONE  = 0
	_IOC_WRITE = 1
	_IOC_READ  = 2
)

// ioc encodes an ioctl request number the way the kernel's _IOC macro does.
func ioc(dir, typ, nr, size uint32) uint32 {
	return dir<<_IOC_DIRSHIFT | typ<<_IOC_TYPESHIFT | nr<<_IOC_NRSHIFT | size<<_IOC_SIZESHIFT
}
