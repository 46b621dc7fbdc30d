package array

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	"uraid/ublk"
)

const (
	mib          = 1 << 20
	harnessMaxIO = 256 << 10
)

type arrayCase struct {
	level  mapping.Level
	layout mapping.Layout
	n      int
	chunk  int64
}

func (c arrayCase) String() string {
	return fmt.Sprintf("%v-%v-%dx", c.level, c.layout, c.n)
}

var arrayCases = []arrayCase{
	{mapping.Linear, mapping.NoLayout, 3, 0},
	{mapping.RAID0, mapping.NoLayout, 4, 64 << 10},
	{mapping.RAID1, mapping.NoLayout, 2, 0},
	{mapping.RAID10, mapping.Near2, 4, 64 << 10},
	{mapping.RAID10, mapping.Near2, 3, 16 << 10},
	{mapping.RAID10, mapping.Far2, 4, 64 << 10},
	{mapping.RAID10, mapping.Offset2, 4, 64 << 10},
}

func createArray(t *testing.T, c arrayCase, mode string) (*Array, []string) {
	t.Helper()
	dir := testutil.MemDir(t)
	var paths []string
	for i := range c.n {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("m%d", i)))
	}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: c.level, Layout: c.layout, Chunk: c.chunk, Size: 8 * mib, Members: paths})
	require.NoError(t, err)
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: mode}})
	require.NoError(t, err)
	return a, paths
}

func harness(t *testing.T, a *Array) *ublk.Harness {
	t.Helper()
	return harnessMode(t, a, false)
}

// harnessMode is harness in zero-copy mode when zc is set: member I/O is fixed-buffer I/O, the
// array never sees a request buffer.
func harnessMode(t *testing.T, a *Array, zc bool) *ublk.Harness {
	t.Helper()
	newHarness := ublk.NewHarness
	if zc {
		newHarness = ublk.NewZeroCopyHarness
	}
	h, err := newHarness(a, 8, harnessMaxIO)
	require.NoError(t, err)
	require.Equal(t, zc, h.ZeroCopy())
	t.Cleanup(func() { h.Close() })
	return h
}

var dataModes = map[string]bool{"copy": false, "zero-copy": true}

// TestArrayDataSurvives writes random data at random places through the array's ublk target,
// reads it back, then stops the array, assembles it again and reads everything once more; with
// the queue copying through its buffers and in zero-copy mode.
func TestArrayDataSurvives(t *testing.T) {
	for mode, zc := range dataModes {
		for _, c := range arrayCases {
			t.Run(mode+"/"+c.String(), func(t *testing.T) {
				t.Parallel()
				testArrayDataSurvives(t, c, zc)
			})
		}
	}
}

func testArrayDataSurvives(t *testing.T, c arrayCase, zc bool) {
	a, paths := createArray(t, c, "sync")
	size := a.Map().Size()
	model := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, uint64(c.n)))
	h := harnessMode(t, a, zc)
	require.NoError(t, a.MarkDirty())
	// Each write takes its bytes from a random place in a random pool: contents differ from
	// write to write (at any byte offset), without drawing megabytes of random numbers per case.
	pool := randomBytes(4*harnessMaxIO, uint64(c.n))
	for range 200 {
		n := (rng.Int64N(harnessMaxIO/512) + 1) * 512
		off := rng.Int64N((size-n)/512+1) * 512
		from := rng.Int64N(int64(len(pool)) - n + 1)
		data := pool[from : from+n]
		ublktest.Write(t, h, off, data)
		copy(model[off:], data)
		if rng.IntN(4) == 0 {
			o2 := rng.Int64N((size-n)/512+1) * 512
			require.Equal(t, model[o2:o2+n], ublktest.Read(t, h, o2, int(n)))
		}
	}
	ublktest.Flush(t, h)
	require.NoError(t, h.Close())
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.Close())

	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, StateNameClean, b.Status("", 0).State)
	h2 := harnessMode(t, b, zc)
	for off := int64(0); off < size; off += harnessMaxIO {
		n := min(harnessMaxIO, size-off)
		require.Equal(t, model[off:off+n], ublktest.Read(t, h2, off, int(n)), "offset %d", off)
	}
}

