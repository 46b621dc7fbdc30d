package discard

import "time"

// Issuer trims one member on behalf of the member's lane, the one goroutine
// that issues its TRIMs. Start and Wait are called only by the lane; Wake
// from any goroutine. The lane starts at most InFlight TRIMs before their
// results come back, so an Issuer needs room for that many.
type Issuer interface {
	// Start begins a TRIM of n bytes at member offset off, never empty.
	// Its result is reported by a later Wait with the same id, a number
	// below InFlight. Start may only queue the TRIM; Wait submits it.
	Start(id int, off, n int64)
	// Wait submits what Start queued and reports finished TRIMs to done.
	// It returns after reporting at least one, after Wake, or once timeout
	// has passed (timeout < 0: no limit; 0: report what is finished
	// without waiting).
	Wait(timeout time.Duration, done func(id int, err error))
	// Wake makes a Wait in progress, or the next one, return.
	Wake()
	// Close releases the issuer once the lane has stopped.
	Close() error
}
