package array

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/failpoint"
	"uraid/internal/testutil"
	"uraid/internal/testutil/raidtest"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/region"
)

// reshapeWindow keeps steps small, so that an 8 MiB member takes dozens of them.
const reshapeWindow = 256 << 10

var reshapeFailpoints = []string{
	FailpointReshapeCommit, FailpointReshapeBackup, FailpointReshapeMid, FailpointReshapeWrite,
	FailpointReshapePersist, FailpointReshapeIO, FailpointReshapeMember, FailpointReshapeMap, FailpointReshapeFinish,
}

// TestReshape widens raid0, raid10 n2 and raid10 o2 arrays of 4 members filled with random data,
// a fifth of their regions trimmed, to 5 and to 6 members. Once without a cut: the array
// assembles at the new size and serves every live byte, the trimmed regions and the new space are
// trimmed in the region map, and the bytes moved are reported beside the live bytes. Then a power
// cut (a copy of the members' files) at every failpoint, at its first hit, its last and one
// between: before the commit, at each step's write phases and persists, between the members of
// one superblock update, while the map of the new size is written and before the last update.
// Each cut is assembled, which resumes the reshape from the newest state, and every live byte is
// checked on every copy, at its place in the new layout.
func TestReshape(t *testing.T) {
	for _, c := range []arrayCase{
		{mapping.RAID0, mapping.NoLayout, 4, 64 << 10},
		{mapping.RAID10, mapping.Near2, 4, 64 << 10},
		{mapping.RAID10, mapping.Offset2, 4, 64 << 10},
	} {
		for _, add := range []int{1, 2} {
			t.Run(fmt.Sprintf("%v-to-%d", c, c.n+add), func(t *testing.T) {
				testReshape(t, c, add)
			})
		}
	}
}

// reshapeCase is a filled array, trimmed in part, and the devices to add: the files as a cut
// leaves them are copies of these.
type reshapeCase struct {
	paths, adds []string
	model       []byte
	dead        []bool // per 4 KiB of the old array: trimmed by the user, content not checked
}

func testReshape(t *testing.T, c arrayCase, add int) {
	rc := trimmedArray(t, c, add)
	n := c.n + add

	// Uncut, counting the failpoints' hits.
	counts := map[string]int{}
	failpoint.Set(countReshapeHits(counts))
	work := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	rep, err := Reshape("t", work[:c.n], work[c.n:], ReshapeOptions{MaxWindowBytes: reshapeWindow})
	failpoint.Set(nil)
	require.NoError(t, err)
	assert.Equal(t, c.n, rep.OldMembers)
	assert.Equal(t, n, rep.NewMembers)
	assert.False(t, rep.Resumed)
	copies := int64(1)
	if c.level == mapping.RAID10 {
		copies = 2
	}
	t.Logf("%v to %d: %d steps, live %d of %d bytes, read %d, wrote %d (%.2fx the live bytes' copies), discarded %d",
		c, n, rep.Steps, rep.LiveBytes, rep.OldSize, rep.ReadBytes, rep.WriteBytes,
		float64(rep.WriteBytes)/float64(copies*rep.LiveBytes), rep.DiscardBytes)
	if c.level == mapping.RAID10 {
		assert.Less(t, rep.LiveBytes, rep.OldSize*9/10, "the trimmed regions are dead")
	}
	// Only live bytes move, one read and every copy written, but for the backups of the
	// critical section, which hold their window whole.
	assert.LessOrEqual(t, rep.WriteBytes, copies*rep.LiveBytes+rep.OldSize/8)
	for _, name := range reshapeFailpoints {
		if c.level == mapping.RAID0 && name == FailpointReshapeMap {
			continue // raid0 has no region map
		}
		require.Positive(t, counts[name], "failpoint %s never hit", name)
	}
	checkReshaped(t, rc, work, n, true)

	// A cut at each failpoint: first hit, last, and one between.
	rng := rand.New(rand.NewPCG(uint64(n), uint64(c.layout)))
	for _, name := range reshapeFailpoints {
		hits := counts[name]
		if hits == 0 {
			continue
		}
		at := []int{1, hits}
		if hits > 2 {
			at = append(at, 2+rng.IntN(hits-2))
		}
		for _, k := range slices.Compact(at) {
			t.Run(fmt.Sprintf("%s-%d", name, k), func(t *testing.T) {
				work := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
				var cut []string
				seen := 0
				failpoint.Set(func(at string, _ failpoint.Span) {
					if at == name {
						if seen++; seen == k {
							cut = snapshot(t, work)
						}
					}
				})
				_, err := Reshape("t", work[:c.n], work[c.n:], ReshapeOptions{MaxWindowBytes: reshapeWindow})
				failpoint.Set(nil)
				require.NoError(t, err)
				require.NotNil(t, cut)
				if name == FailpointReshapeCommit || name == FailpointReshapeMember && k <= add {
					// Before the commit the old members are the array as it was.
					if raidtest.Superblock(t, cut[0]).Reshape == nil {
						b, err := Assemble("t", cut[:c.n], Options{Queues: 1, Depth: 8})
						require.NoError(t, err)
						assert.Equal(t, int64(len(rc.model)), b.Map().Size(), "the old array, its old size")
						require.NoError(t, b.Close())
					}
				}
				if k > 1 && k < hits && name != FailpointReshapeMember {
					// A second cut, while the assembly resumes from the first.
					cut = cutResume(t, cut, rng)
				}
				checkReshaped(t, rc, cut, n, false)
			})
		}
	}
}

