// Package verify gates invariant checks that are too slow for production:
// with URAID_VERIFY=1 in the environment (make test sets it), the discard
// engine and the ublk queues check their structures and counters after
// every change and panic on the first violation, so a bug shows where it
// happens instead of as corrupt data later.
package verify

import (
	"fmt"
	"os"
)

// On reports whether invariant checks run; read once at start.
var On = os.Getenv("URAID_VERIFY") == "1"

// Check panics with the formatted message when ok is false and checks are
// on. Call it as `if verify.On { verify.Check(...) }` on hot paths, so the
// arguments cost nothing when checks are off.
func Check(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("uraid invariant violated: "+format, args...))
	}
}
