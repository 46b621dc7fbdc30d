package array

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/discard"
	"uraid/internal/clock"
	"uraid/internal/discardtest"
	"uraid/internal/failpoint"
	"uraid/internal/testutil"
	"uraid/internal/testutil/raidtest"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/raid"
	"uraid/ublk"
)

// TestRefusedFailLeavesStatesAlone: a refused `uraid fail` of the last copy decides on a copy of
// the member states; the live ones, which the queue goroutine serves by, never change. (It
// once stored MemberFailed into the live state to ask the question: a read in that moment found
// no copy, and a map flush marked the map degraded.)
func TestRefusedFailLeavesStatesAlone(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, "")
	t.Cleanup(func() { a.Close() })
	require.NoError(t, a.FailMember(paths[1])) // member 0 now holds the last copy of its chunks
	var stop, changed atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if MemberState(a.state[0].Load()) != MemberActive {
				changed.Store(true)
			}
		}
	}()
	for range 20000 {
		require.ErrorIs(t, a.FailMember(paths[0]), ErrLastCopy)
		if changed.Load() {
			break
		}
	}
	stop.Store(true)
	<-done
	assert.False(t, changed.Load(), "a refused fail changed the live state of the member it refused")
	assert.Equal(t, MemberActive, MemberState(a.state[0].Load()))
}

// fileSums returns a digest of each file's whole contents.
func fileSums(t *testing.T, paths []string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%x", sha256.Sum256(b)))
	}
	return out
}

// TestAssembleRefusesMismatchedMember: a member too small for the array's data area, or whose
// superblock puts its data at another offset, is refused at assemble, by name, with what to do,
// and nothing is written to any member. (Assemble once served every member at the reference
// superblock's offset and never looked at sizes: such a member failed at its first I/O.)
func TestAssembleRefusesMismatchedMember(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "")
		need := int64(a.Superblock().DataOffset + a.Superblock().DataSize)
		require.NoError(t, a.Close())
		require.NoError(t, os.Truncate(paths[1], need-4096))
		before := fileSums(t, paths)
		_, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
		require.ErrorIs(t, err, raid.ErrTooSmall)
		assert.Contains(t, err.Error(), paths[1])
		assert.Contains(t, err.Error(), "leave it out")
		assert.Equal(t, before, fileSums(t, paths), "a refused assemble wrote to a member")
	})
	t.Run("offset", func(t *testing.T) {
		a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "")
		require.NoError(t, a.Close())
		f, err := os.OpenFile(paths[1], os.O_RDWR, 0)
		require.NoError(t, err)
		sb, err := raid.ReadSuperblock(f)
		require.NoError(t, err)
		sb.DataOffset += 1 << 20
		require.NoError(t, raid.WriteSuperblock(f, sb))
		require.NoError(t, f.Close())
		before := fileSums(t, paths)
		_, err = Assemble("t", paths, Options{Queues: 1, Depth: 8})
		require.ErrorIs(t, err, raid.ErrGeometryMismatch)
		assert.Contains(t, err.Error(), "data offset")
		assert.Contains(t, err.Error(), paths[1])
		assert.Equal(t, before, fileSums(t, paths), "a refused assemble wrote to a member")
	})
}

// setHook sets a failpoint hook for the test's length.
func setHook(t *testing.T, h failpoint.Hook) {
	t.Helper()
	old := failpoint.Set(h)
	t.Cleanup(func() { failpoint.Set(old) })
}

// TestRebuildTrimRace: a write that lands in a trimmed region just before the rebuild takes it
// is on the rebuilt member afterwards. (The rebuild once decided that the region was trimmed
// before it locked it, then punched the write out of the new member: a hole where the other
// copy had data, in a region later counted in sync.)
func TestRebuildTrimRace(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	data := bytes.Repeat([]byte{0x5a}, 64<<10)
	var hits atomic.Int32
	var werr error
	setHook(t, func(name string, _ failpoint.Span) {
		if name != FailpointRebuildRegion || hits.Add(1) != 3 {
			return
		}
		// The rebuild is about to take region 2, trimmed until this write.
		copy(m.h.Buf(0), data)
		res, err := m.h.Do(ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 2 * rs, Length: int64(len(data))})
		if err == nil && res != int32(len(data)) {
			err = fmt.Errorf("write result %d", res)
		}
		werr = err
	})
	fresh := blank(t, "new")
	_, err := m.a.AddMember(fresh, false)
	require.NoError(t, err)
	m.a.WaitSync()
	require.NoError(t, werr)
	require.GreaterOrEqual(t, hits.Load(), int32(3))
	require.Empty(t, m.a.SyncStatus().Last.Error)
	require.NoError(t, m.a.FailMember(m.paths[0]))
	assert.Equal(t, data, ublktest.Read(t, m.h, 2*rs, len(data)), "the rebuilt member lost the write")
}

