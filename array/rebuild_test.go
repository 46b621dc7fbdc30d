package array

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/discard"
	"uraid/internal/clock"
	"uraid/internal/discardtest"
	"uraid/internal/testutil"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/raid"
)

// newMirrorWith is newMirror with spares.
func newMirrorWith(t *testing.T, spares int) *mirror {
	dir := testutil.MemDir(t)
	m := newMirrorIn(t, dir, spares)
	return m
}

func newMirrorIn(t *testing.T, dir string, spares int) *mirror {
	m := &mirror{t: t, paths: []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}, clk: newVirtual()}
	var sp []string
	for i := range spares {
		sp = append(sp, filepath.Join(dir, "s"+string(rune('0'+i))))
	}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 16 * mib, Members: m.paths, Spares: sp})
	require.NoError(t, err)
	m.a, err = NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Clock: m.clk})
	require.NoError(t, err)
	m.t.Cleanup(func() { m.a.Close() })
	require.NoError(t, m.a.MarkDirty())
	m.h = harness(t, m.a)
	return m
}

// blank makes a blank 16 MiB file.
func blank(t *testing.T, name string) string {
	p := filepath.Join(testutil.MemDir(t), name)
	testutil.SparseFile(t, filepath.Dir(p), filepath.Base(p), 16*mib)
	return p
}

// fill writes a pattern into the regions given and returns it per region.
func (m *mirror) fill(regions ...int64) map[int64][]byte {
	rs := m.a.regions.m.RegionSize()
	out := map[int64][]byte{}
	for _, r := range regions {
		data := bytes.Repeat([]byte{byte(r + 1)}, int(rs))
		for off := int64(0); off < rs; off += harnessMaxIO {
			ublktest.Write(m.t, m.h, r*rs+off, data[off:off+harnessMaxIO])
		}
		out[r] = data
	}
	return out
}

// readAll checks every region's contents through the array.
func (m *mirror) readAll(want map[int64][]byte) {
	rs := m.a.regions.m.RegionSize()
	for r, data := range want {
		for off := int64(0); off < rs; off += harnessMaxIO {
			got := ublktest.Read(m.t, m.h, r*rs+off, harnessMaxIO)
			require.Equal(m.t, data[off:off+harnessMaxIO], got, "region %d at %d", r, off)
		}
	}
}

func (m *mirror) syncWritten(slot int) uint64 {
	return m.a.Status("", 0).Members[slot].IO.SyncWriteBytes
}

// TestRebuildOntoBlank: a failed member is removed, a blank device added in its place is rebuilt
// with only the live regions copied (the rest, trimmed, trimmed), and then serves every byte alone.
func TestRebuildOntoBlank(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	want := m.fill(2, 3, 9)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	assert.Equal(t, StateNameDegraded, m.a.Status("", 0).State)
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	fresh := blank(t, "new")
	msg, err := m.a.AddMember(fresh, false)
	require.NoError(t, err)
	assert.Contains(t, msg, "rebuilding")
	m.a.WaitSync()
	st := m.a.Status("", 0)
	require.NotNil(t, st.Sync.Last)
	assert.Equal(t, SyncRebuild, st.Sync.Last.Action)
	assert.Empty(t, st.Sync.Last.Error)
	assert.Equal(t, "active", st.Members[1].State)
	assert.Equal(t, fresh, st.Members[1].Path)
	assert.Equal(t, StateNameActive, st.State)
	assert.Equal(t, uint64(3*rs), m.syncWritten(1), "only the three live regions are copied")
	// Only the rebuilt member serves now.
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want)
}

// TestReAddCopiesWhatItMissed: a member that left and comes back gets only the regions written
// while it was away.
func TestReAddCopiesWhatItMissed(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	want := m.fill(1, 2, 3)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	for r, d := range m.fill(7, 8) {
		want[r] = d
	}
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	msg, err := m.a.AddMember(m.paths[1], false)
	require.NoError(t, err)
	assert.Contains(t, msg, "re-added")
	m.a.WaitSync()
	assert.Empty(t, m.a.Status("", 0).Sync.Last.Error)
	assert.Equal(t, uint64(2*rs), m.syncWritten(1), "the two regions written while it was away")
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want)
}

