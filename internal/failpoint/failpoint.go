// Package failpoint names the steps of the array's healing paths at which a crash or an error
// changes what is on disk, so that a test can stop there: hold the step until something else
// has happened, or cut the power to the members at that moment.
//
// A failpoint costs one atomic load when no hook is set, and is never on the ublk queue
// goroutine's path. Only tests and the robustness harness set a hook.
package failpoint

import "sync/atomic"

// Span is the part of the array, in bytes, that the step about to run works on: a rebuild's or
// a resync's next region. Len 0: the step has none. A hook that holds the step may send requests
// there, into the window between the step's decision and its lock.
type Span struct{ Off, Len int64 }

// Hook is called at each failpoint with its name and span, on the goroutine that reached it; the
// step goes on when Hook returns.
type Hook func(name string, at Span)

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

// Active reports whether a hook is set: a step may skip working out its span when none is.
func Active() bool { return hook.Load() != nil }

// Hit runs the hook at the failpoint name, a step with no span.
func Hit(name string) { HitAt(name, Span{}) }

// HitAt runs the hook at the failpoint name, a step that works on at.
func HitAt(name string, at Span) {
	if h := hook.Load(); h != nil {
		(*h)(name, at)
	}
}
