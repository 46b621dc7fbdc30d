package array

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/clock"
	"uraid/internal/failpoint"
	"uraid/internal/testutil/raidtest"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/reshape"
	"uraid/ublk"
)

// TestReshapeOnline widens raid0, raid10 n2 and raid10 o2 arrays of 4 members, filled and a fifth
// of their regions trimmed, to 5 and 6 members while 16 clients (one per tag of two queues, each
// queue served by a goroutine of its own as a device's are, each client owning every 16th 64 KiB
// slice of the array) read, write and discard at random, half of them near the reshape's cursor,
// each read checked against a model of the bytes. The job is held at
// each step's start and at its write phase until the clients have done a few more requests, so
// that requests arrive in every window. Then, once per failpoint, the same with power cuts (a
// copy of the members' files) at the failpoint's first hit and at a later one: each cut is
// assembled, which resumes the reshape online, and every live block is checked on every copy at
// its new place: the copies agree and hold what was acknowledged before the cut or what was
// being written during it.
func TestReshapeOnline(t *testing.T) {
	for _, c := range []arrayCase{
		{mapping.RAID0, mapping.NoLayout, 4, 64 << 10},
		{mapping.RAID10, mapping.Near2, 4, 64 << 10},
		{mapping.RAID10, mapping.Offset2, 4, 64 << 10},
	} {
		for _, add := range []int{1, 2} {
			t.Run(fmt.Sprintf("%v-to-%d", c, c.n+add), func(t *testing.T) {
				testReshapeOnline(t, c, add)
			})
		}
	}
}

func testReshapeOnline(t *testing.T, c arrayCase, add int) {
	rc := trimmedArray(t, c, add)
	n := c.n + add
	seed := uint64(n)<<8 | uint64(c.layout)

	counts := map[string]int{}
	var mu sync.Mutex
	w := runOnline(t, rc, c.n, seed, func(_ *onlineWork, name string) {
		mu.Lock()
		counts[name]++
		mu.Unlock()
	})
	st := w.status
	t.Logf("%v to %d online: %d steps, %d requests (%d reads checked), read %d, wrote %d, discarded %d",
		c, n, st.Steps, w.requests, w.readsChecked, st.ReadBytes, st.WriteBytes, st.DiscardBytes)
	require.Positive(t, w.parkedSeen, "no request ever waited for a window")
	for _, name := range reshapeFailpoints {
		if name == FailpointReshapeCommit || c.level == mapping.RAID0 && name == FailpointReshapeMap {
			continue // the commit is StartReshape's, before the array serves; raid0 has no map
		}
		require.Positive(t, counts[name], "failpoint %s never hit", name)
	}
	checkOnline(t, w.model, w.paths, n, cutModel{})

	rng := rand.New(rand.NewPCG(seed, 7))
	for _, name := range reshapeFailpoints {
		hits := counts[name]
		if hits == 0 || name == FailpointReshapeCommit {
			continue
		}
		later := 1 + max(1, hits/2+rng.IntN(max(1, hits/2)))
		t.Run(name, func(t *testing.T) {
			var cuts []cutModel
			seen := 0
			w := runOnline(t, rc, c.n, seed+uint64(len(name)), func(w *onlineWork, at string) {
				if at != name {
					return
				}
				if seen++; seen == 1 || seen == later {
					cuts = append(cuts, w.cut(t))
				}
			})
			require.NotEmpty(t, cuts)
			for _, cut := range cuts {
				checkOnline(t, w.model, cut.paths, n, cut)
			}
		})
	}
}

// onlineBlock is the unit the clients write, discard and check.
const onlineBlock = 4096

// onlineWork is one run of a reshape under load: the members, and the model of what the clients
// wrote. Block b's content at version v is a function of b and v (version 0: what the array held
// before); a dead block (discarded, or trimmed before) is not checked until it is written again.
type onlineWork struct {
	a     *Array
	paths []string
	base  []byte // the array's bytes before (version 0)
	dead0 []bool

	mu     sync.Mutex
	model  *onlineModel
	status ReshapeJob

	requests, readsChecked, parkedSeen int
	completed                          int // under mu, for the job's holds
}

type onlineModel struct {
	base     []byte
	acked    []int32 // per block: the version last acknowledged
	issued   []int32 // per block: the version last sent
	dead     []bool  // per block: discarded (from its discard's start) or trimmed before
	deadSeq  []int64 // per block: the op number of its last discard's start
	ops      int64
	versions []int32 // per block: the last version handed out
}