// TestHotSpare: a spare takes a failed member's place by itself.
func TestHotSpare(t *testing.T) {
	m := newMirrorWith(t, 1)
	want := m.fill(4)
	assert.Len(t, m.a.Status("", 0).Spares, 1)
	require.NoError(t, m.a.FailMember(m.paths[0]))
	testutil.WaitFor(t, "the spare active in slot 0 and the sync idle", func() bool {
		st := m.a.Status("", 0)
		return st.Members[0].State == "active" && st.Sync.Action == SyncIdle
	})
	st := m.a.Status("", 0)
	assert.Empty(t, st.Spares)
	assert.NotEqual(t, m.paths[0], st.Members[0].Path)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	m.readAll(want)
}

// TestReplace: the new device is rebuilt while the old one serves, writes meanwhile reach both,
// then the new one takes the old one's place and the old one is let go.
func TestReplace(t *testing.T) {
	m := newMirrorWith(t, 0)
	want := m.fill(0, 5)
	fresh := blank(t, "new")
	require.NoError(t, m.a.ReplaceMember(m.paths[1], fresh, false))
	m.a.WaitSync()
	for r, d := range m.fill(6) {
		want[r] = d
	}
	st := m.a.Status("", 0)
	assert.Empty(t, st.Sync.Last.Error)
	assert.Equal(t, fresh, st.Members[1].Path)
	assert.Equal(t, "active", st.Members[1].State)
	assert.Equal(t, StateNameActive, st.State, "redundant throughout")
	old, err := raid.OpenMember(m.paths[1])
	require.NoError(t, err, "the old device is let go")
	old.Close()
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want)
}

// TestMembershipRefusals: each refusal names the problem and changes nothing.
func TestMembershipRefusals(t *testing.T) {
	m := newMirrorWith(t, 0)
	assert.ErrorIs(t, m.a.FailMember("/dev/nonesuch"), ErrNotInArray)
	assert.ErrorIs(t, m.a.RemoveMember(m.paths[0]), ErrInService)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	assert.ErrorIs(t, m.a.FailMember(m.paths[0]), ErrLastCopy)
	small := filepath.Join(testutil.MemDir(t), "small")
	testutil.SparseFile(t, filepath.Dir(small), "small", 4*mib)
	_, err := m.a.AddMember(small, false)
	assert.ErrorIs(t, err, raid.ErrTooSmall)

	other := newMirrorIn(t, testutil.MemDir(t), 0)
	other.h.Close()
	require.NoError(t, other.a.MarkClean())
	require.NoError(t, other.a.Close())
	_, err = m.a.AddMember(other.paths[0], false)
	assert.ErrorIs(t, err, raid.ErrHasSuperblock)
	assert.Equal(t, StateNameDegraded, m.a.Status("", 0).State)

	// A device blkid finds a signature on (here a DOS partition table) is refused by add and
	// replace alike, naming it, and left as it was.
	if _, err := exec.LookPath("blkid"); err == nil {
		dir := testutil.MemDir(t)
		table := testutil.SparseFile(t, dir, "table", 64*mib)
		mbr := make([]byte, 512)
		mbr[446+4], mbr[510], mbr[511] = 0x83, 0x55, 0xAA
		binary.LittleEndian.PutUint32(mbr[446+8:], 2048)
		binary.LittleEndian.PutUint32(mbr[446+12:], 8192)
		require.NoError(t, os.WriteFile(table, append(mbr, make([]byte, 64*mib-512)...), 0o600))
		_, err = m.a.AddMember(table, false)
		assert.ErrorIs(t, err, raid.ErrHasSignature)
		assert.ErrorContains(t, err, `PTTYPE="dos"`)
		b, rerr := os.ReadFile(table)
		require.NoError(t, rerr)
		assert.Equal(t, mbr, b[:512], "a refused add changed the device")
		assert.ErrorIs(t, m.a.ReplaceMember(m.paths[0], table, false), raid.ErrHasSignature)
	}

	a, _ := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, "sync")
	defer a.Close()
	assert.ErrorIs(t, a.FailMember("x"), ErrNoRedundacy)
}