// pausedAfter starts a job with start, paced to a region a second on a manual clock, and returns
// once the job has done at least n bytes and waits for the clock, which it returns.
func pausedAfter(t *testing.T, a *Array, n int64, start func()) *clock.Manual {
	t.Helper()
	rs := a.regions.m.RegionSize()
	clk := clock.NewManual(time.Unix(0, 0))
	a.syncer.clock = clk
	a.SetRebuildOptions(SyncOptions{MaxRate: rs})
	start()
	for a.SyncStatus().DoneBytes < n {
		clk.WaitFor(1)
		clk.Advance(time.Second)
	}
	clk.WaitFor(1)
	return clk
}

// TestRebuildLeavesOtherPairsToResync: on a raid10, a region a crash left with differing copies
// on one mirror pair still gets resynced after another pair's member is rebuilt. (The rebuild
// once marked every region needing resync as resynced, although it copied only its own pair's
// pieces.)
func TestRebuildLeavesOtherPairsToResync(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, "")
	require.NoError(t, a.MarkDirty())
	h := harness(t, a)
	ublktest.Write(t, h, 0, bytes.Repeat([]byte{0x11}, 256<<10)) // chunks 0-3, on both pairs
	h.Close()
	require.NoError(t, a.Close()) // a crash: the region stays dirty, the array unclean
	dataOff := int64(a.Superblock().DataOffset)
	// A write the crash cut short reached member 3 and not member 2 (chunk 1 is their pair's).
	f, err := os.OpenFile(paths[3], os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0x99}, 4096), dataOff)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.FailMember(paths[1])) // before the resync can start
	require.NoError(t, b.MarkDirty())
	require.NoError(t, b.RemoveMember(paths[1]))
	_, err = b.AddMember(blank(t, "new"), false)
	require.NoError(t, err)
	b.WaitSync()
	assert.Zero(t, b.Status("", 0).Regions.NeedResync)
	got2, err := os.ReadFile(paths[2])
	require.NoError(t, err)
	got3, err := os.ReadFile(paths[3])
	require.NoError(t, err)
	assert.True(t, bytes.Equal(got2[dataOff:], got3[dataOff:]), "members 2 and 3, one mirror pair, differ after rebuild and resync")
}

// TestResumedRebuildResyncsBelowItsCheckpoint: after a crash, a resumed rebuild leaves the
// regions below its checkpoint that need resync to the resync that follows: a write the crash
// cut short may have reached one copy only. (Every region needing resync was once counted in
// sync when the rebuild ended.)
func TestResumedRebuildResyncsBelowItsCheckpoint(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	m.fill(0, 1, 2, 3, 4, 5, 6, 7)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	fresh := blank(t, "new")
	pausedAfter(t, m.a, 3*rs, func() { _, err := m.a.AddMember(fresh, false); require.NoError(t, err) })
	m.h.Close()
	require.NoError(t, m.a.Close()) // a crash in the middle of the rebuild
	m.paths[1] = fresh
	m.poke(1, rs, bytes.Repeat([]byte{0x99}, 4096)) // a write cut short, on the new copy only
	m.assemble()
	require.NoError(t, m.a.MarkDirty())
	m.a.WaitSync()
	assert.Empty(t, m.a.SyncStatus().Last.Error)
	assert.Zero(t, m.a.Status("", 0).Regions.NeedResync)
	assert.Equal(t, m.peek(0, 0, 8*rs), m.peek(1, 0, 8*rs), "the copies differ after the rebuild")
}

