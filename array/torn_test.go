package array

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil/raidtest"
	"uraid/mapping"
	"uraid/raid"
)

// rewindEvents sets the events of the member at path back by one, as a crash that stopped a
// superblock update before it reached that member leaves it.
func rewindEvents(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	sb, err := raid.ReadSuperblock(f)
	require.NoError(t, err)
	sb.Events--
	require.NoError(t, raid.WriteSuperblock(f, sb))
	return sb.Events
}

// TestAssembleAfterTornSuperblockUpdate: a crash in the middle of a superblock update leaves a
// member one update behind the others without its having missed a write; it assembles as
// current, the array whole. A member one update behind because that update recorded its failure
// assembles as stale. Only the newest superblock's slot table tells the two apart: before it,
// the robustness harness found raid10 arrays that a power loss during an update left with too
// few current members to run.
func TestAssembleAfterTornSuperblockUpdate(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "sync")
	require.NoError(t, a.MarkDirty())
	require.NoError(t, a.Close()) // a crash: never marked clean
	rewindEvents(t, paths[1])     // the last update reached m0 only

	o := Options{Queues: 1, Depth: 8}
	a, err := Assemble("t", paths, o)
	require.NoError(t, err, "m1 missed only the torn update: it is current")
	assert.False(t, a.Degraded())

	require.NoError(t, a.MarkDirty())
	require.NoError(t, a.FailMember(paths[1]))
	require.NoError(t, a.Close())
	require.Equal(t, raidtest.Superblock(t, paths[0]).Events, raidtest.Superblock(t, paths[1]).Events+1, "the update that recorded the failure is m1's only one missed")

	_, err = Assemble("t", paths, o)
	require.ErrorIs(t, err, raid.ErrStaleMember, "m1's failure is on record: it is stale")
	o.Degraded = true
	a, err = Assemble("t", paths, o)
	require.NoError(t, err)
	defer a.Close()
	assert.True(t, a.Degraded(), "runs without m1")
}