func newVirtual() clock.Clock { return clock.NewVirtual(time.Unix(0, 0)) }

// TestRebuildResumes: a rebuild stopped halfway resumes at the next start from its checkpoint,
// and copies in all little more than one rebuild would.
func TestRebuildResumes(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	want := m.fill(0, 1, 2, 3, 4, 5, 6, 7)
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	fresh := blank(t, "new")
	clk := clock.NewManual(time.Unix(0, 0))
	m.a.syncer.clock = clk
	m.a.syncer.rebuildOpts = SyncOptions{MaxRate: rs} // a region a second on the manual clock
	_, err := m.a.AddMember(fresh, false)
	require.NoError(t, err)
	for m.a.SyncStatus().DoneBytes < 3*rs {
		clk.WaitFor(1)
		clk.Advance(time.Second)
	}
	clk.WaitFor(1)
	first := m.syncWritten(1)
	m.h.Close()
	require.NoError(t, m.a.MarkClean()) // a stop in the middle
	require.NoError(t, m.a.Close())

	m.paths[1] = fresh
	m.assemble()
	st := m.a.Status("", 0)
	assert.Equal(t, "rebuilding", st.Members[1].State, "assembled as being rebuilt")
	require.NoError(t, m.a.MarkDirty()) // resumes the rebuild
	m.a.WaitSync()
	st = m.a.Status("", 0)
	assert.Empty(t, st.Sync.Last.Error)
	assert.Equal(t, "active", st.Members[1].State)
	second := st.Members[1].IO.SyncWriteBytes
	assert.LessOrEqual(t, first+second, uint64(9*rs), "at most the region in progress is copied twice")
	assert.Less(t, second, uint64(8*rs), "the resumed rebuild does not start over")
	require.NoError(t, m.a.FailMember(m.paths[0]))
	m.readAll(want)
}

// rebuildCases are the redundant layouts, with odd member counts where the layout allows them:
// the rebuild takes its sources from the mapping, so each must come out right.
var rebuildCases = []arrayCase{
	{mapping.RAID1, mapping.NoLayout, 3, 0},
	{mapping.RAID10, mapping.Near2, 3, 16 << 10},
	{mapping.RAID10, mapping.Near2, 5, 16 << 10},
	{mapping.RAID10, mapping.Near2, 4, 64 << 10},
	{mapping.RAID10, mapping.Far2, 4, 64 << 10},
	{mapping.RAID10, mapping.Far2, 3, 16 << 10},
	{mapping.RAID10, mapping.Offset2, 4, 64 << 10},
	{mapping.RAID10, mapping.Offset2, 3, 16 << 10},
}

