package reshape

import "errors"

// Sentinel errors. Every error New, Check and Next return wraps one of them,
// with the cause and, where there is one, the fix in the message.
var (
	// ErrUnsupported reports a reshape this package does not do: a level
	// or layout that cannot be widened in place, a change of level, layout
	// or chunk, or no more members than before.
	ErrUnsupported = errors.New("reshape not supported")
	// ErrGeometry reports members that cannot hold the reshaped array: too
	// small, unequal old members, or no room for the backup.
	ErrGeometry = errors.New("reshape geometry")
	// ErrState reports a persisted state that does not belong to this
	// reshape: a cursor off the grid or past the end, a backup descriptor
	// that is not where this geometry puts it. It is read from disk, so it
	// is an error, never a panic.
	ErrState = errors.New("invalid reshape state")
	// ErrLive reports a liveness answer that breaks its contract.
	ErrLive = errors.New("invalid liveness answer")
	// ErrDone reports a Next on a finished reshape.
	ErrDone = errors.New("reshape finished")
)