// cutModel is what a power cut left: the files, and per block the versions it may hold.
type cutModel struct {
	paths  []string
	acked  []int32 // at the cut's start
	issued []int32 // by its end
	dead   []bool  // dead at its start, or discarded during it
}

func (w *onlineWork) cut(t *testing.T) cutModel {
	w.mu.Lock()
	c := cutModel{acked: slices.Clone(w.model.acked), dead: slices.Clone(w.model.dead)}
	ops := w.model.ops
	w.mu.Unlock()
	c.paths = snapshot(t, w.paths)
	w.mu.Lock()
	c.issued = slices.Clone(w.model.issued)
	for b, s := range w.model.deadSeq {
		if s > ops {
			c.dead[b] = true
		}
	}
	w.mu.Unlock()
	return c
}

// blockContent is block b's bytes at version v.
func blockContent(base []byte, b int64, v int32, dst []byte) {
	if v == 0 {
		copy(dst, base[b*onlineBlock:][:onlineBlock])
		return
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(b))
	binary.LittleEndian.PutUint32(key[8:], uint32(v))
	_, _ = rand.NewChaCha8(key).Read(dst[:onlineBlock])
	binary.LittleEndian.PutUint64(dst, uint64(b))
	binary.LittleEndian.PutUint32(dst[8:], uint32(v))
}

// runOnline commits a reshape of rc's members by its new devices (copies of them) on the served
// array, assembles the members again, which serves while the reshape runs, and runs the clients
// until it is done. hook hears every failpoint the job hits (on the job's goroutine).
func runOnline(t *testing.T, rc reshapeCase, old int, seed uint64, hook func(w *onlineWork, name string)) *onlineWork {
	t.Helper()
	paths := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	{
		a, err := Assemble("t", paths[:old], Options{Queues: 1, Depth: 8})
		require.NoError(t, err)
		require.NoError(t, a.StartReshape(paths[old:], ReshapeOptions{MaxWindowBytes: reshapeWindow}))
		require.ErrorIs(t, a.StartReshape(paths[old:], ReshapeOptions{}), errSuperseded)
		require.NoError(t, a.Close())
	}
	a, err := Assemble("t", paths, Options{Queues: onlineQueues, Depth: onlineDepth})
	require.NoError(t, err)
	size := a.Map().Size()
	blocks := size / onlineBlock
	w := &onlineWork{a: a, paths: paths, base: rc.model}
	m := &onlineModel{base: rc.model, acked: make([]int32, blocks), issued: make([]int32, blocks), dead: make([]bool, blocks),
		deadSeq: make([]int64, blocks), versions: make([]int32, blocks)}
	for b := range blocks {
		m.dead[b] = rc.dead[b]
	}
	w.model = m
	o := a.rsJob
	require.NotNil(t, o)
	if a.syncer != nil {
		require.ErrorIs(t, a.StartSync(SyncCheck, SyncOptions{}), ErrReshaping, "no check while the layout moves")
	}

	// The job waits at each step's start and write phase until the clients did a few more
	// requests, or every tag waits for the window.
	holdFor := func() {
		w.mu.Lock()
		want := w.completed + 3
		w.mu.Unlock()
		for {
			w.mu.Lock()
			done := w.completed >= want
			w.mu.Unlock()
			o.mu.Lock()
			parked := 0
			for x := o.waiters; x != nil; x = x.rsNext {
				parked++
			}
			o.mu.Unlock()
			if done || parked == onlineQueues*onlineDepth {
				return
			}
			time.Sleep(50 * time.Microsecond) // polling a state; nothing depends on how long
		}
	}
	failpoint.Set(func(name string, _ failpoint.Span) {
		if hook != nil {
			hook(w, name)
		}
		if name == FailpointReshapeWrite || name == FailpointReshapeBackup {
			holdFor()
		}
	})
	defer failpoint.Set(nil)

	hs := make([]*ublk.Harness, onlineQueues)
	for q := range hs {
		var err error
		hs[q], err = ublk.NewHarnessQueue(a, uint16(q), onlineDepth, harnessMaxIO)
		require.NoError(t, err)
	}
	h := hs[0]
	require.NoError(t, a.MarkDirty())
	// The job holds at its first write phase until the clients, not started yet, do requests.
	if ss := a.Status("", 0).Sync; assert.NotNil(t, ss) {
		assert.Equal(t, SyncReshape, ss.Action)
		assert.Equal(t, o.plan.End(), ss.TotalBytes)
		if assert.NotNil(t, ss.Reshape) {
			assert.Equal(t, old, ss.Reshape.OldMembers)
			assert.Equal(t, len(paths), ss.Reshape.NewMembers)
			assert.Equal(t, ReshapeRunning, ss.Reshape.State)
		}
	}
	errs := make(chan error, onlineQueues)
	for q := range hs {
		go func() {
			errs <- w.client(hs[q], q, rand.New(rand.NewPCG(seed, uint64(q)+1)), size)
		}()
	}
	for range hs {
		require.NoError(t, <-errs)
	}
	a.WaitReshape()
	st, _ := a.ReshapeStatus()
	require.Equal(t, ReshapeDone, st.State, "%s", st.Why)
	w.status = st
	require.Greater(t, a.Map().Size(), size, "the array has its new size")
	if ss := a.Status("", 0).Sync; ss != nil {
		assert.NotEqual(t, SyncReshape, ss.Action, "done: no longer the array's job")
	}
	require.Equal(t, a.Map().Size(), a.Params().Size)
	// Reads after the reshape, by the new layout.
	for off := int64(0); off < size; off += harnessMaxIO {
		l := min(harnessMaxIO, size-off)
		got := ublktest.Read(t, h, off, int(l))
		exp := make([]byte, onlineBlock)
		for b := range l / onlineBlock {
			blk := off/onlineBlock + b
			if m.dead[blk] {
				continue
			}
			blockContent(m.base, blk, m.acked[blk], exp)
			require.True(t, bytes.Equal(exp, got[b*onlineBlock:][:onlineBlock]), "block %d after the reshape", blk)
		}
	}
	ublktest.Flush(t, h)
	for _, h := range hs {
		require.NoError(t, h.Close())
	}
	a.DrainDiscards()
	failpoint.Set(nil)
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.Close())
	return w
}

