package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/mapping"
	"uraid/raid"
)

func TestLeaveWorkingDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Chdir(dir)
	t.Setenv("URAID_RUN_DIR", "run")
	paths := []string{"m0", "/dev/sdb", "", "sub/../m1"}
	require.NoError(t, leaveWorkingDir(paths))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, "/", wd)
	assert.Equal(t, filepath.Join(dir, "run"), RunDir())
	assert.Equal(t, []string{filepath.Join(dir, "m0"), "/dev/sdb", "", filepath.Join(dir, "m1")}, paths)
}

// TestRunLeavesWorkingDir: a daemon started from a directory, with a relative run directory,
// lets go of the directory before it makes its socket, and makes it where the caller meant.
// A metrics address that cannot be bound ends the start after the socket, before any device.
func TestRunLeavesWorkingDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Chdir(dir)
	t.Setenv("URAID_RUN_DIR", "run")
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "wd", Level: mapping.RAID1, Size: 8 << 20, Members: []string{"m0", "m1"}})
	require.NoError(t, err)
	a, err := array.NewArray(ms, sbs, array.Options{Queues: 1, Depth: 4})
	require.NoError(t, err)
	err = Run(a, Config{Members: []string{"m0", "m1"}, MetricsListen: "no-port"}, &Notifier{}, nil)
	require.Error(t, err) // no ublk here, or the address; either way before any device
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, "/", wd)
	assert.Equal(t, filepath.Join(dir, "run"), RunDir())
	fi, err := os.Stat(filepath.Join(dir, "run"))
	require.NoError(t, err, "the run directory is made where the caller meant")
	assert.True(t, fi.IsDir())
}

func TestRotatingLogRelativePath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Chdir(dir)
	f, err := os.OpenFile("a.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(t, err)
	defer f.Close()
	w, err := newRotatingLog("a.log", f, 4)
	require.NoError(t, err)
	require.NoError(t, os.Chdir("/"))
	_, err = w.Write([]byte("12345\n"))
	require.NoError(t, err)
	_, err = w.Write([]byte("6\n")) // rotates, by the absolute path
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "a.log.1"))
	require.NoError(t, err)
	assert.Equal(t, "12345\n", string(b))
}