// TestRebuildEveryLayout rebuilds each member of each redundant layout in turn onto a blank file
// and checks, byte for byte on the new file, that every extent the mapping puts on that member
// holds what was written there; then the array reads back whole.
func TestRebuildEveryLayout(t *testing.T) {
	for _, c := range rebuildCases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := testutil.MemDir(t)
			var paths []string
			for i := range c.n {
				paths = append(paths, filepath.Join(dir, fmt.Sprintf("m%d", i)))
			}
			ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: c.level, Layout: c.layout, Chunk: c.chunk, Size: 8 * mib, Members: paths})
			if err != nil {
				t.Skipf("layout refused: %v", err)
			}
			// The virtual clock lets each rebuild run at full speed at once rather than at its
			// floor for the idle wait that follows the writes.
			a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Clock: newVirtual()})
			require.NoError(t, err)
			defer a.Close()
			require.NoError(t, a.MarkDirty())
			h := harness(t, a)
			size := a.Map().Size()
			want := randomBytes(size, uint64(c.n))
			for off := int64(0); off < size; off += harnessMaxIO {
				ublktest.Write(t, h, off, want[off:off+harnessMaxIO])
			}
			for slot := range c.n {
				require.NoError(t, a.FailMember(paths[slot]))
				require.NoError(t, a.RemoveMember(paths[slot]))
				fresh := filepath.Join(testutil.MemDir(t), "new")
				testutil.SparseFile(t, filepath.Dir(fresh), filepath.Base(fresh), 8*mib+int64(a.sb.DataOffset))
				_, err := a.AddMember(fresh, false)
				require.NoError(t, err)
				a.WaitSync()
				st := a.Status("", 0)
				require.Empty(t, st.Sync.Last.Error)
				require.Equal(t, "active", st.Members[slot].State)
				paths[slot] = fresh

				f, err := os.Open(fresh)
				require.NoError(t, err)
				pieces, err := a.Map().Read(0, size, nil)
				require.NoError(t, err)
				checked := int64(0)
				for _, p := range pieces {
					for _, e := range p.Copies[:p.N] {
						if e.Member != slot {
							continue
						}
						got := make([]byte, e.Length)
						_, err := f.ReadAt(got, a.dataOff[slot]+e.Offset)
						require.NoError(t, err)
						require.True(t, bytes.Equal(want[p.Logical:p.Logical+p.Length], got),
							"slot %d: logical [%d, +%d) at member offset %d is not what was written", slot, p.Logical, p.Length, e.Offset)
						checked += e.Length
					}
				}
				f.Close()
				require.Positive(t, checked, "slot %d holds data", slot)
			}
			for off := int64(0); off < size; off += harnessMaxIO {
				require.Equal(t, want[off:off+harnessMaxIO], ublktest.Read(t, h, off, harnessMaxIO), "at %d", off)
			}
		})
	}
}

// unreadable makes member slot's descriptor write-only, as a disk whose reads fail: pread on it
// fails (EBADF) while writes still land.
func unreadable(t *testing.T, a *Array, slot int) {
	t.Helper()
	w, err := os.OpenFile(a.members[slot].Path, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, unix.Dup3(int(w.Fd()), int(a.members[slot].File.Fd()), unix.O_CLOEXEC))
}

// TestRebuildSourceReadError: a source copy whose read fails is failed and another copy read
// instead; with no copy left the rebuild fails, says why, and its member is not put in service.
func TestRebuildSourceReadError(t *testing.T) {
	t.Run("another copy", func(t *testing.T) {
		dir := testutil.MemDir(t)
		paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1"), filepath.Join(dir, "m2")}
		ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 8 * mib, Members: paths})
		require.NoError(t, err)
		a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8})
		require.NoError(t, err)
		defer a.Close()
		require.NoError(t, a.MarkDirty())
		h := harness(t, a)
		want := bytes.Repeat([]byte{0x5a}, harnessMaxIO)
		for off := int64(0); off < a.Map().Size(); off += harnessMaxIO {
			ublktest.Write(t, h, off, want)
		}
		require.NoError(t, a.FailMember(paths[2]))
		require.NoError(t, a.RemoveMember(paths[2]))
		fresh := blank(t, "new")
		startPaced(t, a, func() { _, err = a.AddMember(fresh, false); require.NoError(t, err) }, func() { unreadable(t, a, 0) })
		st := a.Status("", 0)
		require.Empty(t, st.Sync.Last.Error)
		assert.Equal(t, "active", st.Members[2].State)
		assert.Equal(t, "active", st.Members[1].State)
		assert.Equal(t, "failed", st.Members[0].State, "the unreadable source was read, and failed")
		require.NoError(t, a.FailMember(paths[1]))
		for off := int64(0); off < a.Map().Size(); off += harnessMaxIO {
			require.Equal(t, want, ublktest.Read(t, h, off, harnessMaxIO), "at %d: read from the rebuilt member alone", off)
		}
	})
	t.Run("none left", func(t *testing.T) {
		m := newMirrorWith(t, 0)
		m.fill(1, 2, 3)
		require.NoError(t, m.a.FailMember(m.paths[1]))
		require.NoError(t, m.a.RemoveMember(m.paths[1]))
		startPaced(t, m.a, func() { _, err := m.a.AddMember(blank(t, "new"), false); require.NoError(t, err) }, func() { unreadable(t, m.a, 0) })
		st := m.a.Status("", 0)
		require.NotNil(t, st.Sync.Last)
		assert.Equal(t, SyncRebuild, st.Sync.Last.Action)
		assert.NotEmpty(t, st.Sync.Last.Error, "a rebuild with no copy to read from is not done")
		assert.NotEqual(t, "active", st.Members[1].State, "an incomplete rebuild is not put in service")
	})
}

