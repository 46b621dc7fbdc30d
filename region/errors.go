package region

import "errors"

// Sentinel errors. Every error returned by this package wraps one of them,
// so callers can test with errors.Is and still print the detailed message.
var (
	// ErrGeometry reports an array size, region size or map area that
	// cannot hold a region map.
	ErrGeometry = errors.New("invalid region map geometry")
	// ErrRange reports a request that is empty, negative, or reaches past
	// the end of the array.
	ErrRange = errors.New("request outside the array")
	// ErrProtocol reports a call out of order: EndWrite without BeginWrite,
	// a second Flush while one is in flight, Flushed for another flush.
	// It points at a bug in the caller; the map is left unchanged.
	ErrProtocol = errors.New("region map call out of order")

	// ErrNotMap means a block holds no region map magic: the area was never
	// written (an array made before region maps), was wiped, or is not a
	// uraid member.
	ErrNotMap = errors.New("no region map")
	// ErrCorrupt means the magic is present but the checksum does not
	// match: the block was torn by a crash during its write, or damaged
	// since.
	ErrCorrupt = errors.New("corrupt region map block")
	// ErrUnsupportedVersion means a newer uraid with an incompatible
	// format wrote the block.
	ErrUnsupportedVersion = errors.New("unsupported region map version")
	// ErrInvalid means a field of a block that passed its checksum holds a
	// value no map can have, or describes another array.
	ErrInvalid = errors.New("invalid region map block")
)