// TestResumedReAddCopiesOnlyWhatItMissed: a re-add stopped halfway resumes as a re-add, copying
// only the regions written while the member was away. (That it was a re-add was not recorded: a
// resumed one copied every live region.)
func TestResumedReAddCopiesOnlyWhatItMissed(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	want := m.fill(0, 1, 2, 3, 4, 5, 6, 7)
	m.a.regions.lazy(0) // the flusher's tick, come early: the regions go back to in sync
	require.NoError(t, m.a.FailMember(m.paths[1]))
	for r, d := range m.fill(2, 5) {
		want[r] = d
	}
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	pausedAfter(t, m.a, rs, func() { _, err := m.a.AddMember(m.paths[1], false); require.NoError(t, err) })
	first := m.syncWritten(1)
	m.h.Close()
	require.NoError(t, m.a.MarkClean()) // a stop in the middle
	require.NoError(t, m.a.Close())
	m.assemble()
	require.NoError(t, m.a.MarkDirty())
	m.a.WaitSync()
	assert.Empty(t, m.a.SyncStatus().Last.Error)
	assert.Equal(t, "active", m.a.Status("", 0).Members[1].State)
	// The two regions written while it was away, one of them perhaps twice (in progress at the stop).
	assert.LessOrEqual(t, first+m.syncWritten(1), uint64(3*rs), "the resumed re-add copies only the regions written while it was away")
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want)
}

// TestWriteAfterFailWaitsForTheRecord: a write served after a member is out of service, before
// its failure is in the superblocks, is acknowledged only once the superblocks say so: a crash
// then cannot bring the member back as current without the write. (Such a write was
// acknowledged at once, and a write that failed a copy waited for a superblock write whose error
// it ignored.)
func TestWriteAfterFailWaitsForTheRecord(t *testing.T) {
	m := newMirrorWith(t, 0)
	var once atomic.Bool
	var werr error
	var acked, failedAt uint64
	setHook(t, func(name string, _ failpoint.Span) {
		if name != FailpointFailed || !once.CompareAndSwap(false, true) {
			return
		}
		copy(m.h.Buf(0), bytes.Repeat([]byte{0x33}, 4096))
		_, werr = m.h.Do(ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 0, Length: 4096})
		acked, failedAt = raidtest.Superblock(t, m.paths[0]).Events, raidtest.Superblock(t, m.paths[1]).Events
	})
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, werr)
	require.True(t, once.Load())
	assert.Greater(t, acked, failedAt, "the write was acknowledged before the superblocks said member 1 failed")
}

// TestFlushAfterFailWaitsForTheRecord: a flush served after a member is out of service, before
// its failure is in the superblocks, is acknowledged only once the superblocks say so. The flush
// no longer reaches that member, whose cache may still hold writes it took before it failed: a
// crash before the record would bring it back as current with those writes gone, and a resync
// could copy its stale blocks over the durable ones. (Such a flush was acknowledged at once. Found
// by the robustness harness, seed 3 on raid10-far.)
func TestFlushAfterFailWaitsForTheRecord(t *testing.T) {
	m := newMirrorWith(t, 0)
	ublktest.Write(t, m.h, 0, bytes.Repeat([]byte{0x34}, 4096))
	var once atomic.Bool
	var ferr error
	var res int32
	var acked, failedAt uint64
	setHook(t, func(name string, _ failpoint.Span) {
		if name != FailpointFailed || !once.CompareAndSwap(false, true) {
			return
		}
		res, ferr = m.h.Do(ublk.HarnessRequest{Op: ublk.OpFlush})
		acked, failedAt = raidtest.Superblock(t, m.paths[0]).Events, raidtest.Superblock(t, m.paths[1]).Events
	})
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, ferr)
	require.Zero(t, res)
	require.True(t, once.Load())
	assert.Greater(t, acked, failedAt, "the flush was acknowledged before the superblocks said member 1 failed")
}

// TestReAddOfUnfinishedRebuild: a member that failed in the middle of its rebuild and is added
// again is rebuilt whole; it holds only the regions the rebuild got to. (It was taken for a member
// that left whole and given only the regions written meanwhile. Found by the robustness harness,
// seed 5.)
func TestReAddOfUnfinishedRebuild(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	want := m.fill(0, 1, 2, 3, 4, 5)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	fresh := blank(t, "new")
	pausedAfter(t, m.a, rs, func() { _, err := m.a.AddMember(fresh, false); require.NoError(t, err) })
	require.NoError(t, m.a.FailMember(fresh))
	m.a.WaitSync()
	require.NoError(t, m.a.RemoveMember(fresh))
	m.a.SetRebuildOptions(SyncOptions{})
	m.a.syncer.clock = m.clk
	msg, err := m.a.AddMember(fresh, false)
	require.NoError(t, err)
	assert.Contains(t, msg, "rebuilt whole")
	m.a.WaitSync()
	require.Empty(t, m.a.SyncStatus().Last.Error)
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want)
}

