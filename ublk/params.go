package ublk

import (
	"fmt"
	"math"
	"math/bits"

	"uraid/internal/uapi"
)

// Params describe the block device a Target presents. Sizes are in bytes.
type Params struct {
	// Size of the device; a multiple of LogicalBlockSize.
	Size int64
	// LogicalBlockSize is the smallest addressable unit: a power of two
	// from 512 to the page size. Zero means 512.
	LogicalBlockSize uint32
	// PhysicalBlockSize is the unit writes should come in to avoid
	// read-modify-write; at least LogicalBlockSize. Zero means
	// LogicalBlockSize.
	PhysicalBlockSize uint32
	// IOMin and IOOpt are the preferred minimum and optimal I/O sizes
	// (powers of two), or zero for no hint.
	IOMin, IOOpt uint32
	// ChunkSize, when not zero, keeps every read and write inside one
	// aligned chunk of this size (a power of two, a multiple of 512).
	// Discards are not split at it.
	ChunkSize uint32

	// DiscardGranularity is the unit of discard; zero disables discard.
	DiscardGranularity uint32
	// DiscardAlignment is the offset of the first discard unit.
	DiscardAlignment uint32
	// MaxDiscardSize bounds one discard request; zero means as large as
	// the driver allows.
	MaxDiscardSize uint64
	// MaxWriteZeroesSize bounds one WRITE_ZEROES request; zero disables
	// WRITE_ZEROES.
	MaxWriteZeroesSize uint64

	// VolatileCache makes the kernel send FLUSH requests: the target has
	// a write cache that FLUSH must make durable.
	VolatileCache bool
	// FUA makes the kernel send writes flagged FUA instead of following
	// them with a FLUSH. It needs VolatileCache.
	FUA bool
	// ReadOnly and Rotational set the block device's attributes.
	ReadOnly, Rotational bool
}

// maxSectorsField is the largest value of a u32 sector count that is still a
// whole number of 4 KiB blocks, so that a clamped limit never breaks the
// device's alignment.
const maxSectorsField = math.MaxUint32 &^ 7

// validate checks p against the rules of the ublk driver and the block
// layer, so that a bad target is refused with a reason rather than an
// opaque -EINVAL from SET_PARAMS.
func (p Params) validate(pageSize int) error {
	lbs, pbs := p.logical(), p.physical()
	switch {
	case !isPow2(uint64(lbs)) || lbs < 512 || int(lbs) > pageSize:
		return fmt.Errorf("%w: logical block size %d is not a power of two from 512 to %d", ErrInvalidParams, lbs, pageSize)
	case !isPow2(uint64(pbs)) || pbs < lbs:
		return fmt.Errorf("%w: physical block size %d is not a power of two >= the logical block size %d", ErrInvalidParams, pbs, lbs)
	case p.Size <= 0 || p.Size%int64(lbs) != 0:
		return fmt.Errorf("%w: size %d is not a positive multiple of the logical block size %d", ErrInvalidParams, p.Size, lbs)
	case p.IOMin != 0 && !isPow2(uint64(p.IOMin)), p.IOOpt != 0 && !isPow2(uint64(p.IOOpt)):
		return fmt.Errorf("%w: io_min %d and io_opt %d must be powers of two", ErrInvalidParams, p.IOMin, p.IOOpt)
	case p.ChunkSize != 0 && (!isPow2(uint64(p.ChunkSize)) || p.ChunkSize < lbs):
		return fmt.Errorf("%w: chunk size %d is not a power of two >= the logical block size %d", ErrInvalidParams, p.ChunkSize, lbs)
	case p.DiscardGranularity != 0 && p.DiscardGranularity%lbs != 0:
		return fmt.Errorf("%w: discard granularity %d is not a multiple of the logical block size %d", ErrInvalidParams, p.DiscardGranularity, lbs)
	case p.DiscardGranularity == 0 && (p.DiscardAlignment != 0 || p.MaxDiscardSize != 0):
		return fmt.Errorf("%w: discard alignment or maximum set without a discard granularity", ErrInvalidParams)
	case p.DiscardGranularity != 0 && p.DiscardAlignment >= p.DiscardGranularity:
		return fmt.Errorf("%w: discard alignment %d is not below the granularity %d", ErrInvalidParams, p.DiscardAlignment, p.DiscardGranularity)
	case p.MaxDiscardSize != 0 && p.MaxDiscardSize < uint64(p.DiscardGranularity):
		return fmt.Errorf("%w: max discard size %d is below the granularity %d", ErrInvalidParams, p.MaxDiscardSize, p.DiscardGranularity)
	case p.FUA && !p.VolatileCache:
		return fmt.Errorf("%w: FUA needs VolatileCache (the kernel drops FUA on a device without a write cache)", ErrInvalidParams)
	}
	return nil
}

