package raid

import (
	"os"

	"golang.org/x/sys/unix"

	"uraid/ublk/blkdiscard"
)

// memberIssuer trims one member: it turns a range in the member's data space into the member's
// own discard call. It satisfies discard.Issuer.
type memberIssuer struct {
	m       *Member
	dataOff int64
	// blk discards block device members through io_uring where the kernel can (several TRIMs at
	// once, no device lock), BLKDISCARD where it cannot; nil for files.
	blk *blkdiscard.Discarder
}

func newMemberIssuer(m *Member, dataOff int64, inflight int) (memberIssuer, error) {
	i := memberIssuer{m: m, dataOff: dataOff}
	if m.Block {
		d, err := blkdiscard.New(int(m.File.Fd()), inflight)
		if err != nil {
			return i, err
		}
		i.blk = d
	}
	return i, nil
}

// Discard blocks until the member has trimmed [off, off+n) of its data space.
func (i memberIssuer) Discard(off, n int64) error {
	off += i.dataOff
	if i.blk != nil {
		return i.blk.Discard(off, n)
	}
	// On a file, a punched hole reads back as zeros and frees the blocks underneath.
	err := unix.Fallocate(int(i.m.File.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	return os.NewSyscallError("fallocate punch hole", err)
}

func (i memberIssuer) close() error {
	if i.blk != nil {
		return i.blk.Close()
	}
	return nil
}
