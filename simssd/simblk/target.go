package simblk

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"uraid/simssd"
	"uraid/ublk"
)

// DiscardGranularity is the discard unit the device advertises: the
// simulated drive's block, so that the kernel never sends a TRIM that only
// zeroes part of a block.
const DiscardGranularity = simssd.BlockSize

// Options describe the block device around the simulated drive.
type Options struct {
	// MaxDiscard bounds one discard request in bytes; zero leaves it to
	// the driver. Drives cap a TRIM (e.g. 2 GiB or less), which changes
	// how many TRIMs a large discard costs.
	MaxDiscard uint64
	// Exclusive must match the drive's simssd.Config.Exclusive: it moves
	// reads and writes off the queue goroutines, since they may wait for a
	// TRIM.
	Exclusive bool
	// Rotational sets the device's rotational attribute, which md's read
	// balancing and uraid's TRIM defaults both read.
	Rotational bool
}

// Target serves one simssd.Device. See the package doc.
type Target struct {
	dev  *simssd.Device
	opts Options
}

// New returns a target for dev.
func New(dev *simssd.Device, opts Options) (*Target, error) {
	size := dev.Size()
	if size%DiscardGranularity != 0 {
		return nil, fmt.Errorf("simulated device: size %d is not a multiple of %d bytes", size, DiscardGranularity)
	}
	if opts.MaxDiscard != 0 && opts.MaxDiscard < DiscardGranularity {
		return nil, fmt.Errorf("simulated device: max discard %d is below the granularity %d", opts.MaxDiscard, DiscardGranularity)
	}
	return &Target{dev: dev, opts: opts}, nil
}

// Params describes a 512-byte-sector device with 4 KiB physical blocks
// that discards but has no write cache to flush.
func (t *Target) Params() ublk.Params {
	return ublk.Params{
		Size:               t.dev.Size(),
		LogicalBlockSize:   512,
		PhysicalBlockSize:  simssd.BlockSize,
		IOMin:              simssd.BlockSize,
		DiscardGranularity: DiscardGranularity,
		MaxDiscardSize:     t.opts.MaxDiscard,
		Rotational:         t.opts.Rotational,
	}
}

// Serve answers r: inline when it cannot wait, else on a goroutine of its
// own, since the queue must keep dispatching while a TRIM runs.
func (t *Target) Serve(r *ublk.Request) {
	switch r.Op {
	case ublk.OpRead, ublk.OpWrite:
		if t.opts.Exclusive {
			go t.transfer(r)
			return
		}
		t.transfer(r)
	case ublk.OpDiscard:
		go t.discard(r)
	case ublk.OpFlush:
		// RAM has no cache to write back.
		r.Done(nil)
	default:
		// WRITE_ZEROES is not advertised; anything else is unknown.
		r.Done(unix.EOPNOTSUPP)
	}
}

func (t *Target) transfer(r *ublk.Request) {
	var err error
	if r.Op == ublk.OpRead {
		_, err = t.dev.ReadAt(r.Buf[:r.Length], r.Offset)
	} else {
		_, err = t.dev.WriteAt(r.Buf[:r.Length], r.Offset)
	}
	r.Done(ioError(err))
}

func (t *Target) discard(r *ublk.Request) {
	r.Done(ioError(t.dev.Discard(r.Offset, r.Length)))
}

// ioError maps the drive's errors to what the kernel understands: an access
// past the end is EINVAL (the block layer should never send one).
func ioError(err error) error {
	if errors.Is(err, simssd.ErrOutOfRange) {
		return fmt.Errorf("%w: %w", unix.EINVAL, err)
	}
	return err
}
