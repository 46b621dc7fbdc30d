package raid

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/region"
)

// memberMap decodes the region map the members at paths carry.
func memberMap(t *testing.T, a *Array, paths []string) *region.Map {
	t.Helper()
	sb := a.Superblock()
	var areas [][]byte
	for _, p := range paths {
		f, err := os.Open(p) // not OpenMember: the array holds the members' locks
		require.NoError(t, err)
		buf := make([]byte, int(sb.DataOffset)-mapAreaOffset)
		_, err = f.ReadAt(buf, mapAreaOffset)
		require.NoError(t, err)
		f.Close()
		areas = append(areas, buf)
	}
	rm, _, err := region.Load(sb.ArrayUUID, a.Map().Size(), areas)
	require.NoError(t, err)
	return rm
}

// TestArrayWriteIntent: a new array's regions are trimmed (nothing of the user's is on them); the
// first write to a region waits until the region is dirty on every member's disk; after a crash
// (no clean stop) the written region needs resync and its reads all come from one copy; a
// discard covering regions whole leaves them trimmed on disk after a clean stop.
func TestArrayWriteIntent(t *testing.T) {
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, sbs, err := Create(CreateOptions{Name: "t", Level: mapping.RAID1, Size: 16 * mib, Members: paths})
	require.NoError(t, err)
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: "async"}})
	require.NoError(t, err)
	require.NoError(t, a.MarkDirty())
	rs := a.regions.m.RegionSize()
	require.Equal(t, int64(mib), rs, "a 16 MiB array has 1 MiB regions")
	rm := memberMap(t, a, paths)
	assert.Equal(t, rm.Regions(), rm.Count(region.Trimmed), "a new array: every region trimmed, on every member")

	h := harness(t, a)
	data := bytes.Repeat([]byte{0x5a}, 8192)
	ublktest.Write(t, h, 5*rs+4096, data)
	rm = memberMap(t, a, paths)
	assert.Equal(t, region.Dirty, rm.State(5), "the write's region is dirty on disk once the write is acknowledged")
	assert.Equal(t, rm.Regions()-1, rm.Count(region.Trimmed))

	// A crash: the array goes away without a clean stop.
	h.Close()
	require.NoError(t, a.Close())
	a, err = Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	defer a.Close()
	st := a.Status("", 0)
	require.NotNil(t, st.Regions)
	assert.Equal(t, 1, st.Regions.NeedResync, "only the region being written needs resync")
	// Read before MarkDirty, which starts the resync: once it has run, reads spread again.
	h = harness(t, a)
	for range 8 {
		assert.Equal(t, data, ublktest.Read(t, h, 5*rs+4096, 8192))
	}
	st = a.Status("", 0)
	reads := []uint64{st.Members[0].IO.Reads, st.Members[1].IO.Reads}
	assert.Contains(t, [][]uint64{{8, 0}, {0, 8}}, reads, "reads of a region that needs resync come from one copy")
	require.NoError(t, a.MarkDirty())
	a.WaitSync()
	assert.Zero(t, a.Status("", 0).Regions.NeedResync, "the resync MarkDirty started has run")

	// A discard of whole regions, completed on both copies, leaves them trimmed.
	for off := int64(8 * mib); off < 12*mib; off += harnessMaxIO {
		ublktest.Write(t, h, off, make([]byte, harnessMaxIO))
	}
	ublktest.Discard(t, h, 8*rs, 3*rs)
	a.DrainDiscards()
	h.Close()
	require.NoError(t, a.MarkClean())
	rm = memberMap(t, a, paths)
	for r := 8; r < 11; r++ {
		assert.Equal(t, region.Trimmed, rm.State(r), "region %d", r)
	}
	assert.Equal(t, region.InSync, rm.State(11), "written, not discarded, idle at the stop")
	assert.Equal(t, region.InSync, rm.State(5), "resynced, idle at the stop")
}
