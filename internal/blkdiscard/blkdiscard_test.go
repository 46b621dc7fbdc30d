package blkdiscard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestClassify(t *testing.T) {
	assert.Equal(t, Done, Classify(0))
	assert.Equal(t, Retry, Classify(-int32(unix.EAGAIN)))
	assert.Equal(t, Probe, Classify(-int32(unix.EOPNOTSUPP)))
	assert.Equal(t, Done, Classify(-int32(unix.EINVAL)), "a bad range is an answer, not a reason to switch")
	assert.Equal(t, Done, Classify(-int32(unix.EIO)))
}

// A regular file is not a block device: the probe's ioctl fails, the error
// names the call, and the policy stays on io_uring, since a failed fallback
// proves nothing about the kernel.
func TestProbeFailureKeepsAsync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(1<<20))
	var p Policy
	err = p.Probe(int(f.Fd()), 0, 4096)
	require.Error(t, err)
	assert.ErrorIs(t, err, unix.ENOTTY)
	assert.Contains(t, err.Error(), "BLKDISCARD")
	assert.True(t, p.Async())
}
