package array

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/clock"
	"uraid/internal/testutil"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
	"uraid/ublk"
)

// mirror is a raid1 of two files for the sync tests, on a virtual clock so that pacing costs no
// time.
type mirror struct {
	t     *testing.T
	paths []string
	a     *Array
	h     *ublk.Harness
	clk   clock.Clock
}

func newMirror(t *testing.T) *mirror {
	dir := testutil.MemDir(t)
	m := &mirror{t: t, paths: []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}, clk: clock.NewVirtual(time.Unix(0, 0))}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 16 * mib, Members: m.paths})
	require.NoError(t, err)
	m.a, err = NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Clock: m.clk})
	require.NoError(t, err)
	require.NoError(t, m.a.MarkDirty())
	m.h = harness(t, m.a)
	return m
}

// crash drops the array without a clean stop and assembles it again.
func (m *mirror) crash() {
	m.h.Close()
	require.NoError(m.t, m.a.Close())
	m.assemble()
}

func (m *mirror) assemble() {
	a, err := Assemble("t", m.paths, Options{Queues: 1, Depth: 8, Clock: m.clk})
	require.NoError(m.t, err)
	m.a = a
	m.t.Cleanup(func() { a.Close() })
	m.h = harness(m.t, a)
}

// poke writes b straight onto member i's data area at array offset off, as a write that reached
// only that copy (or a drive's decay) would leave it.
func (m *mirror) poke(i int, off int64, b []byte) {
	f, err := os.OpenFile(m.paths[i], os.O_RDWR, 0)
	require.NoError(m.t, err)
	defer f.Close()
	_, err = f.WriteAt(b, int64(m.a.Superblock().DataOffset)+off)
	require.NoError(m.t, err)
	require.NoError(m.t, f.Sync())
}

func (m *mirror) peek(i int, off, n int64) []byte {
	f, err := os.Open(m.paths[i])
	require.NoError(m.t, err)
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, int64(m.a.Superblock().DataOffset)+off)
	require.NoError(m.t, err)
	return b
}

// TestResyncAfterCrash: a write that reached one copy and not the other before a crash is
// resynced at the next start, from the copy reads were served from, and only its region is.
func TestResyncAfterCrash(t *testing.T) {
	m := newMirror(t)
	rs := m.a.regions.m.RegionSize()
	data := bytes.Repeat([]byte{0x77}, 64<<10)
	ublktest.Write(t, m.h, 5*rs, data)
	m.h.Close()
	require.NoError(t, m.a.Close())
	m.poke(1, 5*rs+4096, bytes.Repeat([]byte{0x99}, 4096)) // the copies now differ
	m.assemble()
	require.NoError(t, m.a.MarkDirty()) // starts the resync
	m.a.WaitSync()
	st := m.a.SyncStatus()
	require.NotNil(t, st.Last)
	assert.Equal(t, SyncResync, st.Last.Action)
	assert.Empty(t, st.Last.Error)
	assert.Equal(t, rs, st.Last.DoneBytes, "only the region being written is resynced")
	assert.Equal(t, m.peek(0, 5*rs, rs), m.peek(1, 5*rs, rs), "the copies agree")
	assert.Equal(t, data, m.peek(0, 5*rs, 64<<10), "copied from the copy reads came from")
	assert.Zero(t, m.a.Status("", 0).Regions.NeedResync)
	for _, mem := range m.a.Status("", 0).Members {
		assert.LessOrEqual(t, mem.IO.SyncReadBytes+mem.IO.SyncWriteBytes, uint64(rs))
	}
}

