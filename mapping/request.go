package mapping

import (
	"fmt"
	"math"
)

// check validates a request for length bytes at off.
func (m *Map) check(op string, off, length int64) error {
	if off%SectorBytes != 0 || length%SectorBytes != 0 {
		return fmt.Errorf("%s %d+%d: %w", op, off, length, ErrMisaligned)
	}
	if length <= 0 {
		return fmt.Errorf("%s %d+%d: %w: length must be positive", op, off, length, ErrRange)
	}
	if off < 0 || off > math.MaxInt64-length || off+length > m.size {
		return fmt.Errorf("%s %d+%d: %w of %d bytes", op, off, length, ErrRange, m.size)
	}
	return nil
}

// MaxWriteExtents returns how many extents Write can return for a request of
// length bytes, so a caller can size its slice once.
func (m *Map) MaxWriteExtents(length int64) int {
	return m.maxPieces(length) * m.Copies()
}

// MaxReadPieces returns how many pieces Read can return for a request of
// length bytes.
func (m *Map) MaxReadPieces(length int64) int {
	return m.maxPieces(length)
}

// maxPieces bounds the logically contiguous parts a request splits into.
func (m *Map) maxPieces(length int64) int {
	if length <= 0 {
		return 0
	}
	switch m.level {
	case Linear:
		return m.n
	case RAID1:
		return 1
	}
	// A request not aligned to chunks touches one chunk more than it fills.
	p := (min(length, m.size)+m.chunk-1)>>m.shift + 1
	return int(min(p, m.chunks))
}

// MaxDiscardExtents returns how many extents Discard can need while it plans,
// whatever the length; the result it returns is never longer.
func (m *Map) MaxDiscardExtents() int {
	switch m.level {
	case Linear, RAID1:
		return m.n
	}
	// Head and tail of at most one stripe each, plus the middle.
	return 2*m.n*m.Copies() + 2*m.n
}
