package raid

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// memDir is a temporary directory for member files, in memory when the machine has a tmpfs at
// /dev/shm. Every state change of an array (create, a member failing, a rebuild's checkpoints,
// the region map's flushes) fsyncs its members, dozens of times in a test; on a disk those
// flushes, not the code, set the pace of the package. What the flushes are worth is proved in the
// guest, on real devices; here they only need to be made. Tests that need a disk filesystem's
// refusals (O_DIRECT alignment) keep t.TempDir.
func memDir(t testing.TB) string {
	t.Helper()
	var fs unix.Statfs_t
	if unix.Statfs("/dev/shm", &fs) != nil || fs.Type != unix.TMPFS_MAGIC || unix.Access("/dev/shm", unix.W_OK) != nil {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "uraid-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
