package raid

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/mapping"
)

// fakeSysBlock builds a /sys/class/block of the devices given: name -> size in sectors, with
// holders and partitions as listed.
func fakeSysBlock(t *testing.T, sizes map[string]int64, holders map[string]string, parts map[string][]string) string {
	t.Helper()
	root := testutil.MemDir(t)
	write := func(p, v string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(v+"\n"), 0o644))
	}
	for name, size := range sizes {
		dir := filepath.Join(root, name)
		write(filepath.Join(dir, "size"), strconv.FormatInt(size, 10))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "holders"), 0o755))
		if h := holders[name]; h != "" {
			write(filepath.Join(dir, "holders", h), "")
		}
		for _, p := range parts[name] {
			write(filepath.Join(dir, p, "partition"), "1")
		}
	}
	return root
}

// TestBlockCandidates: the arrays' own devices, devices under a holder, partitioned disks and
// empty devices are left out; partitions, holders and plain disks are in.
func TestBlockCandidates(t *testing.T) {
	sys := fakeSysBlock(t, map[string]int64{
		"sda": 2048, "sda1": 1024, "sdb": 4096, "loop0": 0, "loop1": 8192, "dm-0": 8192,
		"ublkb0": 8192, "ublkc0": 8192, "nvme0n1": 4096, "cciss!c0d0": 4096,
	}, map[string]string{"loop1": "dm-0"}, map[string][]string{"sda": {"sda1"}})
	got, err := BlockCandidates(sys)
	require.NoError(t, err)
	assert.Equal(t, []string{"/dev/cciss/c0d0", "/dev/dm-0", "/dev/nvme0n1", "/dev/sda1", "/dev/sdb"}, got)

	_, err = BlockCandidates(filepath.Join(sys, "absent"))
	assert.Error(t, err)
}

// TestReadConfig: paths and globs, comments and blank lines; a relative path is refused with the
// line it is on; no file names nothing.
func TestReadConfig(t *testing.T) {
	dir := testutil.MemDir(t)
	for _, n := range []string{"a0", "a1", "b0"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	conf := filepath.Join(dir, "uraid.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# members\n\n"+dir+"/a*   # the a array\n  "+dir+"/b0\n"+dir+"/none*\n"), 0o600))
	got, err := ReadConfig(conf, true)
	require.NoError(t, err)
	assert.Equal(t, []string{dir + "/a0", dir + "/a1", dir + "/b0"}, got.Paths)
	assert.Empty(t, got.Arrays)

	require.NoError(t, os.WriteFile(conf, []byte(dir+"/a0\nvar/m1\n"), 0o600))
	_, err = ReadConfig(conf, false)
	assert.ErrorContains(t, err, conf+":2: \"var/m1\" is neither an absolute path nor an ARRAY line")

	got, err = ReadConfig(filepath.Join(dir, "absent.conf"), false)
	require.NoError(t, err)
	assert.Empty(t, got.Paths)
	_, err = ReadConfig(filepath.Join(dir, "absent.conf"), true)
	assert.ErrorIs(t, err, ErrNoConfig, "a file named by the user must exist")
}

// TestScanGroupsByArray: members of two arrays (one name given twice through a symlink), a
// blank file and an unreadable path: the arrays come out by name with their members, once each.
func TestScanGroupsByArray(t *testing.T) {
	dir := testutil.MemDir(t)
	mk := func(name string, n int) []string {
		var ps []string
		for i := range n {
			ps = append(ps, testutil.SparseFile(t, dir, name+strconv.Itoa(i), 16*mib))
		}
		ms, _, err := Create(CreateOptions{Name: name, Level: mapping.RAID1, Size: 8 * mib, Members: ps})
		require.NoError(t, err)
		for _, m := range ms {
			m.Close()
		}
		return ps
	}
	zeta, alpha := mk("zeta", 2), mk("alpha", 3)
	blankFile := testutil.SparseFile(t, dir, "blank", 16*mib)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(zeta[0], link))
	res := Scan(append([]string{link, blankFile, filepath.Join(dir, "absent")}, append(zeta, alpha...)...))

	require.Len(t, res.Arrays, 2)
	assert.Equal(t, "alpha", res.Arrays[0].Name)
	assert.Equal(t, "zeta", res.Arrays[1].Name)
	var paths []string
	for _, m := range res.Arrays[0].Members {
		paths = append(paths, m.Path)
	}
	assert.Equal(t, alpha, paths)
	assert.Len(t, res.Arrays[1].Members, 2, "the symlink and its target are one member")
	asm, err := CheckAssembly(res.Arrays[0].Members)
	require.NoError(t, err)
	assert.False(t, asm.Degraded())
	assert.Len(t, res.Unreadable, 1)
	assert.Contains(t, res.Unreadable, filepath.Join(dir, "absent"))
}