// checkOnline assembles paths (resuming a reshape cut short, online, and the resync its cut may
// need), and checks every live block on every copy at its place in the new layout: the copies
// agree, and hold a version the cut allows (cut zero: the model's acknowledged one).
func checkOnline(t *testing.T, m *onlineModel, paths []string, n int, cut cutModel) {
	t.Helper()
	b := assembleResumed(t, paths)
	require.Len(t, b.members, n)
	require.Nil(t, b.Superblock().Reshape)
	if b.syncer != nil {
		require.NoError(t, b.MarkDirty()) // a resync the cut needs runs now
		b.WaitSync()
	}
	require.NoError(t, b.MarkClean())
	mp := b.Map()
	require.Equal(t, n, mp.Members())
	require.NoError(t, b.Close())
	files := make([][]byte, n)
	for _, p := range paths {
		sb := raidtest.Superblock(t, p)
		require.Nil(t, sb.Reshape, "%s carries a reshape after the next update", p)
		f, err := os.ReadFile(p)
		require.NoError(t, err)
		files[sb.Index] = f[sb.DataOffset:]
	}
	acked, issued, dead := m.acked, m.acked, m.dead
	if cut.paths != nil {
		acked, issued, dead = cut.acked, cut.issued, cut.dead
	}
	exp := make([]byte, onlineBlock)
	var ext []mapping.Extent
	var err error
	for blk := range int64(len(acked)) {
		if dead[blk] {
			continue
		}
		ext, err = mp.Write(blk*onlineBlock, onlineBlock, ext[:0])
		require.NoError(t, err)
		first := files[ext[0].Member][ext[0].Offset:][:onlineBlock]
		for j, e := range ext[1:] {
			got := files[e.Member][e.Offset:][:onlineBlock]
			require.True(t, bytes.Equal(first, got), "block %d: copy %d on member %d differs from the first", blk, j+1, e.Member)
		}
		if !holdsVersion(m.base, blk, first, acked[blk], issued[blk]) {
			// Which versions each sector holds, for the report.
			var sectors []string
			for sct := 0; sct < onlineBlock; sct += 512 {
				which := "?"
				for v := acked[blk]; v <= issued[blk]; v++ {
					blockContent(m.base, blk, v, exp)
					if bytes.Equal(exp[sct:sct+512], first[sct:sct+512]) {
						which = fmt.Sprint(v)
						break
					}
				}
				sectors = append(sectors, which)
			}
			t.Fatalf("block %d (array byte %d) on member %d at %d: neither the version acknowledged (%d) nor one sent by the cut's end (%d); its sectors hold %v",
				blk, blk*onlineBlock, ext[0].Member, ext[0].Offset, acked[blk], issued[blk], sectors)
		}
	}
}