// countReshapeHits counts the hits of the reshape's failpoints, which all come on the goroutine
// that runs the reshape (the region map's flusher hits its own on another).
func countReshapeHits(counts map[string]int) failpoint.Hook {
	return func(name string, _ failpoint.Span) {
		if slices.Contains(reshapeFailpoints, name) {
			counts[name]++
		}
	}
}

// cutResume assembles paths, which resumes the reshape they carry, cuts the power at a random
// hit of a random failpoint of the resume, and returns what the cut left.
func cutResume(t *testing.T, paths []string, rng *rand.Rand) []string {
	t.Helper()
	counts := map[string]int{}
	try := snapshot(t, paths)
	failpoint.Set(countReshapeHits(counts))
	b := assembleResumed(t, try)
	failpoint.Set(nil)
	require.NoError(t, b.Close())
	var names []string
	for _, name := range reshapeFailpoints {
		if counts[name] > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return paths
	}
	name := names[rng.IntN(len(names))]
	k := 1 + rng.IntN(counts[name])
	var cut []string
	seen := 0
	failpoint.Set(func(at string, _ failpoint.Span) {
		if at == name {
			if seen++; seen == k {
				cut = snapshot(t, paths)
			}
		}
	})
	b = assembleResumed(t, paths)
	failpoint.Set(nil)
	require.NoError(t, b.Close())
	require.NotNil(t, cut, "%s hit %d", name, k)
	return cut
}

// trimmedArray fills an array of c, trims a fifth of its regions (1 MiB each) through the array,
// stops it cleanly, and makes add blank devices of the members' size.
func trimmedArray(t *testing.T, c arrayCase, add int) reshapeCase {
	paths, model := filledArray(t, c)
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	h := harness(t, a)
	require.NoError(t, a.MarkDirty())
	size := int64(len(model))
	rc := reshapeCase{paths: paths, model: model, dead: make([]bool, (size+4095)/4096)}
	rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.level)))
	const rs = 1 << 20
	regions := size / rs
	for _, r := range rng.Perm(int(regions))[:(regions+4)/5] {
		r := int64(r)
		ublktest.Discard(t, h, r*rs, rs)
		for i := r * rs / 4096; i < (r+1)*rs/4096; i++ {
			rc.dead[i] = true
		}
	}
	ublktest.Flush(t, h)
	require.NoError(t, h.Close())
	a.DrainDiscards()
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.Close())
	fi, err := os.Stat(paths[0])
	require.NoError(t, err)
	for i := range add {
		rc.adds = append(rc.adds, testutil.SparseFile(t, filepath.Dir(paths[0]), fmt.Sprintf("new%d", i), fi.Size()))
	}
	return rc
}

