package raid

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// someBlockDevice is a block device node of this machine (stat needs no permission on it).
func someBlockDevice(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/zram0", "/dev/ram0"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0 {
			return p
		}
	}
	t.Skip("no block device node in /dev to link to")
	return ""
}

func fakeByID(t *testing.T, links map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	old := ByIDDir
	ByIDDir = dir
	t.Cleanup(func() { ByIDDir = old })
	return dir
}

// TestStablePathBlockDevice: a block device is recorded by its most stable by-id link (wwn- and
// nvme-eui. first, then ata- and nvme-, then the rest, nvme-nvme. last), whatever name it is
// given by; links to other devices and partitions are not it.
func TestStablePathBlockDevice(t *testing.T) {
	dev := someBlockDevice(t)
	for _, tt := range []struct {
		links map[string]string
		want  string
	}{
		{map[string]string{"scsi-0QEMU_disk": dev, "ata-Samsung_SSD_870_S5Y1": dev, "wwn-0x5002538f4180b9a1": dev}, "wwn-0x5002538f4180b9a1"},
		{map[string]string{"nvme-nvme.144d-5333": dev, "nvme-Samsung_980_S64D": dev, "nvme-eui.002538b111b2d4a5": dev}, "nvme-eui.002538b111b2d4a5"},
		{map[string]string{"nvme-nvme.144d-5333": dev, "nvme-Samsung_980_S64D_1": dev, "nvme-Samsung_980_S64D": dev}, "nvme-Samsung_980_S64D"},
		{map[string]string{"usb-Generic_Flash-0:0": dev, "ata-X": "/dev/null", "wwn-0x1-part1": "/nonexistent"}, "usb-Generic_Flash-0:0"},
	} {
		dir := fakeByID(t, tt.links)
		assert.Equal(t, filepath.Join(dir, tt.want), StablePath(dev), "%v", tt.links)
		assert.Equal(t, filepath.Join(dir, tt.want), StablePath(filepath.Join(dir, tt.want)), "a stable name stays")
		assert.True(t, SameMemberPath(dev, filepath.Join(dir, tt.want)))
	}
	fakeByID(t, map[string]string{"wwn-0x1": "/dev/null"})
	assert.Equal(t, dev, StablePath(dev), "no link: the path as given")
	ByIDDir = filepath.Join(t.TempDir(), "absent")
	assert.Equal(t, dev, StablePath(dev), "no by-id directory: the path as given")
}

// TestStablePathFiles: a file, or a path that does not exist yet, is recorded absolute and clean,
// so that a daemon started elsewhere finds it; by-id links are not looked at for files.
func TestStablePathFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m0"), nil, 0o600))
	fakeByID(t, map[string]string{"wwn-0x1": filepath.Join(dir, "m0")})
	t.Chdir(dir)
	assert.Equal(t, filepath.Join(dir, "m0"), StablePath("m0"))
	assert.Equal(t, filepath.Join(dir, "m0"), StablePath("./sub/../m0"))
	assert.Equal(t, filepath.Join(dir, "new"), StablePath("new"), "not there yet")
	assert.Equal(t, []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}, StablePaths([]string{"m0", "m1"}))
	assert.Nil(t, StablePaths(nil))
	assert.True(t, SameMemberPath("m0", filepath.Join(dir, "m0")))
	assert.False(t, SameMemberPath("m0", ""))
	assert.False(t, SameMemberPath("m0", "m1"))
}
