package blkdiscard

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A regular file is not a block device: the io_uring command and the ioctl both refuse it, and
// the error says which call failed.
func TestDiscardRegularFileFails(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(1<<20))
	d, err := New(int(f.Fd()), 2)
	require.NoError(t, err)
	defer d.Close()
	err = d.Discard(0, 4096)
	require.Error(t, err)
	assert.ErrorIs(t, err, unix.ENOTTY)
	assert.Contains(t, err.Error(), "BLKDISCARD")
	assert.True(t, d.Async(), "a failed fallback must not switch the discarder to the ioctl")
}

func TestDiscardConcurrentAndClose(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	d, err := New(int(f.Fd()), 3)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.Error(t, d.Discard(0, 4096))
		}()
	}
	wg.Wait()
	require.NoError(t, d.Close())
	assert.ErrorIs(t, d.Discard(0, 4096), os.ErrClosed)
	require.NoError(t, d.Close(), "Close is idempotent")
}