// randomBytes is n bytes of a seeded stream: reproducible, and cheap next to crypto/rand's
// system calls.
func randomBytes(n int64, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// TestArrayDiscard checks that a discard frees member space, reads back as zeros on every copy,
// and leaves the bytes around it alone.
func TestArrayDiscard(t *testing.T) {
	for _, c := range arrayCases {
		for _, mode := range []string{"sync", "async"} {
			t.Run(c.String()+"-"+mode, func(t *testing.T) {
				t.Parallel()
				a, paths := createArray(t, c, mode)
				defer a.Close()
				size := a.Map().Size()
				h := harness(t, a)
				fill := bytes.Repeat([]byte{0xA5}, harnessMaxIO)
				for off := int64(0); off < size; off += harnessMaxIO {
					ublktest.Write(t, h, off, fill[:min(harnessMaxIO, size-off)])
				}
				ublktest.Flush(t, h)
				before := testutil.Allocated(t, paths...)

				// Unaligned to chunks on both ends, page aligned.
				off, n := size/4+4096*3, size/2+4096
				ublktest.Discard(t, h, off, n)
				a.engine.Drain()
				after := testutil.Allocated(t, paths...)
				assert.Less(t, after, before-n/2, "a discard of %d bytes freed only %d", n, before-after)

				for _, probe := range []int64{off - 4096, off, off + n - 4096, off + n} {
					got := ublktest.Read(t, h, probe, 4096)
					inside := probe >= off && probe < off+n
					if inside {
						assert.Equal(t, make([]byte, 4096), got, "discarded block at %d", probe)
					} else {
						assert.Equal(t, fill[:4096], got, "block at %d outside the discard", probe)
					}
				}
				st := a.Status("", 0)
				assert.EqualValues(t, 1, st.Discard.Requests)
				assert.EqualValues(t, n, st.Discard.Bytes)
				var trimmed int64
				for _, m := range st.Members {
					trimmed += m.Discard.IssuedBytes
				}
				assert.Equal(t, n*int64(a.Map().Copies()), trimmed, "every copy trimmed exactly the discarded bytes")
			})
		}
	}
}

// TestArrayMirrorFailover breaks one member of a mirror: writes still succeed, reads come from the
// other copy, the array reports degraded, and the broken member is stale at the next assemble.
func TestArrayMirrorFailover(t *testing.T) {
	for _, c := range []arrayCase{{mapping.RAID1, mapping.NoLayout, 2, 0}, {mapping.RAID10, mapping.Near2, 4, 64 << 10}} {
		t.Run(c.String(), func(t *testing.T) {
			a, paths := createArray(t, c, "sync")
			h := harness(t, a)
			data := bytes.Repeat([]byte("uraid!"), 4096)[:16384]
			ublktest.Write(t, h, 0, data)

			// Swap member 1 for a read-only descriptor: every write to it now fails.
			ro, err := os.Open(paths[1])
			require.NoError(t, err)
			a.members[1].File.Close()
			a.members[1].File = ro
			for off := int64(0); off < 4*(64<<10); off += 16384 {
				ublktest.Write(t, h, off, data)
			}
			st := a.Status("", 0)
			assert.Equal(t, StateNameDegraded, st.State)
			assert.Equal(t, "failed", st.Members[1].State)
			for off := int64(0); off < 4*(64<<10); off += 16384 {
				assert.Equal(t, data, ublktest.Read(t, h, off, len(data)))
			}
			require.NoError(t, h.Close())
			require.NoError(t, a.Close())

			_, err = Assemble("t", paths, Options{Queues: 1, Depth: 8})
			require.ErrorIs(t, err, raid.ErrStaleMember)
			assert.Contains(t, err.Error(), paths[1])
			b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8, Degraded: true})
			require.NoError(t, err)
			defer b.Close()
			assert.Equal(t, StateNameDegraded, b.Status("", 0).State)
			h2 := harness(t, b)
			assert.Equal(t, data, ublktest.Read(t, h2, 3*16384, len(data)))
		})
	}
}

func TestAssembleRefuses(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, "sync")
	require.NoError(t, a.Close())
	_, err := Assemble("other", paths, Options{Queues: 1, Depth: 8})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `belong to array "t"`)
	_, err = Assemble("t", paths[:1], Options{Queues: 1, Depth: 8})
	require.ErrorIs(t, err, raid.ErrMissingMember)
	_, err = Assemble("t", paths[:1], Options{Queues: 1, Depth: 8, Degraded: true})
	require.ErrorIs(t, err, ErrArrayFailed, "raid0 cannot run without a member")
	_, err = Assemble("t", paths, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: "lazy"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use sync")
	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	require.NoError(t, b.Close())
}