// trimGates holds each member's TRIMs at a gate of its own, then punches them for real.
type trimGates struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
	in    chan string // a TRIM reached the member at this path
}

func (g *trimGates) gate(path string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[path] == nil {
		g.gates[path] = make(chan struct{}, 16)
	}
	return g.gates[path]
}

func (g *trimGates) issuer(m *raid.Member, dataOff int64, inflight int) (discard.Issuer, error) {
	return discardtest.Blocking(func(off, n int64) error {
		g.in <- m.Path
		<-g.gate(m.Path)
		return os.NewSyscallError("fallocate", unix.Fallocate(int(m.File.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, dataOff+off, n))
	}, nil), nil
}

// gatedMirror is a serving raid1 of two files whose TRIMs wait at trimGates.
func gatedMirror(t *testing.T) (*Array, *ublk.Harness, []string, *trimGates) {
	t.Helper()
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 8 * mib, Members: paths})
	require.NoError(t, err)
	g := &trimGates{gates: map[string]chan struct{}{}, in: make(chan string, 16)}
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: "async"}, newIssuer: g.issuer})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	require.NoError(t, a.MarkDirty())
	return a, harness(t, a), paths, g
}

// TestParkedReadSkipsARebuiltSlot: a read parked behind a TRIM, whose other copy's member fails
// and is replaced by a blank device being rebuilt meanwhile, reads from the copy that holds the
// data when it goes on, never from the blank one. (The copies a read could use were chosen when
// it arrived; the new device took the failed one's place in the engine and the read took zeros
// from it. Found by the robustness harness, seed 5.)
func TestParkedReadSkipsARebuiltSlot(t *testing.T) {
	for slot := range 2 {
		t.Run(fmt.Sprint("slot", slot), func(t *testing.T) {
			a, h, paths, g := gatedMirror(t)
			data := bytes.Repeat([]byte{0x44}, 64<<10)
			ublktest.Write(t, h, 0, data)
			ublktest.Discard(t, h, 0, 4096) // one block of sixteen
			<-g.in
			<-g.in
			require.NoError(t, h.Start(1, ublk.HarnessRequest{Op: ublk.OpRead, Offset: 0, Length: 64 << 10}))
			require.NoError(t, a.FailMember(paths[slot]))
			require.NoError(t, a.RemoveMember(paths[slot]))
			added := make(chan error, 1)
			go func() { _, err := a.AddMember(blank(t, "new"), false); added <- err }()
			g.gate(paths[slot]) <- struct{}{} // the failed member's TRIM ends: its slot is revived
			require.NoError(t, <-added)
			g.gate(paths[1-slot]) <- struct{}{} // the survivor's: the read goes on
			tag, res, err := h.Wait()
			require.NoError(t, err)
			require.Equal(t, uint16(1), tag)
			require.EqualValues(t, 64<<10, res)
			assert.Equal(t, data[4096:], h.Buf(1)[4096:64<<10], "the parked read took bytes from the device being rebuilt")
			for range 4 {
				g.gate(paths[1-slot]) <- struct{}{}
			}
			a.WaitSync()
		})
	}
}

// TestParkedWriteAfterRemove: a write parked behind a TRIM whose member is failed and removed
// meanwhile goes on to the other copy, and is acknowledged once the failure is on record. (It
// went on to the removed slot, a nil member: the daemon crashed. Found by the robustness
// harness, seed 1 on raid10.)
func TestParkedWriteAfterRemove(t *testing.T) {
	a, h, paths, g := gatedMirror(t)
	ublktest.Write(t, h, 0, bytes.Repeat([]byte{0x11}, 64<<10))
	ublktest.Discard(t, h, 0, 4096)
	<-g.in
	<-g.in
	data := bytes.Repeat([]byte{0x55}, 64<<10)
	copy(h.Buf(1), data)
	require.NoError(t, h.Start(1, ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 0, Length: 64 << 10}))
	require.NoError(t, a.FailMember(paths[1]))
	require.NoError(t, a.RemoveMember(paths[1]))
	g.gate(paths[0]) <- struct{}{}
	g.gate(paths[1]) <- struct{}{} // its TRIM in flight ends (on a closed descriptor)
	tag, res, err := h.Wait()
	require.NoError(t, err)
	require.Equal(t, uint16(1), tag)
	require.EqualValues(t, 64<<10, res)
	assert.Equal(t, data, ublktest.Read(t, h, 0, 64<<10))
}

