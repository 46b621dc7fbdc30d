package array

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
	"uraid/raid"
	"uraid/region"
	"uraid/ublk"
)

// memberMap decodes the region map the members at paths carry.
func memberMap(t *testing.T, a *Array, paths []string) *region.Map {
	t.Helper()
	sb := a.Superblock()
	var areas [][]byte
	for _, p := range paths {
		f, err := os.Open(p) // not raid.OpenMember: the array holds the members' locks
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
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 16 * mib, Members: paths})
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

// TestArrayTrimNotified: the region map hears from the discard engine when a discard's TRIMs have
// completed on every member, without a tick of the flusher: a region is trimmed once they have,
// never before, and not at all when a write to it came in between. A sync discard's regions are
// trimmed by the time it is acknowledged.
func TestArrayTrimNotified(t *testing.T) {
	t.Run("async", func(t *testing.T) {
		a, held := heldTrimMirror(t, 16*mib)
		require.NoError(t, a.MarkDirty())
		h := harness(t, a)
		rs := a.regions.m.RegionSize()
		for r := int64(2); r < 5; r++ {
			ublktest.Write(t, h, r*rs, make([]byte, 4096))
			require.False(t, a.regions.trimmed(int(r)), "written: not trimmed")
		}

		ublktest.Discard(t, h, 2*rs, 3*rs) // acknowledged once queued
		held.wait(t, 2)                    // a TRIM in flight on each member
		for r := 2; r < 5; r++ {
			assert.False(t, a.regions.trimmed(r), "region %d: acknowledged, not trimmed yet", r)
		}
		// A write to region 3 while the TRIMs are in flight: it waits for them, and the region,
		// written after the discard, must not be taken for trimmed.
		copy(h.Buf(1), bytes.Repeat([]byte{0x33}, 4096))
		require.NoError(t, h.Start(1, ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 3*rs + 8192, Length: 4096}))
		testutil.WaitFor(t, "the write parked behind the TRIMs", func() bool { return a.Status("", 0).Discard.ParkedWrites == 1 })
		for range 32 {
			held.hold <- struct{}{} // this TRIM and any the member's limits cut it into
		}
		tag, res, err := h.Wait()
		require.NoError(t, err)
		require.Equal(t, uint16(1), tag)
		require.EqualValues(t, 4096, res)
		a.DrainDiscards() // returns once the map has been told
		assert.True(t, a.regions.trimmed(2), "trimmed on both members, nothing written since")
		assert.False(t, a.regions.trimmed(3), "written while the TRIMs were in flight")
		assert.True(t, a.regions.trimmed(4))
		assert.Equal(t, bytes.Repeat([]byte{0x33}, 4096), ublktest.Read(t, h, 3*rs+8192, 4096))
	})
	t.Run("sync", func(t *testing.T) {
		a, _ := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "sync")
		defer a.Close()
		require.NoError(t, a.MarkDirty())
		h := harness(t, a)
		rs := a.regions.m.RegionSize()
		ublktest.Write(t, h, 3*rs, make([]byte, 4096))
		require.False(t, a.regions.trimmed(3))
		ublktest.Discard(t, h, 3*rs, rs)
		assert.True(t, a.regions.trimmed(3), "a sync discard's regions are trimmed when it is acknowledged")
	})
}
