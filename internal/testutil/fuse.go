package testutil

import (
	"os"
	"testing"
)

// NeedFUSE is the gate of the tests that mount simulated disks over FUSE: it skips t unless
// URAID_ROBUST is set (make robustness and make test set it), and fails t if URAID_ROBUST is set
// where FUSE cannot be mounted (no /dev/fuse, or not root), so that a run that must test does
// not pass by skipping.
func NeedFUSE(t testing.TB) {
	t.Helper()
	if os.Getenv("URAID_ROBUST") == "" {
		t.Skip("the tests over FUSE disks run with URAID_ROBUST=1 (make robustness)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Fatalf("URAID_ROBUST is set but FUSE is not usable here (/dev/fuse: %v, euid %d): run as root on a host with fuse", err, os.Geteuid())
	}
}