func TestEngineConfigInFlight(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 3, 64 << 10}, "sync")
	defer a.Close()
	closeIssuers := func(cfg discard.Config) {
		for _, m := range cfg.Members {
			if m.Issuer != nil {
				m.Issuer.Close()
			}
		}
	}
	cfg, err := engineConfig(a, DiscardOptions{Mode: "async", MinGap: 5, MemberInFlight: map[string]int{paths[1]: 7}})
	require.NoError(t, err)
	closeIssuers(cfg)
	require.Len(t, cfg.Members, 3)
	assert.Equal(t, 1, cfg.Members[0].InFlight, "files take one TRIM at a time by default")
	assert.Equal(t, 7, cfg.Members[1].InFlight, "a per-member setting wins")
	assert.EqualValues(t, 5, cfg.Members[2].MinGap)
	assert.EqualValues(t, 4096, cfg.Members[0].Granularity)
	cfg, err = engineConfig(a, DiscardOptions{InFlight: 3, MemberInFlight: map[string]int{paths[2]: 2}})
	require.NoError(t, err)
	closeIssuers(cfg)
	assert.Equal(t, []int{3, 3, 2}, []int{cfg.Members[0].InFlight, cfg.Members[1].InFlight, cfg.Members[2].InFlight})
}

// TestArrayHotPathAllocs checks that reads, writes, flushes and discards through the array's ring
// target allocate nothing once warm: the mapping goes into per-tag slices, member I/O onto the
// queue's ring, and a discard to the engine, whose word that it was trimmed the region map takes
// into a list made up front.
func TestArrayHotPathAllocs(t *testing.T) {
	for mode, zc := range dataModes {
		t.Run(mode, func(t *testing.T) { testArrayHotPathAllocs(t, zc) })
	}
}

func testArrayHotPathAllocs(t *testing.T, zc bool) {
	a, _ := createArray(t, arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, "async")
	defer a.Close()
	h := harnessMode(t, a, zc)
	for _, r := range []ublk.HarnessRequest{
		{Op: ublk.OpWrite, Offset: 1 << 20, Length: 64 << 10},
		{Op: ublk.OpRead, Offset: 1 << 20, Length: 64 << 10},
		{Op: ublk.OpFlush},
		{Op: ublk.OpDiscard, Offset: 2 << 20, Length: 1 << 20}, // a region whole
	} {
		_, err := h.Do(r) // warm up: the ring and the tag's slices
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(50, func() {
			res, err := h.Do(r)
			if err != nil || res < 0 {
				t.Fatalf("%v: %d %v", r.Op, res, err)
			}
		})
		assert.Zero(t, allocs, "%v allocates", r.Op)
	}
}

// TestArrayReadsSpreadOverMirrors checks that reads use every copy, not only the first of each
// mirror set: a mirror's point is twice the read capacity as much as a second copy.
func TestArrayReadsSpreadOverMirrors(t *testing.T) {
	for _, c := range []arrayCase{{mapping.RAID1, mapping.NoLayout, 2, 0}, {mapping.RAID10, mapping.Near2, 4, 64 << 10}, {mapping.RAID10, mapping.Near2, 3, 16 << 10}} {
		t.Run(c.String(), func(t *testing.T) {
			a, _ := createArray(t, c, "sync")
			defer a.Close()
			h := harness(t, a)
			const reads = 400
			for i := range reads {
				ublktest.Read(t, h, int64(i)*16384, 4096)
			}
			st := a.Status("", 0)
			fair := float64(reads) / float64(c.n)
			for _, m := range st.Members {
				assert.InDelta(t, fair, float64(m.IO.Reads), fair/2, "member %d served %d of %d reads", m.Index, m.IO.Reads, reads)
			}
		})
	}
}

// TestArrayReadsAvoidPendingTrims: while one mirror has TRIMs to do, reads go to the other copy,
// so they neither wait behind those TRIMs nor hold them back; once it is done, reads spread again.
func TestArrayReadsAvoidPendingTrims(t *testing.T) {
	c := arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: c.level, Size: 8 * mib, Members: paths})
	require.NoError(t, err)
	// The gap keeps member 0's second TRIM queued after its first until the test moves the clock.
	clk := clock.NewManual(time.Unix(0, 0))
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Clock: clk, Discard: DiscardOptions{Mode: "async", MinGap: 2 * time.Second}})
	require.NoError(t, err)
	defer a.Close()
	h := harness(t, a)
	for _, off := range []int64{4 << 20, 5 << 20} { // away from the reads, which would wait for them
		done := make(discardDone, 1)
		a.engine.Discard(&discard.Discard{Extents: []mapping.Extent{{Member: 0, Offset: off, Length: 4096}}, Done: done})
		require.NoError(t, <-done)
	}
	testutil.WaitFor(t, "member 0's first TRIM done and its second queued", func() bool {
		st := a.engine.Stats()[0]
		return st.Completed == 1 && st.Queued == 1
	})
	reads := func() [2]uint64 {
		st := a.Status("", 0)
		return [2]uint64{st.Members[0].IO.Reads, st.Members[1].IO.Reads}
	}
	before := reads()
	for i := range 100 {
		ublktest.Read(t, h, int64(i)*16384, 4096)
	}
	after := reads()
	assert.Equal(t, before[0], after[0], "no read may go to the member with TRIMs pending")
	assert.EqualValues(t, 100, after[1]-before[1])

	clk.Advance(2 * time.Second)
	a.engine.Drain()
	for i := range 100 {
		ublktest.Read(t, h, int64(i)*16384, 4096)
	}
	assert.InDelta(t, 50, float64(reads()[0]-after[0]), 25, "with no TRIM pending reads spread over both copies")
}