// TestReshapeOnlineMemberFails: a member of a raid10 that fails mid-reshape pauses the reshape at
// the step boundary, the state persisted: the array says so and serves every byte degraded,
// through both layouts; check and add are refused. Assembled again, degraded, it serves the same
// with the reshape still paused; assembled without --degraded, it is refused.
func TestReshapeOnlineMemberFails(t *testing.T) {
	c := arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}
	rc := trimmedArray(t, c, 2)
	paths := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	a, err := Assemble("t", paths[:4], Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	require.NoError(t, a.StartReshape(paths[4:], ReshapeOptions{MaxWindowBytes: reshapeWindow}))
	require.NoError(t, a.Close())
	a, err = Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	seen := 0
	failpoint.Set(func(name string, _ failpoint.Span) {
		if name == FailpointReshapePersist {
			if seen++; seen == 12 {
				require.NoError(t, a.FailMember(paths[1]))
			}
		}
	})
	events := a.Events()
	require.NoError(t, a.MarkDirty())
	a.WaitReshape()
	failpoint.Set(nil)
	st, ok := a.ReshapeStatus()
	require.True(t, ok)
	require.Equal(t, ReshapePaused, st.State)
	assert.Contains(t, st.Why, "a member failed")
	assert.Positive(t, st.Cursor)
	assert.Less(t, st.Cursor, st.End)
	assert.Equal(t, st.Cursor, raidtest.Superblock(t, paths[0]).Reshape.State.Cursor, "paused at a persisted step boundary")
	paused := false
	for len(events) > 0 && !paused {
		e := <-events
		paused = e.Type == EventReshapePaused
	}
	assert.True(t, paused, "an event says the reshape paused")
	require.ErrorIs(t, a.StartSync(SyncCheck, SyncOptions{}), ErrReshaping)
	_, err = a.AddMember(rc.adds[0], true)
	require.ErrorIs(t, err, ErrReshaping)

	size := int64(len(rc.model))
	readAll := func(b *Array) {
		t.Helper()
		h := harness(t, b)
		for off := int64(0); off < size; off += harnessMaxIO {
			got := ublktest.Read(t, h, off, int(min(harnessMaxIO, size-off)))
			for i := int64(0); i < int64(len(got)); i += 4096 {
				if !rc.dead[(off+i)/4096] {
					require.True(t, bytes.Equal(rc.model[off+i:off+i+4096], got[i:i+4096]), "array bytes at %d", off+i)
				}
			}
		}
		require.NoError(t, h.Close())
	}
	readAll(a)
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.Close())

	_, err = Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.Error(t, err, "a member is stale: degraded only")
	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8, Degraded: true})
	require.NoError(t, err)
	require.NoError(t, b.MarkDirty())
	b.WaitReshape()
	st, _ = b.ReshapeStatus()
	require.Equal(t, ReshapePaused, st.State)
	readAll(b)
	require.NoError(t, b.MarkClean())
	require.NoError(t, b.Close())
}

// holdsVersion reports whether b, block blk as read, is one version in [lo, hi] whole; or, for a
// block being written when the cut came (lo < hi), a mix of them: a write in flight at a power
// cut may be torn, and the cut's copy of a file, taken while the clients go on, may read a page
// half written. Every byte must still be that byte of one of the versions.
func holdsVersion(base []byte, blk int64, b []byte, lo, hi int32) bool {
	v := int32(binary.LittleEndian.Uint32(b[8:]))
	if binary.LittleEndian.Uint64(b) != uint64(blk) || v < lo || v > hi {
		v = lo // version 0 carries no header: what it should be
	}
	exp := make([]byte, onlineBlock)
	blockContent(base, blk, v, exp)
	if bytes.Equal(exp, b) {
		return true
	}
	if lo == hi {
		return false
	}
	vers := make([][]byte, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		x := make([]byte, onlineBlock)
		blockContent(base, blk, v, x)
		vers = append(vers, x)
	}
	for i := range b {
		if !slices.ContainsFunc(vers, func(x []byte) bool { return x[i] == b[i] }) {
			return false
		}
	}
	return true
}