func (p Params) logical() uint32 {
	if p.LogicalBlockSize == 0 {
		return 512
	}
	return p.LogicalBlockSize
}

func (p Params) physical() uint32 {
	if p.PhysicalBlockSize == 0 {
		return p.logical()
	}
	return p.PhysicalBlockSize
}

// encode turns validated Params into the driver's struct for SET_PARAMS.
// maxIOBytes is the per-tag buffer size, which bounds max_sectors.
func (p Params) encode(maxIOBytes uint32) uapi.Params {
	var kp uapi.Params
	kp.Len = uint32(sizeofParams)
	kp.Types = uapi.UBLK_PARAM_TYPE_BASIC

	b := &kp.Basic
	if p.ReadOnly {
		b.Attrs |= uapi.UBLK_ATTR_READ_ONLY
	}
	if p.Rotational {
		b.Attrs |= uapi.UBLK_ATTR_ROTATIONAL
	}
	if p.VolatileCache {
		b.Attrs |= uapi.UBLK_ATTR_VOLATILE_CACHE
	}
	if p.FUA {
		b.Attrs |= uapi.UBLK_ATTR_FUA
	}
	b.LogicalBsShift = log2(p.logical())
	b.PhysicalBsShift = log2(p.physical())
	if p.IOOpt != 0 {
		b.IOOptShift = log2(p.IOOpt)
	}
	if p.IOMin != 0 {
		b.IOMinShift = log2(p.IOMin)
	}
	b.MaxSectors = maxIOBytes >> 9
	b.ChunkSectors = p.ChunkSize >> 9
	b.DevSectors = uint64(p.Size) >> 9

	if p.DiscardGranularity != 0 || p.MaxWriteZeroesSize != 0 {
		kp.Types |= uapi.UBLK_PARAM_TYPE_DISCARD
		d := &kp.Discard
		// The driver rejects a zero granularity even when only
		// WRITE_ZEROES is wanted.
		d.DiscardGranularity = p.logical()
		if p.DiscardGranularity != 0 {
			d.DiscardGranularity = p.DiscardGranularity
			d.DiscardAlignment = p.DiscardAlignment
			d.MaxDiscardSectors = sectorsField(p.MaxDiscardSize)
			// One contiguous range per request: the engine splits
			// it per member itself.
			d.MaxDiscardSegments = 1
		}
		if p.MaxWriteZeroesSize != 0 {
			d.MaxWriteZeroesSectors = sectorsField(p.MaxWriteZeroesSize)
		}
	}
	return kp
}

// sectorsField converts a byte limit to a u32 sector count, where zero
// ("no limit") and anything too large both become the largest count.
func sectorsField(bytes uint64) uint32 {
	s := bytes >> 9
	if s == 0 || s > maxSectorsField {
		return maxSectorsField
	}
	return uint32(s)
}

func isPow2(v uint64) bool { return v != 0 && v&(v-1) == 0 }

func log2(v uint32) uint8 { return uint8(bits.TrailingZeros32(v)) }
