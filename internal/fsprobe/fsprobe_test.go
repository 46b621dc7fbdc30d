package fsprobe

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExt4(t *testing.T) {
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("mkfs.ext4 not installed (e2fsprogs)")
	}
	path := filepath.Join(t.TempDir(), "fs")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	require.NoError(t, os.Truncate(path, 64<<20))
	// A filesystem smaller than its device, as after resize2fs to less.
	out, err := exec.Command(mkfs, "-q", "-F", "-b", "4096", path, "10000").CombinedOutput()
	require.NoError(t, err, "%s", out)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	kind, size, err := Size(f)
	require.NoError(t, err)
	assert.Equal(t, "ext4", kind)
	assert.Equal(t, int64(10000*4096), size)
}

func TestXFSAndBtrfs(t *testing.T) {
	img := make([]byte, 128<<10)
	copy(img, "XFSB")
	binary.BigEndian.PutUint32(img[4:], 4096)
	binary.BigEndian.PutUint64(img[8:], 2560)
	kind, size, err := Size(bytes.NewReader(img))
	require.NoError(t, err)
	assert.Equal(t, "xfs", kind)
	assert.Equal(t, int64(2560*4096), size)

	img = make([]byte, 128<<10)
	copy(img[64<<10+0x40:], "_BHRfS_M")
	binary.LittleEndian.PutUint64(img[64<<10+0x70:], 1<<30)
	kind, size, err = Size(bytes.NewReader(img))
	require.NoError(t, err)
	assert.Equal(t, "btrfs", kind)
	assert.Equal(t, int64(1<<30), size)
}

func TestNone(t *testing.T) {
	kind, _, err := Size(bytes.NewReader(make([]byte, 1<<20)))
	require.NoError(t, err)
	assert.Equal(t, "", kind)
	kind, _, err = Size(bytes.NewReader(make([]byte, 100)))
	require.NoError(t, err, "too short for any superblock")
	assert.Equal(t, "", kind)
}