// startPaced runs start (which starts a rebuild) with the rebuild paced to a region a second on a
// manual clock, runs then once the first region is copied, and lets the rebuild run to its end.
func startPaced(t *testing.T, a *Array, start, then func()) {
	t.Helper()
	clk := pausedAfter(t, a, 0, start) // the first region done, the rebuild waits for the clock
	then()
	done := make(chan struct{})
	go func() { a.WaitSync(); close(done) }()
	testutil.WaitFor(t, "the paced rebuild to end", func() bool {
		select {
		case <-done:
			return true
		default:
			clk.Advance(time.Second) // the next region's turn
			return false
		}
	})
}

// TestRebuildReadsTheLeastStalledCopy: with a TRIM in flight on one source copy, the rebuild
// reads from the other; the region under that TRIM waits for it, then is copied too.
func TestRebuildReadsTheLeastStalledCopy(t *testing.T) {
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1"), filepath.Join(dir, "m2")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 8 * mib, Members: paths})
	require.NoError(t, err)
	held := newHeldTrims()
	issuer := func(m *raid.Member, dataOff int64, inflight int) (discard.Issuer, error) {
		if m.Path == paths[0] {
			return held.issuer(m, dataOff, inflight)
		}
		return discardtest.Blocking(func(off, n int64) error {
			return os.NewSyscallError("fallocate", unix.Fallocate(int(m.File.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, dataOff+off, n))
		}, nil), nil
	}
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: "async"}, newIssuer: issuer})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.MarkDirty())
	h := harness(t, a)
	size, rs := a.Map().Size(), a.regions.m.RegionSize()
	require.GreaterOrEqual(t, size/rs, int64(4))
	for off := int64(0); off < size; off += harnessMaxIO {
		ublktest.Write(t, h, off, bytes.Repeat([]byte{byte(off >> 18)}, harnessMaxIO))
	}
	require.NoError(t, a.FailMember(paths[2]))
	require.NoError(t, a.RemoveMember(paths[2]))
	// A TRIM of 64 KiB in the last region: done at once on member 1, held in flight on member 0.
	last := size - rs
	ublktest.Discard(t, h, last+rs/2, 64<<10)
	held.wait(t, 1)

	fresh := blank(t, "new")
	_, err = a.AddMember(fresh, false)
	require.NoError(t, err)
	testutil.WaitFor(t, "the rebuild up to the last region", func() bool { return a.SyncStatus().DoneBytes >= last })
	st := a.Status("", 0)
	assert.Zero(t, st.Members[0].IO.SyncReadBytes, "the rebuild read from the copy with a TRIM in flight")
	assert.GreaterOrEqual(t, st.Members[1].IO.SyncReadBytes, uint64(last))
	assert.Equal(t, SyncRebuild, st.Sync.Action, "the region under the TRIM waits for it")
	held.hold <- struct{}{}
	a.WaitSync()
	st = a.Status("", 0)
	require.Empty(t, st.Sync.Last.Error)
	assert.Equal(t, "active", st.Members[2].State)
	// The new member alone: what was written, and zeros where the TRIM was.
	require.NoError(t, a.FailMember(paths[0]))
	require.NoError(t, a.FailMember(paths[1]))
	for off := int64(0); off < size; off += harnessMaxIO {
		want := bytes.Repeat([]byte{byte(off >> 18)}, harnessMaxIO)
		if off <= last+rs/2 && last+rs/2 < off+harnessMaxIO {
			p := last + rs/2 - off
			copy(want[p:p+64<<10], make([]byte, 64<<10))
		}
		require.Equal(t, want, ublktest.Read(t, h, off, harnessMaxIO), "at %d", off)
	}
}