// TestReshapeOnlinePaced: CheckReshape passes on a served array and writes nothing; with
// ReshapeMaxRate the job holds after each step until the bytes it
// moved since it began, at that rate, are due, by the clock it is given, and it still ends.
func TestReshapeOnlinePaced(t *testing.T) {
	c := arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}
	rc := trimmedArray(t, c, 1)
	paths := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	a, err := Assemble("t", paths[:4], Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	// Served, written: the check passes (the hand-over marks the members clean before the
	// commit) and writes nothing.
	h := harness(t, a)
	require.NoError(t, a.MarkDirty())
	ublktest.Write(t, h, 0, rc.model[:64<<10])
	require.NoError(t, a.CheckReshape(paths[4:], ReshapeOptions{}))
	require.Nil(t, raidtest.Superblock(t, paths[0]).Reshape)
	require.NoError(t, h.Close())
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.StartReshape(paths[4:], ReshapeOptions{MaxWindowBytes: reshapeWindow}))
	require.NoError(t, a.Close())
	const rate = 4 << 20
	a, err = Assemble("t", paths, Options{Queues: 1, Depth: 8, ReshapeMaxRate: rate})
	require.NoError(t, err)
	clk := clock.NewManual(time.Unix(0, 0))
	a.rsJob.clock = clk
	require.NoError(t, a.MarkDirty())
	clk.WaitFor(1) // after the first step
	st, _ := a.ReshapeStatus()
	require.Positive(t, st.Cursor)
	d, ok := clk.Next()
	require.True(t, ok)
	want := time.Duration(float64(st.Cursor) / rate * float64(time.Second))
	assert.InDelta(t, float64(want), float64(d), float64(time.Microsecond), "the first step's bytes at the rate")
	clk.Advance(d - time.Microsecond)
	assert.Equal(t, 1, clk.Waiting(), "not due yet")
	st2, _ := a.ReshapeStatus()
	assert.Equal(t, st.Cursor, st2.Cursor)
	for {
		if st, _ := a.ReshapeStatus(); st.State != ReshapeRunning {
			require.Equal(t, ReshapeDone, st.State, st.Why)
			break
		}
		if d, ok := clk.Next(); ok {
			clk.Advance(d)
		} else {
			time.Sleep(100 * time.Microsecond) // a step runs: polled, nothing hangs on how long
		}
	}
	assert.InDelta(t, float64(st.End)/rate, clk.Now().Sub(time.Unix(0, 0)).Seconds(), 0.001, "the whole reshape at the rate")
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.Close())
}

// TestReshapeOnlineDoesNotAllocate: requests routed by a reshape, below its cursor, above it and
// across it, allocate nothing on the queue goroutine once their tag's slices have grown.
func TestReshapeOnlineDoesNotAllocate(t *testing.T) {
	c := arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}
	rc := trimmedArray(t, c, 2)
	paths := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	a, err := Assemble("t", paths[:4], Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	require.NoError(t, a.StartReshape(paths[4:], ReshapeOptions{MaxWindowBytes: reshapeWindow}))
	require.NoError(t, a.Close())
	// Discards acknowledged once queued, as TestArrayHotPathAllocs has them: AllocsPerRun counts
	// every goroutine's allocations, and a discard acknowledged by the lanes (sync mode) waits
	// long enough under the race detector for the array's other goroutines to land in the count
	// (a memory profile of 2000 such discards shows none allocated per request).
	a, err = Assemble("t", paths, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Mode: "async"}})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.regions.begin()) // serving, the job not started: the position is the test's
	const cursor = 4 << 20
	o := a.rsJob
	o.mu.Lock()
	o.pos = reshape.Position{Cursor: cursor, WindowEnd: cursor}
	o.mu.Unlock()
	h := harness(t, a)
	for _, r := range []ublk.HarnessRequest{
		{Op: ublk.OpRead, Offset: cursor - 8192, Length: 16384}, // across the cursor
		{Op: ublk.OpRead, Offset: 1 << 20, Length: 64 << 10},
		{Op: ublk.OpRead, Offset: 6 << 20, Length: 64 << 10},
		{Op: ublk.OpWrite, Offset: cursor - 8192, Length: 16384},
		{Op: ublk.OpWrite, Offset: 6 << 20, Length: 4096},
		{Op: ublk.OpFlush},
		{Op: ublk.OpDiscard, Offset: cursor - (1 << 20), Length: 2 << 20},
	} {
		_, err := h.Do(r) // warm up: the ring and the tag's slices
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(50, func() {
			res, err := h.Do(r)
			if err != nil || res < 0 {
				t.Fatalf("%v: %d %v", r.Op, res, err)
			}
		})
		assert.Zero(t, allocs, "%v at %d+%d allocates", r.Op, r.Offset, r.Length)
	}
	a.DrainDiscards()
	require.NoError(t, h.Close())
}

