package mapping

// MaxCopies bounds how many members can hold the same byte: the width of a
// RAID1 mirror. It sizes Piece.Copies so that planning a read needs no heap.
const MaxCopies = 16

// Extent is a byte range on one member.
type Extent struct {
	Member int   // index into Geometry.MemberBytes
	Offset int64 // in member data space
	Length int64
	// Logical is the array offset whose data the first byte of the extent
	// holds. For a discard extent the later bytes need not be logically
	// contiguous: a merged raid0 range holds one chunk of every stripe.
	Logical int64
}

// End returns the member offset just past the extent.
func (e Extent) End() int64 { return e.Offset + e.Length }

// Piece is a logically contiguous part of a read that lives in one place on
// each of its copies; Copies[:N] are those places, in copy order (for RAID10
// the first is the copy md calls the near or primary one).
type Piece struct {
	Logical int64
	Length  int64
	Copies  [MaxCopies]Extent
	N       int
}

// Granularity describes what a member does with discards, in its own data
// space: it discards whole units of Bytes that start at offsets congruent to
// Alignment modulo Bytes (the kernel's discard_granularity and
// discard_alignment, the latter already shifted by the member's data offset).
// Bytes 0 means the member does not support discard.
type Granularity struct {
	Bytes     int64
	Alignment int64
}