// TestReplaceWhoseMemberLeaves: a replace whose old member fails by an I/O error and is removed
// before the copy ends lets the replacement go instead of swapping it into an empty slot. (The
// swap took the removed member's descriptor: nil, the daemon crashed. Found by the robustness
// harness, seed 2 on raid10.)
func TestReplaceWhoseMemberLeaves(t *testing.T) {
	m := newMirrorWith(t, 0)
	want := m.fill(0, 1, 2)
	fresh := blank(t, "new")
	startPaced(t, m.a, func() { require.NoError(t, m.a.ReplaceMember(m.paths[1], fresh, false)) }, func() {
		m.a.fail(1, errors.New("an I/O error")) // as the data path does; no admin cancels the replace
		require.NoError(t, m.a.RemoveMember(m.paths[1]))
	})
	require.NotNil(t, m.a.SyncStatus().Last)
	assert.Contains(t, m.a.SyncStatus().Last.Error, "left the array")
	m.readAll(want)
}

// TestReadPreparedBeforeASlotIsRefilled: a read prepared on a slot's descriptor, then a failure,
// a remove and an add that installs a blank device on that descriptor number before the read is
// submitted: the read reaches the new device, not rebuilt there yet, and must not return what it
// read. (It returned zeros for data both copies held. Found by the robustness harness, seed 14 on
// raid10-far.)
func TestReadPreparedBeforeASlotIsRefilled(t *testing.T) {
	for slot := range 2 {
		t.Run(fmt.Sprint("slot", slot), func(t *testing.T) {
			m := newMirrorWith(t, 0)
			want := m.fill(2)[2][:harnessMaxIO]
			off := 2 * m.a.regions.m.RegionSize()
			// Start prepares the read on the queue's ring; the harness submits it in Wait.
			require.NoError(t, m.h.Start(1, ublk.HarnessRequest{Op: ublk.OpRead, Offset: off, Length: harnessMaxIO}))
			require.NoError(t, m.a.FailMember(m.paths[slot]))
			require.NoError(t, m.a.RemoveMember(m.paths[slot]))
			startPaced(t, m.a, func() { _, err := m.a.AddMember(blank(t, "new"), false); require.NoError(t, err) }, func() {
				tag, res, err := m.h.Wait()
				require.NoError(t, err)
				require.Equal(t, uint16(1), tag)
				require.EqualValues(t, harnessMaxIO, res)
				assert.Equal(t, want, m.h.Buf(1)[:harnessMaxIO], "the read took the bytes of the device being rebuilt")
			})
		})
	}
}

// TestReAddAfterTheArrayWasWholeAgain: a member that left, while another device was rebuilt
// into its slot and the array was whole again, is rebuilt whole when it comes back: the map
// forgot, when the array became whole, which regions were written after the member left. (It
// was given only the regions written since the second device left, and read zeros where its
// mirror held data. Found by the robustness harness, seed 1 on raid10-offset.)
func TestReAddAfterTheArrayWasWholeAgain(t *testing.T) {
	m := newMirrorWith(t, 0)
	m.fill(0)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1])) // m1 leaves: region 1 is written after
	want := m.fill(0, 1)
	fresh := blank(t, "new")
	_, err := m.a.AddMember(fresh, false)
	require.NoError(t, err)
	m.a.WaitSync()
	require.Empty(t, m.a.SyncStatus().Last.Error)
	require.False(t, m.a.Degraded(), "whole again: the map forgets what m1 missed")
	require.NoError(t, m.a.FailMember(fresh))
	require.NoError(t, m.a.RemoveMember(fresh))

	msg, err := m.a.AddMember(m.paths[1], false)
	require.NoError(t, err)
	assert.Contains(t, msg, "rebuilt whole")
	m.a.WaitSync()
	require.Empty(t, m.a.SyncStatus().Last.Error)
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want) // from m1 alone
}

