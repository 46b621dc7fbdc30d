package raid

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memberIssuer trims one member: it turns a range in the member's data space into the
// member's own discard call. It satisfies discard.Issuer.
type memberIssuer struct {
	m       *Member
	dataOff int64
}

// Discard blocks until the member has trimmed [off, off+n) of its data space.
func (i memberIssuer) Discard(off, n int64) error {
	fd := int(i.m.File.Fd())
	off += i.dataOff
	if !i.m.Block {
		// On a file, a punched hole reads back as zeros and frees the blocks underneath.
		err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		return os.NewSyscallError("fallocate punch hole", err)
	}
	r := [2]uint64{uint64(off), uint64(n)}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKDISCARD, uintptr(unsafe.Pointer(&r)))
	if errno != 0 {
		return os.NewSyscallError("ioctl BLKDISCARD", errno)
	}
	return nil
}