// TestCloseWaitsForASparesActivation: the goroutine a member failure starts (a spare takes the
// failed member's place) is the array's own: Close returns only after it, and none starts after
// Close has begun. It used to outlive Close and run against a closed array.
func TestCloseWaitsForASparesActivation(t *testing.T) {
	m := newMirrorWith(t, 1)
	started, release := make(chan int, 1), make(chan struct{})
	var ran atomic.Bool
	m.a.onFail = func(i int) {
		started <- i
		<-release
		ran.Store(true)
	}
	m.a.fail(0, errors.New("a dying disk"))
	assert.Equal(t, 0, testutil.Receive(t, started, "the failure's spare activation to start"))
	closed := make(chan error, 1)
	go func() { closed <- m.a.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while the spare's activation still ran")
	case <-time.After(50 * time.Millisecond): // Close waits; a wrong one would return at once
	}
	close(release)
	require.NoError(t, testutil.Receive(t, closed, "Close to return once the activation ends"))
	assert.True(t, ran.Load())

	m.a.fail(1, errors.New("a dying disk after Close"))
	select {
	case <-started:
		t.Fatal("a failure after Close started a spare's activation")
	default:
	}
}

// TestCreatedDegraded: a mirror created with a slot "missing" serves degraded (and only when
// asked to), and a blank device added fills the empty slot by a rebuild, as after a remove.
func TestCreatedDegraded(t *testing.T) {
	dir := testutil.MemDir(t)
	paths := []string{raid.MissingMember, filepath.Join(dir, "m1")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 16 * mib, Members: paths})
	require.NoError(t, err)
	_, err = NewArray(ms, sbs, Options{Queues: 1, Depth: 8})
	require.ErrorContains(t, err, "serve it degraded")
	m := &mirror{t: t, paths: paths, clk: newVirtual()}
	m.a, err = NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Clock: m.clk, Degraded: true})
	require.NoError(t, err)
	t.Cleanup(func() { m.a.Close() })
	require.NoError(t, m.a.MarkDirty())
	m.h = harness(t, m.a)
	st := m.a.Status("", 0)
	assert.Equal(t, StateNameDegraded, st.State)
	assert.Equal(t, "missing", st.Members[0].State)
	want := m.fill(1, 4)

	msg, err := m.a.AddMember(blank(t, "new"), false)
	require.NoError(t, err)
	assert.Equal(t, "added as member 0: rebuilding", msg)
	m.a.WaitSync()
	assert.Equal(t, StateNameActive, m.a.Status("", 0).State)
	require.NoError(t, m.a.FailMember(paths[1]))
	m.readAll(want)
}

// TestFailedAddPutsTheDeviceBack: an add, a spare's add or a replace that fails after its first
// write to the new device (the region map, then the claim that fails here) leaves the device
// byte for byte as it was, a re-add's too.
func TestFailedAddPutsTheDeviceBack(t *testing.T) {
	claimFault = func(string) error { return errors.New("an injected write error") }
	defer func() { claimFault = nil }()
	sum := func(p string) [32]byte {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return sha256.Sum256(b)
	}
	patterned := func(name string) string {
		p := blank(t, name)
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt(bytes.Repeat([]byte{0x5A}, 2*mib), 4096) // the metadata area and past it
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return p
	}

	m := newMirror(t)
	require.NoError(t, m.a.FailMember(m.paths[0]))
	require.NoError(t, m.a.RemoveMember(m.paths[0]))
	dev := patterned("new")
	before := sum(dev)
	_, err := m.a.AddMember(dev, false)
	require.ErrorContains(t, err, "an injected write error")
	assert.Equal(t, before, sum(dev), "a failed add changed the device")

	// The array kept its one member and takes the device once the fault is gone.
	claimFault = nil
	_, err = m.a.AddMember(dev, false)
	require.NoError(t, err)
	m.a.WaitSync()

	claimFault = func(string) error { return errors.New("an injected write error") }
	dev2 := patterned("new2")
	before = sum(dev2)
	err = m.a.ReplaceMember(m.paths[1], dev2, false)
	require.ErrorContains(t, err, "an injected write error")
	assert.Equal(t, before, sum(dev2), "a failed replace changed the device")
}