// TestCheckAndRepair: a check finds one corrupted byte of one copy, by region and byte count,
// leaves out what was discarded since (whatever the drive returns there), and a repair rewrites
// the copy; a second check finds nothing.
func TestCheckAndRepair(t *testing.T) {
	m := newMirror(t)
	rs := m.a.regions.m.RegionSize()
	for off := int64(0); off < 4*rs; off += harnessMaxIO {
		ublktest.Write(t, m.h, off, bytes.Repeat([]byte{byte(off >> 16)}, harnessMaxIO))
	}
	// A discard inside region 1, not covering it whole; the drives fill it with garbage.
	ublktest.Discard(t, m.h, rs+64<<10, 128<<10)
	m.a.DrainDiscards()
	m.poke(0, rs+64<<10, bytes.Repeat([]byte{0xaa}, 128<<10))
	m.poke(1, rs+64<<10, bytes.Repeat([]byte{0x55}, 128<<10))
	// One byte of live data rots on member 1.
	m.poke(1, 2*rs+12345, []byte{0xff})

	require.NoError(t, m.a.StartSync(SyncCheck, SyncOptions{}))
	m.a.WaitSync()
	st := m.a.SyncStatus()
	require.NotNil(t, st.Last)
	assert.Equal(t, int64(1), st.Last.MismatchBytes)
	assert.Equal(t, []int{2}, st.Last.MismatchRegions)
	assert.Equal(t, 4*rs, st.Last.DoneBytes, "the untouched regions are trimmed: nothing to check there")
	assert.NotEqual(t, m.peek(0, 2*rs+12345, 1), m.peek(1, 2*rs+12345, 1), "a check changes nothing")

	require.NoError(t, m.a.StartSync(SyncRepair, SyncOptions{}))
	m.a.WaitSync()
	st = m.a.SyncStatus()
	assert.Equal(t, int64(1), st.Last.MismatchBytes)
	assert.Positive(t, st.Last.RepairedBytes)
	assert.Equal(t, m.peek(0, 2*rs, rs), m.peek(1, 2*rs, rs))

	require.NoError(t, m.a.StartSync(SyncCheck, SyncOptions{}))
	m.a.WaitSync()
	assert.Zero(t, m.a.SyncStatus().Last.MismatchBytes)
}

// TestSyncRefusals: one job at a time, a check waits for a needed resync, linear has nothing to
// compare.
func TestSyncRefusals(t *testing.T) {
	m := newMirror(t)
	clk := clock.NewManual(time.Unix(0, 0))
	m.a.syncer.clock = clk
	ublktest.Write(t, m.h, 0, make([]byte, 4096))
	require.NoError(t, m.a.StartSync(SyncCheck, SyncOptions{MaxRate: 1}))
	assert.ErrorIs(t, m.a.StartSync(SyncCheck, SyncOptions{}), ErrSyncBusy)
	assert.Equal(t, SyncCheck, m.a.SyncStatus().Action)
	assert.True(t, m.a.CancelSync())
	st := m.a.SyncStatus()
	assert.Equal(t, SyncIdle, st.Action)
	assert.True(t, st.Last.Cancelled)
	assert.False(t, m.a.CancelSync(), "nothing left to cancel")
	assert.Error(t, m.a.StartSync("scrub", SyncOptions{}))

	a, _ := createArray(t, arrayCase{mapping.Linear, mapping.NoLayout, 2, 0}, "sync")
	defer a.Close()
	assert.ErrorContains(t, a.StartSync(SyncCheck, SyncOptions{}), "no copies")
}

