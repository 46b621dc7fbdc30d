package testutil

import (
	"errors"
	"testing"
	"time"
)

// Patience bounds a wait for a state the test expects. A state that comes at all comes long
// before, on any machine however busy: the bound only turns a hang into a failure that says
// what never came, so it is generous.
const Patience = time.Minute

// The pause between two looks at a condition starts at firstPause and doubles up to maxPause:
// a state that comes at once is seen at once, and one that takes a while costs little CPU.
// A check that takes longer than the pause (a command run) is not run back to back either.
const (
	firstPause = 50 * time.Microsecond
	maxPause   = 10 * time.Millisecond
)

var errNotYet = errors.New("not yet")

// WaitFor polls cond until it holds, and fails t, naming what it waited for, if it does not
// within Patience. cond runs on the caller's goroutine.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitForWithin(t, Patience, what, cond)
}

// WaitForWithin is WaitFor with its own bound, for a state that takes long to come on a slow
// machine (a rebuild in the guest).
func WaitForWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if poll(limit, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) != nil {
		t.Fatalf("still waiting after %v for: %s", limit, what)
	}
}

// WaitForNoError polls check until it returns nil, and fails t with what it waited for and
// check's last error if it does not within limit: the error says how far the state got.
func WaitForNoError(t testing.TB, limit time.Duration, what string, check func() error) {
	t.Helper()
	if err := poll(limit, check); err != nil {
		t.Fatalf("still waiting after %v for: %s: %v", limit, what, err)
	}
}

// poll runs check until it returns nil, or returns its last error once limit has passed.
func poll(limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	pause := firstPause
	for {
		began := time.Now()
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(max(pause, time.Since(began)))
		pause = min(2*pause, maxPause)
	}
}

// Receive waits for a value on ch and returns it, and fails t, naming what it waited for, if none
// comes within Patience. A closed channel gives its zero value, as a receive does.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return receiveWithin(t, Patience, ch, what)
}

func receiveWithin[T any](t testing.TB, limit time.Duration, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("still waiting after %v for: %s", limit, what)
		var zero T
		return zero
	}
}