// Clients of the array during a reshape: a goroutine per queue, each keeping onlineDepth requests
// in flight, one client per tag, each owning every (onlineQueues*onlineDepth)-th 64 KiB slice.
const (
	onlineQueues = 2
	onlineDepth  = 8
	onlineSlice  = 64 << 10
)

// client runs queue q's clients through h until the reshape is no longer running, then lets
// their last requests end: 40% reads, each block checked against the model, 50% writes, 10%
// discards, half of them near the reshape's cursor. Its own goroutine: it reports, not fails.
func (w *onlineWork) client(h *ublk.Harness, q int, rng *rand.Rand, size int64) error {
	a, o, m := w.a, w.a.rsJob, w.model
	owners := int64(onlineQueues * onlineDepth)
	type op struct {
		kind     ublk.Op
		off, len int64
		vers     []int32
	}
	ops := make([]op, onlineDepth)
	slices := size / onlineSlice
	start := func(tag int) error {
		var s int64
		if rng.IntN(2) == 0 {
			o.mu.Lock()
			cur := o.pos.Cursor
			o.mu.Unlock()
			s = min(slices-1, max(0, (cur-onlineSlice*4+rng.Int64N(onlineSlice*8))/onlineSlice))
		} else {
			s = rng.Int64N(slices)
		}
		s = s - s%owners + int64(q*onlineDepth+tag)
		if s >= slices {
			s -= owners
		}
		nb := 1 + rng.Int64N(onlineSlice/onlineBlock)
		first := s*onlineSlice/onlineBlock + rng.Int64N(onlineSlice/onlineBlock-nb+1)
		x := op{off: first * onlineBlock, len: nb * onlineBlock}
		w.mu.Lock()
		switch r := rng.IntN(10); {
		case r < 4:
			x.kind = ublk.OpRead
		case r < 9:
			x.kind = ublk.OpWrite
			buf := h.Buf(uint16(tag))
			for b := range nb {
				m.versions[first+b]++
				v := m.versions[first+b]
				x.vers = append(x.vers, v)
				m.issued[first+b] = v
				blockContent(m.base, first+b, v, buf[b*onlineBlock:])
			}
		default:
			x.kind = ublk.OpDiscard
			m.ops++
			for b := range nb {
				m.dead[first+b] = true
				m.deadSeq[first+b] = m.ops
			}
		}
		m.ops++
		w.mu.Unlock()
		ops[tag] = x
		return h.Start(uint16(tag), ublk.HarnessRequest{Op: x.kind, Offset: x.off, Length: x.len})
	}
	finish := func(tag int, res int32) error {
		x := ops[tag]
		first := x.off / onlineBlock
		want := int32(x.len)
		if x.kind == ublk.OpDiscard {
			want = 0
		}
		if res != want {
			return fmt.Errorf("%v at %d+%d: %d, want %d", x.kind, x.off, x.len, res, want)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.requests++
		w.completed++
		switch x.kind {
		case ublk.OpWrite:
			for b, v := range x.vers {
				m.acked[first+int64(b)] = v
				m.dead[first+int64(b)] = false
			}
		case ublk.OpRead:
			got := h.Buf(uint16(tag))
			exp := make([]byte, onlineBlock)
			for b := range x.len / onlineBlock {
				if m.dead[first+b] {
					continue
				}
				blockContent(m.base, first+b, m.acked[first+b], exp)
				if !bytes.Equal(exp, got[b*onlineBlock:][:onlineBlock]) {
					return fmt.Errorf("read of block %d (array byte %d) during the reshape: not version %d", first+b, (first+b)*onlineBlock, m.acked[first+b])
				}
				w.readsChecked++
			}
		}
		return nil
	}
	for tag := range onlineDepth {
		if err := start(tag); err != nil {
			return err
		}
	}
	for inFlight := onlineDepth; inFlight > 0; {
		tag, res, err := h.Wait()
		if err != nil {
			return err
		}
		inFlight--
		if err := finish(int(tag), res); err != nil {
			return err
		}
		if st, _ := a.ReshapeStatus(); st.State != ReshapeRunning {
			continue // the last requests end
		}
		o.mu.Lock()
		parked := o.waiters != nil
		o.mu.Unlock()
		if parked {
			w.mu.Lock()
			w.parkedSeen++
			w.mu.Unlock()
		}
		if err := start(int(tag)); err != nil {
			return err
		}
		inFlight++
	}
	return nil
}
