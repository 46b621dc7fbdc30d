package discard

import "fmt"

// Range is one piece of an array discard on one member: Len bytes at member
// byte offset Off. raid/ converts the planner's member extents into Ranges;
// they are expected to be rounded to the member's discard granularity
// already, because the engine trims exactly what it is given.
type Range struct {
	Member int
	Off    int64
	Len    int64
}

// End is the member offset one past the last byte of r.
func (r Range) End() int64 { return r.Off + r.Len }

func (r Range) String() string {
	return fmt.Sprintf("member %d [%d, %d)", r.Member, r.Off, r.End())
}

// check rejects what no member could hold, before anything is queued.
func (r Range) check(members int) error {
	switch {
	case r.Member < 0 || r.Member >= members:
		return fmt.Errorf("discard %v: %w: the array has %d members", r, ErrRange, members)
	case r.Off < 0 || r.Len < 0:
		return fmt.Errorf("discard %v: %w: negative offset or length", r, ErrRange)
	case r.Off > maxOffset-r.Len:
		return fmt.Errorf("discard %v: %w: end overflows", r, ErrRange)
	}
	return nil
}

// maxOffset bounds member offsets so that end computations never overflow.
const maxOffset = 1<<63 - 1