// checkReshaped assembles paths (resuming a reshape cut short), checks that the array has n
// members and every live byte of the model on every copy at its new place, and, for raid10, that
// the region map marks the trimmed regions and the new space trimmed and needs no resync. serve:
// read the array through its ublk target too.
func checkReshaped(t *testing.T, rc reshapeCase, paths []string, n int, serve bool) {
	t.Helper()
	b := assembleResumed(t, paths)
	var err error
	require.Len(t, b.members, n)
	require.Nil(t, b.Superblock().Reshape)
	m := b.Map()
	require.Equal(t, n, m.Members())
	size := int64(len(rc.model))
	require.Greater(t, m.Size(), size)
	if b.regions != nil {
		b.regions.mu.Lock()
		rm := b.regions.m
		assert.Equal(t, 0, rm.Resyncs(), "nothing to resync")
		for r := rm.RegionOf(size + rm.RegionSize() - 1); r < rm.Regions(); r++ {
			require.Equal(t, region.Trimmed, rm.State(r), "new region %d", r)
		}
		for r := range rm.RegionOf(size - 1) {
			off, _ := rm.Span(r)
			assert.Equal(t, rc.dead[off/4096], rm.State(r) == region.Trimmed, "region %d", r)
		}
		b.regions.mu.Unlock()
	}
	if serve {
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
	// A member a cut left one update behind the last is written up to date, the reshape
	// cleared, by the array's next superblock update.
	require.NoError(t, b.MarkDirty())
	require.NoError(t, b.MarkClean())
	require.NoError(t, b.Close())
	files := make([][]byte, n)
	for _, p := range paths {
		sb := raidtest.Superblock(t, p)
		require.Nil(t, sb.Reshape, "%s carries a reshape after the next update", p)
		f, err := os.ReadFile(p)
		require.NoError(t, err)
		files[sb.Index] = f[sb.DataOffset:]
	}
	var ext []mapping.Extent
	for x := int64(0); x < size; x += 4096 {
		if rc.dead[x/4096] {
			continue
		}
		ext, err = m.Write(x, 4096, ext[:0])
		require.NoError(t, err)
		for j, e := range ext {
			got := files[e.Member][e.Offset : e.Offset+4096]
			if !bytes.Equal(rc.model[x:x+4096], got) {
				t.Fatalf("array bytes at %d: copy %d on member %d at %d differ from what was written", x, j, e.Member, e.Offset)
			}
		}
	}
}

// assembleResumed assembles paths and, when they carry a reshape under way, lets it resume while
// the array serves and waits until it is done.
func assembleResumed(t *testing.T, paths []string) *Array {
	t.Helper()
	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	if _, ok := b.ReshapeStatus(); ok {
		require.NoError(t, b.MarkDirty())
		b.WaitReshape()
		st, _ := b.ReshapeStatus()
		require.Equal(t, ReshapeDone, st.State, "the resumed reshape: %s", st.Why)
	}
	return b
}

// TestReshapeResume: members a cut left mid-reshape resume through Reshape given the same devices
// again, and are refused, naming the slot, when the new members are left out.
func TestReshapeResume(t *testing.T) {
	c := arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}
	rc := trimmedArray(t, c, 2)
	work := snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	var cut []string
	seen := 0
	failpoint.Set(func(name string, _ failpoint.Span) {
		if name == FailpointReshapePersist {
			if seen++; seen == 10 {
				cut = snapshot(t, work)
			}
		}
	})
	left := snapshot(t, work[3:4]) // a device that leaves before the reshape, and is found later
	_, err := Reshape("t", work[:4], work[4:], ReshapeOptions{MaxWindowBytes: reshapeWindow})
	failpoint.Set(nil)
	require.NoError(t, err)
	require.NotNil(t, cut)
	// Found by a scan beside the members: stale (superseded in its slot), not another geometry.
	b, err := Assemble("t", append(slices.Clip(work), left...), Options{Queues: 1, Depth: 8})
	require.NoError(t, err, "a device of the old member count left out")
	require.Len(t, b.members, 6)
	require.NoError(t, b.Close())
	st := raidtest.Superblock(t, cut[0]).Reshape
	require.NotNil(t, st)
	assert.Positive(t, st.State.Cursor)

	// Mid-reshape, the same device is left out of the resume.
	b, err = Assemble("t", append(slices.Clip(snapshot(t, cut)), left...), Options{Queues: 1, Depth: 8})
	require.NoError(t, err, "resumed without the device of the old member count")
	require.NoError(t, b.Close())
	_, err = Reshape("t", cut[:4], nil, ReshapeOptions{})
	require.ErrorIs(t, err, ErrReshape)
	assert.Contains(t, err.Error(), "slot 4 of the reshape from 4 to 6 members has no device")
	_, err = Assemble("t", cut[:4], Options{Queues: 1, Depth: 8})
	require.Error(t, err, "assemble without the new members")

	rep, err := Reshape("t", cut[:4], cut[4:], ReshapeOptions{})
	require.NoError(t, err)
	assert.True(t, rep.Resumed)
	assert.Less(t, rep.ReadBytes, rep.LiveBytes, "the resume moves only what was left")
	checkReshaped(t, rc, cut, 6, true)
	for _, p := range cut {
		assert.Nil(t, raidtest.Superblock(t, p).Reshape, p)
	}

	// A cut before the commit: only the new devices carry the reshape. Named again with
	// --add, they resume it.
	work = snapshot(t, append(slices.Clip(rc.paths), rc.adds...))
	failpoint.Set(func(name string, _ failpoint.Span) {
		if name == FailpointReshapeCommit {
			cut = snapshot(t, work)
		}
	})
	_, err = Reshape("t", work[:4], work[4:], ReshapeOptions{MaxWindowBytes: reshapeWindow})
	failpoint.Set(nil)
	require.NoError(t, err)
	require.Nil(t, raidtest.Superblock(t, cut[0]).Reshape)
	require.NotNil(t, raidtest.Superblock(t, cut[4]).Reshape)
	rep, err = Reshape("t", cut[:4], cut[4:], ReshapeOptions{})
	require.NoError(t, err)
	assert.True(t, rep.Resumed)
	checkReshaped(t, rc, cut, 6, false)
}

