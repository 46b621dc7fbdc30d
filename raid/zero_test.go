package raid

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/mapping"
)

// TestZeroSuperblocksDamaged: a damaged uraid superblock is still uraid's to erase, without
// --force; a device without one is refused and left alone.
func TestZeroSuperblocksDamaged(t *testing.T) {
	dir := testutil.MemDir(t)
	ps := []string{testutil.SparseFile(t, dir, "m0", 8*mib), testutil.SparseFile(t, dir, "m1", 8*mib)}
	ms, _, err := Create(CreateOptions{Name: "z", Level: mapping.RAID1, Members: ps})
	require.NoError(t, err)
	closeAll(ms)
	writeAt(t, ps[0], []byte{0xFF}, SuperblockOffset+200) // past the magic: the checksum fails

	zs, err := ZeroSuperblocks(ps[:1], false)
	require.NoError(t, err)
	require.Len(t, zs, 1)
	assert.Nil(t, zs[0].SB)
	assert.Contains(t, zs[0].Note, "corrupt")
	f, err := os.Open(ps[0])
	require.NoError(t, err)
	defer f.Close()
	_, err = ReadSuperblock(f)
	assert.ErrorIs(t, err, ErrNotMember)

	before := fullSum(t, ps)
	_, err = ZeroSuperblocks(ps, false)
	require.ErrorIs(t, err, ErrNoSuperblock)
	assert.Equal(t, before, fullSum(t, ps), "nothing is erased when one device is refused")
}
