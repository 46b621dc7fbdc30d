package mapping

import "errors"

// Sentinel errors. Every error returned by this package wraps one of them,
// so callers can test with errors.Is and still print the detailed message.
var (
	// ErrGeometry reports a Geometry that cannot form an array.
	ErrGeometry = errors.New("invalid array geometry")
	// ErrMisaligned reports a request offset or length that is not a whole
	// number of 512-byte sectors.
	ErrMisaligned = errors.New("not a multiple of the 512-byte sector")
	// ErrRange reports a request that is empty, negative, wraps around, or
	// reaches past the end of the array.
	ErrRange = errors.New("request outside the array")
	// ErrGranularity reports a discard granularity that cannot be honoured.
	ErrGranularity = errors.New("invalid discard granularity")
	// ErrParse reports a level or layout name that is not known.
	ErrParse = errors.New("unknown name")
)