// TestReshapeRefusals: every refusal names its cause and writes nothing.
func TestReshapeRefusals(t *testing.T) {
	c := arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}
	rc := trimmedArray(t, c, 1)
	dir := filepath.Dir(rc.paths[0])
	fi, err := os.Stat(rc.paths[0])
	require.NoError(t, err)
	small := testutil.SparseFile(t, dir, "small", fi.Size()/2)
	r1, _ := filledArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0})
	f2, _ := filledArray(t, arrayCase{mapping.RAID10, mapping.Far2, 4, 64 << 10})
	lin, _ := filledArray(t, arrayCase{mapping.Linear, mapping.NoLayout, 3, 0})
	dirty := snapshot(t, rc.paths)
	{
		a, err := Assemble("t", dirty, Options{Queues: 1, Depth: 8})
		require.NoError(t, err)
		require.NoError(t, a.MarkDirty())
		require.NoError(t, a.Close()) // no MarkClean: a crash
	}
	all := slices.Concat(rc.paths, rc.adds, []string{small}, r1, f2, lin, dirty)
	was := snapshot(t, all)
	for _, c := range []struct {
		paths, add []string
		want       string
	}{
		{rc.paths, nil, "no device to add"},
		{rc.paths, []string{small}, "too small"},
		{rc.paths, []string{r1[0]}, "already a uraid member"},
		{rc.paths[:3], rc.adds, "the array must be whole"},
		{rc.paths, []string{rc.paths[0]}, "named twice"},
		{r1, rc.adds, "a raid1's members are its copies"},
		{f2, rc.adds, "raid10 f2"},
		{lin, rc.adds, "a linear array grows by appending"},
		{dirty, rc.adds, "did not stop cleanly"},
	} {
		_, err := Reshape("t", c.paths, c.add, ReshapeOptions{})
		require.Error(t, err, "%v + %v", c.paths, c.add)
		assert.Contains(t, err.Error(), c.want)
	}
	for i := range all {
		b1, err := os.ReadFile(was[i])
		require.NoError(t, err)
		b2, err := os.ReadFile(all[i])
		require.NoError(t, err)
		assert.True(t, bytes.Equal(b1, b2), "%s changed by a refusal", all[i])
	}
}
