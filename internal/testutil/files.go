package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Allocated is the number of bytes the filesystem holds for the files at paths, together:
// what a write into a hole takes, and what a discard punched into one gives back.
func Allocated(t testing.TB, paths ...string) int64 {
	t.Helper()
	var total int64
	for _, p := range paths {
		var st unix.Stat_t
		require.NoError(t, unix.Stat(p, &st))
		total += st.Blocks * 512
	}
	return total
}

// SparseFile makes a file of size bytes, all of them a hole, named name in dir, and returns its
// path.
func SparseFile(t testing.TB, dir, name string, size int64) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	return p
}

// shm is where a Linux machine keeps a tmpfs.
const shm = "/dev/shm"

// TmpfsDir is a temporary directory on tmpfs, removed when the test ends, or "" when the
// machine has no writable tmpfs at /dev/shm. A tmpfs is a filesystem of its own (no
// FALLOC_FL_ZERO_RANGE, for one), and one in memory.
func TmpfsDir(t testing.TB) string {
	t.Helper()
	dir, err := tmpfsDir(t)
	require.NoError(t, err)
	return dir
}

func tmpfsDir(t testing.TB) (string, error) {
	var fs unix.Statfs_t
	if unix.Statfs(shm, &fs) != nil || fs.Type != unix.TMPFS_MAGIC || unix.Access(shm, unix.W_OK) != nil {
		return "", nil
	}
	dir, err := os.MkdirTemp(shm, "uraid-test-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}

// MemDir is a temporary directory for member files, in memory when the machine has a tmpfs at
// /dev/shm (TmpfsDir), else t.TempDir(). Every state change of an array (create, a member
// failing, a rebuild's checkpoints, the region map's flushes) fsyncs its members, dozens of times
// in a test; on a disk those flushes, not the code, set the pace of a package. What the flushes
// are worth is proved in the guest, on real devices; here they only need to be made. Tests that
// need a disk filesystem's refusals (O_DIRECT alignment) keep t.TempDir.
func MemDir(t testing.TB) string {
	t.Helper()
	if dir, err := tmpfsDir(t); err == nil && dir != "" {
		return dir
	}
	return t.TempDir()
}
