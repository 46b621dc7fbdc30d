package discard

import (
	"fmt"

	"uraid/mapping"
)

// The engine speaks mapping's vocabulary: a member byte range is a
// mapping.Extent, in member data space, and a read's piece a mapping.Piece.
// It reads Member, Offset and Length; Logical is the caller's (the engine
// merges pieces of many discards into one TRIM, which has no one logical
// offset: the extents it reports, to OnError, carry Logical 0).

// checkExtent rejects what no member could hold, before anything is queued.
func checkExtent(x mapping.Extent, members int) error {
	switch {
	case x.Member < 0 || x.Member >= members:
		return fmt.Errorf("discard %s: %w: the array has %d members", extentString(x), ErrRange, members)
	case x.Offset < 0 || x.Length < 0:
		return fmt.Errorf("discard %s: %w: negative offset or length", extentString(x), ErrRange)
	case x.Offset > maxOffset-x.Length:
		return fmt.Errorf("discard %s: %w: end overflows", extentString(x), ErrRange)
	}
	return nil
}

// extentString is how messages name a member range.
func extentString(x mapping.Extent) string {
	return fmt.Sprintf("member %d [%d, %d)", x.Member, x.Offset, x.Offset+x.Length)
}

// maxOffset bounds member offsets so that end computations never overflow.
const maxOffset = 1<<63 - 1