// discardDone is a discard.Completer that reports on a channel.
type discardDone chan error

func (d discardDone) Done(err error) { d <- err }

// heldTrims makes each member's TRIMs wait at a gate the test opens, then punch the hole for
// real, so that a test decides what is in flight.
type heldTrims struct {
	entered chan struct{} // a TRIM reached its member
	hold    chan struct{}
}

func newHeldTrims() *heldTrims {
	return &heldTrims{entered: make(chan struct{}, 64), hold: make(chan struct{}, 64)}
}

func (h *heldTrims) issuer(m *raid.Member, dataOff int64, inflight int) (discard.Issuer, error) {
	return discardtest.Blocking(func(off, n int64) error {
		h.entered <- struct{}{}
		<-h.hold
		return os.NewSyscallError("fallocate", unix.Fallocate(int(m.File.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, dataOff+off, n))
	}, nil), nil
}

func (h *heldTrims) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		testutil.Receive(t, h.entered, "a TRIM to reach its member")
	}
}

// heldTrimMirror is an async raid1 of two files of size whose TRIMs wait in held until released;
// it is closed with the test.
func heldTrimMirror(t *testing.T, size int64) (*Array, *heldTrims) {
	t.Helper()
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: size, Members: paths})
	require.NoError(t, err)
	held := newHeldTrims()
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: "async"}, newIssuer: held.issuer})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a, held
}

// TestArrayParksAroundTrims: a write over a TRIM in flight and a read of bytes with a TRIM
// pending wait for it without blocking the queue (another request completes meanwhile), then go
// on through the ring: the write is not undone by the TRIM, and the read sees the trimmed bytes.
func TestArrayParksAroundTrims(t *testing.T) {
	a, held := heldTrimMirror(t, 8*mib)
	h := harness(t, a)
	old := bytes.Repeat([]byte{0x11}, 64<<10)
	ublktest.Write(t, h, 0, old)
	ublktest.Write(t, h, 1<<20, old)

	// A write over the TRIMs in flight waits; a read elsewhere is served meanwhile.
	ublktest.Discard(t, h, 0, 64<<10)
	held.wait(t, 2)
	fresh := bytes.Repeat([]byte{0x22}, 4096)
	copy(h.Buf(1), fresh)
	require.NoError(t, h.Start(1, ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 8192, Length: 4096}))
	assert.EqualValues(t, 1, a.Status("", 0).Discard.ParkedWrites)
	require.NoError(t, h.Start(2, ublk.HarnessRequest{Op: ublk.OpRead, Offset: 1 << 20, Length: 4096}))
	tag, res, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(2), tag, "the parked write held up the queue")
	assert.EqualValues(t, 4096, res)
	held.hold <- struct{}{}
	held.hold <- struct{}{}
	tag, res, err = h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(1), tag)
	assert.EqualValues(t, 4096, res)
	a.DrainDiscards()
	for turn := range 2 { // both copies
		got := ublktest.Read(t, h, 8192, 4096)
		assert.Equal(t, fresh, got, "read %d: the TRIM undid the write", turn)
	}

	// A read of bytes being trimmed waits until every copy is done, and reads them trimmed.
	ublktest.Discard(t, h, 1<<20, 64<<10)
	held.wait(t, 2)
	require.NoError(t, h.Start(3, ublk.HarnessRequest{Op: ublk.OpRead, Offset: 1 << 20, Length: 4096}))
	assert.EqualValues(t, 1, a.Status("", 0).Discard.ParkedReads)
	held.hold <- struct{}{}
	held.hold <- struct{}{}
	tag, res, err = h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(3), tag)
	assert.EqualValues(t, 4096, res)
	assert.Equal(t, make([]byte, 4096), h.Buf(3)[:4096])
}
