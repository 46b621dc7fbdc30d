package discard

import "errors"

// Errors returned or passed to completion callbacks; test with errors.Is.
var (
	// ErrClosed means the engine was closed before the discard was done.
	// Nothing was lost that a caller relied on: a discard is advisory, so
	// a dropped one leaves the old bytes in place, never corrupted ones.
	ErrClosed = errors.New("discard engine closed")

	// ErrRange means a range names a member the array does not have, or
	// an offset or length no member could hold.
	ErrRange = errors.New("invalid discard range")

	// ErrConfig means an engine configuration the engine cannot honour.
	ErrConfig = errors.New("invalid discard engine configuration")
)