// TestResyncResumes: a resync stopped halfway (a stop, or a crash) resumes at the next start
// and copies only what it had not.
func TestResyncResumes(t *testing.T) {
	m := newMirror(t)
	rs := m.a.regions.m.RegionSize()
	for r := int64(0); r < 6; r++ {
		ublktest.Write(t, m.h, r*rs, make([]byte, 4096))
	}
	m.crash() // six regions to resync
	clk := clock.NewManual(time.Unix(0, 0))
	m.a.syncer.clock = clk
	require.NoError(t, m.a.regions.begin()) // MarkDirty without its own resync
	require.NoError(t, m.a.syncer.start(SyncResync, SyncOptions{MaxRate: rs}, 0))
	// At one region a second, the job waits on the clock between its steps: let it do two
	// regions, then stop it.
	for m.a.SyncStatus().DoneBytes < 2*rs {
		clk.WaitFor(1)
		clk.Advance(time.Second)
	}
	clk.WaitFor(1)
	require.True(t, m.a.CancelSync())
	first := m.a.SyncStatus().Last.DoneBytes
	m.h.Close()
	require.NoError(t, m.a.MarkClean()) // a stop: the cursor is on disk
	rm := memberMap(t, m.a, m.paths)
	c := rm.Cursor()
	assert.Equal(t, region.ActionResync, c.Action)
	assert.GreaterOrEqual(t, int64(c.Position)*rs, 2*rs, "the cursor passed the regions done")
	assert.Equal(t, 6-c.Position, rm.Resyncs(), "the regions below the cursor are resynced, on disk")
	require.NoError(t, m.a.Close())

	m.assemble()
	require.NoError(t, m.a.MarkDirty())
	m.a.WaitSync()
	second := m.a.SyncStatus().Last.DoneBytes
	assert.Equal(t, int64(6-c.Position)*rs, second, "the resumed resync copies only what was left")
	assert.LessOrEqual(t, first+second, 7*rs, "at most the region in progress is copied twice")
	assert.Zero(t, m.a.Status("", 0).Regions.NeedResync)
}

// TestCancelCheck: check --cancel stops a check or a repair, never a resync (the copies are not
// in step until it ends), and stops that race (the control socket and the array's own stop)
// cancel the job once.
func TestCancelCheck(t *testing.T) {
	m := newMirror(t)
	rs := m.a.regions.m.RegionSize()
	for r := int64(0); r < 3; r++ {
		ublktest.Write(t, m.h, r*rs, make([]byte, 4096))
	}
	clk := clock.NewManual(time.Unix(0, 0))
	m.a.syncer.clock = clk
	what, err := m.a.CancelCheck()
	require.NoError(t, err)
	assert.Empty(t, what, "nothing runs")

	require.NoError(t, m.a.StartSync(SyncRepair, SyncOptions{MaxRate: 1}))
	err = m.a.StartSync(SyncCheck, SyncOptions{})
	assert.ErrorIs(t, err, ErrSyncBusy)
	assert.ErrorContains(t, err, "uraid check --cancel t")
	clk.WaitFor(1) // the job waits on its pace
	done := make(chan struct{})
	go func() { m.a.CancelSync(); close(done) }()
	what, err = m.a.CancelCheck()
	require.NoError(t, err)
	<-done
	assert.Contains(t, []string{SyncRepair, ""}, what, "one of the two stops cancelled the repair")
	assert.True(t, m.a.SyncStatus().Last.Cancelled)

	m.crash() // three regions to resync
	clk = clock.NewManual(time.Unix(0, 0))
	m.a.syncer.clock = clk
	require.NoError(t, m.a.regions.begin())
	require.NoError(t, m.a.syncer.start(SyncResync, SyncOptions{MaxRate: 1}, 0))
	clk.WaitFor(1)
	_, err = m.a.CancelCheck()
	assert.ErrorContains(t, err, "uraid wait t", "a resync is not cancelled")
	assert.Equal(t, SyncResync, m.a.SyncStatus().Action)
	err = m.a.StartSync(SyncCheck, SyncOptions{})
	assert.ErrorIs(t, err, ErrResyncNeeded)
	assert.ErrorContains(t, err, "it runs now; wait for it (uraid wait t)")
	assert.True(t, m.a.CancelSync())

	a, _ := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 2, 0}, "sync")
	defer a.Close()
	assert.ErrorIs(t, a.StartSync(SyncCheck, SyncOptions{}), ErrNoCopies)
	assert.ErrorContains(t, a.StartSync(SyncCheck, SyncOptions{}), "check and repair are for raid1 and raid10")
	_, err = a.CancelCheck()
	assert.ErrorIs(t, err, ErrNoCopies)
}