// TestWritePreparedBeforeARemoveReachesNothing: a write prepared on a slot's descriptor, then a
// fail and a remove before the queue submits it, must not reach whatever the process opens next
// (a closed number is the next open's). The remove keeps the number on a placeholder on which
// the write fails; the request still succeeds on the copy left.
func TestWritePreparedBeforeARemoveReachesNothing(t *testing.T) {
	m := newMirrorWith(t, 0)
	off := 2 * m.a.regions.m.RegionSize()
	data := bytes.Repeat([]byte{0x77}, harnessMaxIO)
	copy(m.h.Buf(1), data)
	number := m.a.fd(1)
	// Start prepares the write on the queue's ring; the harness submits it in Wait.
	require.NoError(t, m.h.Start(1, ublk.HarnessRequest{Op: ublk.OpWrite, Offset: off, Length: harnessMaxIO}))
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	victim, err := os.OpenFile(blank(t, "victim"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer victim.Close()
	assert.NotEqual(t, uintptr(number), victim.Fd(), "the removed member's number was free for the next open")
	tag, res, err := m.h.Wait()
	require.NoError(t, err)
	require.Equal(t, uint16(1), tag)
	require.EqualValues(t, harnessMaxIO, res)
	got := make([]byte, harnessMaxIO)
	_, err = victim.ReadAt(got, int64(m.a.Superblock().DataOffset)+off)
	require.NoError(t, err)
	assert.Equal(t, make([]byte, harnessMaxIO), got, "the write reached the file opened after the remove")
	assert.Equal(t, data, ublktest.Read(t, m.h, off, harnessMaxIO))

	_, err = m.a.AddMember(blank(t, "new"), false)
	require.NoError(t, err)
	assert.Equal(t, number, m.a.fd(1), "the next device takes the slot's number back")
	m.a.WaitSync()
	require.NoError(t, m.a.FailMember(m.paths[0]))
	assert.Equal(t, data, ublktest.Read(t, m.h, off, harnessMaxIO), "from the new device alone")
}

// TestFlushPreparedBeforeARemove: a flush whose member is failed and removed before the queue
// submits it fails on that member only; the copy left took it, so the flush succeeds. (It failed
// with EBADF on a degraded array whose every block had a working copy. Found by the robustness
// harness, seed 1 on raid10-near.)
func TestFlushPreparedBeforeARemove(t *testing.T) {
	m := newMirrorWith(t, 0)
	ublktest.Write(t, m.h, 0, bytes.Repeat([]byte{0x31}, harnessMaxIO))
	require.NoError(t, m.h.Start(1, ublk.HarnessRequest{Op: ublk.OpFlush}))
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	tag, res, err := m.h.Wait()
	require.NoError(t, err)
	require.Equal(t, uint16(1), tag)
	assert.Zero(t, res, "the flush reached every copy left")
}

// TestResyncReadFailsOverToTheNextSource: after an unclean stop a read of a region that needs
// resync comes from one copy, the one the resync copies from; when that copy's read fails (here
// its member is failed and removed before the read is submitted) the read goes to the next
// working copy, the resync's source from then on, instead of failing. (It failed with EIO on a
// degraded raid10 that had a working copy. Found by the robustness harness, seed 1 on
// raid10-offset.)
func TestResyncReadFailsOverToTheNextSource(t *testing.T) {
	m := newMirrorWith(t, 0)
	off := 2 * m.a.regions.m.RegionSize()
	data := bytes.Repeat([]byte{0x62}, harnessMaxIO)
	ublktest.Write(t, m.h, off, data)
	m.crash() // region 2 was being written: it needs a resync, which has not started
	require.True(t, m.a.regions.needsResync(off, harnessMaxIO))
	// The read is restricted to m0, the first working copy, which the resync copies from. m0
	// then fails as an I/O error fails it (the administrator may not: TestFailOfTheResyncSource)
	// and is removed before the read is submitted.
	require.NoError(t, m.h.Start(1, ublk.HarnessRequest{Op: ublk.OpRead, Offset: off, Length: harnessMaxIO}))
	m.a.fail(0, errors.New("a dying disk"))
	require.NoError(t, m.a.recordFailures())
	require.NoError(t, m.a.RemoveMember(m.paths[0]))
	tag, res, err := m.h.Wait()
	require.NoError(t, err)
	require.Equal(t, uint16(1), tag)
	require.EqualValues(t, harnessMaxIO, res, "a working copy is left")
	assert.Equal(t, data, m.h.Buf(1)[:harnessMaxIO])
}

// TestFailOfTheResyncSource: while regions written when the array stopped uncleanly wait for
// their resync, reads of them come from the copy the resync copies from; failing that member
// would take back what those reads returned (the other copy may hold older data), so it is
// refused as the last copy is. The other copy may be failed. (Found by the robustness harness,
// seed 1 on raid10-near: a block read back an older value after its source was failed.)
func TestFailOfTheResyncSource(t *testing.T) {
	m := newMirrorWith(t, 0)
	off := 2 * m.a.regions.m.RegionSize()
	ublktest.Write(t, m.h, off, bytes.Repeat([]byte{0x63}, harnessMaxIO))
	m.crash()
	require.True(t, m.a.regions.needsResync(off, harnessMaxIO))
	err := m.a.FailMember(m.paths[0])
	require.ErrorIs(t, err, ErrLastCopy)
	assert.Contains(t, err.Error(), "wait for the resync")
	require.NoError(t, m.a.FailMember(m.paths[1]), "the copy the resync writes to may go")
}

// TestAddClaimsItsSlotAfterTheCheckpoint: a device added to a slot (blank, or a member that left
// and comes back) claims the slot in its superblock only once the members' maps carry the
// checkpoint of its own fill. (Found by the robustness harness, assembling by scan: an add cut
// between the two left a device claiming the slot, current by its events, while the maps still
// held the checkpoint of an earlier fill of that slot, another device's, cut short; assembled,
// it resumed that fill and counted as copied what it never got.)
func TestAddClaimsItsSlotAfterTheCheckpoint(t *testing.T) {
	for _, back := range []bool{false, true} {
		t.Run(map[bool]string{false: "blank", true: "re-add"}[back], func(t *testing.T) {
			m := newMirrorWith(t, 0)
			m.fill(0)
			require.NoError(t, m.a.FailMember(m.paths[1]))
			require.NoError(t, m.a.RemoveMember(m.paths[1]))
			m.fill(1)
			dev := blank(t, "new")
			if back {
				dev = m.paths[1]
			}
			var seen atomic.Bool
			var claimed error
			setHook(t, func(name string, _ failpoint.Span) {
				if name != FailpointMapFlush || !seen.CompareAndSwap(false, true) {
					return
				}
				// The first map write of the add: a crash here keeps what the device says now.
				f, err := os.Open(dev)
				if err != nil {
					claimed = err
					return
				}
				defer f.Close()
				sb, err := raid.ReadSuperblock(f)
				if err == nil && sb.Index == 1 && sb.Role != raid.RoleSpare && sb.Events >= m.a.Superblock().Events {
					claimed = fmt.Errorf("it claims slot 1 as %v at events %d, the array's", sb.Role, sb.Events)
				}
			})
			_, err := m.a.AddMember(dev, false)
			require.NoError(t, err)
			require.True(t, seen.Load(), "the add wrote no map")
			require.NoError(t, claimed, "the device claimed its slot before the map carried its checkpoint")
			m.a.WaitSync()
			require.Empty(t, m.a.SyncStatus().Last.Error)
		})
	}
}

// TestSyncIOOnARemovedMember: a member failed and removed while a check works on a region it
// holds a copy of leaves the check to the copies left. (The check's read of that copy found the
// slot empty and crashed the daemon with a nil dereference. Found by the robustness harness, a
// planted-A run on raid10.)
func TestSyncIOOnARemovedMember(t *testing.T) {
	for _, action := range []string{SyncCheck, SyncRepair} {
		t.Run(action, func(t *testing.T) {
			m := newMirrorWith(t, 0)
			off := 2 * m.a.regions.m.RegionSize()
			data := bytes.Repeat([]byte{0x64}, harnessMaxIO)
			ublktest.Write(t, m.h, off, data)
			var once atomic.Bool
			var rerr error
			setHook(t, func(name string, _ failpoint.Span) {
				if name != FailpointSyncIO || !once.CompareAndSwap(false, true) {
					return
				}
				m.a.fail(1, errors.New("a dying disk"))
				if rerr = m.a.recordFailures(); rerr == nil {
					rerr = m.a.RemoveMember(m.paths[1])
				}
			})
			require.NoError(t, m.a.StartSync(action, SyncOptions{}))
			m.a.WaitSync()
			require.True(t, once.Load())
			require.NoError(t, rerr)
			st := m.a.SyncStatus()
			require.NotNil(t, st.Last)
			assert.Zero(t, st.Last.MismatchBytes, "a removed copy is no mismatch")
			assert.Equal(t, MemberActive, MemberState(m.a.state[0].Load()), "the copy left stays in service")
			assert.Equal(t, data, ublktest.Read(t, m.h, off, harnessMaxIO))
		})
	}
}
