// Package failpoint names the steps of the array's healing paths at which a crash or an error
// changes what is on disk, so that a test can stop there: hold the step until something else
// has happened, or cut the power to the members at that moment.
//
// A failpoint costs one atomic load when no hook is set, and is never on the ublk queue
// goroutine's path. Only tests and the robustness harness set a hook.
package failpoint

import "sync/atomic"

// Hook is called at each failpoint with its name, on the goroutine that reached it; the step
// goes on when Hook returns.
type Hook func(name string)

var hook atomic.Pointer[Hook]

// Set makes h the hook (nil: none) and returns the one it replaces.
func Set(h Hook) Hook {
	var old *Hook
	if h == nil {
		old = hook.Swap(nil)
	} else {
		old = hook.Swap(&h)
	}
	if old == nil {
		return nil
	}
	return *old
}

// Hit runs the hook at the failpoint name.
func Hit(name string) {
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
}
