package array

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/failpoint"
	"uraid/internal/testutil"
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
)

var growCases = []arrayCase{
	{mapping.RAID1, mapping.NoLayout, 2, 0},
	{mapping.RAID10, mapping.Near2, 4, 64 << 10},
	{mapping.RAID10, mapping.Near2, 3, 16 << 10},
	{mapping.RAID10, mapping.Offset2, 4, 64 << 10},
	{mapping.RAID0, mapping.NoLayout, 3, 64 << 10},
}

// filledArray makes an array of c on 8 MiB members (the size not a whole number of regions),
// writes random data over it, stops it cleanly and returns its members and its bytes.
func filledArray(t *testing.T, c arrayCase) (paths []string, model []byte) {
	dir := testutil.MemDir(t)
	for i := range c.n {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("m%d", i)))
	}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: c.level, Layout: c.layout, Chunk: c.chunk,
		Size: 8*mib + 7*4096, Members: paths})
	require.NoError(t, err)
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	h := harness(t, a)
	require.NoError(t, a.MarkDirty())
	size := a.Map().Size()
	model = randomBytes(size, uint64(c.n))
	for off := int64(0); off < size; off += harnessMaxIO {
		ublktest.Write(t, h, off, model[off:min(size, off+harnessMaxIO)])
	}
	ublktest.Flush(t, h)
	require.NoError(t, h.Close())
	require.NoError(t, a.MarkClean())
	require.NoError(t, a.Close())
	return paths, model
}

// snapshot copies the members' files as they are now: every step of a grow is durable before the
// next, so this is what a power cut at this moment leaves.
func snapshot(t *testing.T, paths []string) []string {
	dir := testutil.MemDir(t)
	var out []string
	for i, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		q := filepath.Join(dir, fmt.Sprintf("m%d", i))
		require.NoError(t, os.WriteFile(q, b, 0o600))
		out = append(out, q)
	}
	return out
}

// checkArray assembles paths and checks that the array is either oldSize with model intact, or
// newSize with model intact and the rest zeros, and that nothing needs resync.
func checkArray(t *testing.T, paths []string, model []byte, newSize int64) (*Array, bool) {
	t.Helper()
	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	size := b.Map().Size()
	grown := size == newSize
	require.True(t, grown || size == int64(len(model)), "size %d: neither the old %d nor the new %d", size, len(model), newSize)
	if b.regions != nil {
		b.regions.mu.Lock()
		m := b.regions.m
		assert.Equal(t, 0, m.Resyncs(), "nothing to resync")
		assert.Equal(t, size, m.Geometry().ArraySize)
		if grown {
			first := int((int64(len(model)) + m.RegionSize() - 1) / m.RegionSize())
			for r := first; r < m.Regions(); r++ {
				require.Equal(t, region.Trimmed, m.State(r), "new region %d", r)
			}
		}
		b.regions.mu.Unlock()
	}
	h := harness(t, b)
	for off := int64(0); off < size; off += harnessMaxIO {
		n := min(harnessMaxIO, size-off)
		got := ublktest.Read(t, h, off, int(n))
		want := make([]byte, n)
		if off < int64(len(model)) {
			copy(want, model[off:])
		}
		require.True(t, bytes.Equal(want, got), "bytes at %d of a %d-byte array", off, size)
	}
	require.NoError(t, h.Close())
	return b, grown
}

// TestGrowCrashAtEveryStep grows each growable layout after its members grew, cutting the power
// (a copy of the members) at every step of the grow: each copy assembles either at the old size
// or at the new one, with every byte written before intact, the new space reading as zeros,
// trimmed in the region map and nothing to resync; and a copy cut before the commit grows when
// asked again.
func TestGrowCrashAtEveryStep(t *testing.T) {
	for _, c := range growCases {
		t.Run(c.String(), func(t *testing.T) {
			paths, model := filledArray(t, c)
			for _, p := range paths {
				growDevice(t, p, 20*mib)
			}
			cuts := map[string][]string{}
			failpoint.Set(func(name string, _ failpoint.Span) {
				switch name {
				case FailpointGrowTrim, FailpointGrowMap, FailpointGrowCommit:
					cuts[name] = snapshot(t, paths)
				}
			})
			defer failpoint.Set(nil)
			a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
			require.NoError(t, err)
			p, err := a.Grow(GrowOptions{})
			require.NoError(t, err)
			require.NoError(t, a.Close())
			failpoint.Set(nil)
			assert.Equal(t, int64(len(model)), p.OldSize)
			assert.Greater(t, p.NewSize, 2*p.OldSize-p.OldSize/4, "members grew from about 9 to 20 MiB")

			b, grown := checkArray(t, paths, model, p.NewSize)
			assert.True(t, grown)
			require.NoError(t, b.Close())
			want := []string{FailpointGrowTrim, FailpointGrowCommit}
			if c.level.Redundant() {
				want = append(want, FailpointGrowMap)
			}
			for _, name := range want {
				cut, ok := cuts[name]
				require.True(t, ok, "failpoint %s not reached", name)
				b, grown := checkArray(t, cut, model, p.NewSize)
				assert.False(t, grown, "cut at %s, before the commit", name)
				q, err := b.Grow(GrowOptions{})
				require.NoError(t, err, "grow again after a cut at %s", name)
				assert.Equal(t, p.NewSize, q.NewSize)
				require.NoError(t, b.Close())
				b, grown = checkArray(t, cut, model, p.NewSize)
				assert.True(t, grown)
				require.NoError(t, b.Close())
			}
		})
	}
}

// TestGrowRefusals: every refusal leaves the members byte for byte as they were.
func TestGrowRefusals(t *testing.T) {
	c := arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}
	paths, _ := filledArray(t, c)
	before := map[string][]byte{}
	read := func() {
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			if old, ok := before[p]; ok {
				require.True(t, bytes.Equal(old, b), "%s changed", p)
			}
			before[p] = b
		}
	}
	read()
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	defer a.Close()
	_, err = a.Grow(GrowOptions{})
	require.ErrorIs(t, err, raid.ErrGrow)
	assert.Contains(t, err.Error(), "no member has grown")
	_, err = a.Grow(GrowOptions{Size: a.Map().Size() + 4*mib})
	require.ErrorIs(t, err, raid.ErrTooSmall)
	read()

	// A filesystem larger than the size asked for: refused unless forced.
	size := a.Map().Size()
	sb := make([]byte, 4096)
	sb[1024+56], sb[1024+57] = 0x53, 0xEF // ext magic
	sb[1024+24] = 2                       // 4 KiB blocks
	blocks := uint32(size / 4096)
	sb[1024+4], sb[1024+5], sb[1024+6], sb[1024+7] = byte(blocks), byte(blocks>>8), byte(blocks>>16), byte(blocks>>24)
	h := harness(t, a)
	require.NoError(t, a.MarkDirty())
	ublktest.Write(t, h, 0, sb)
	ublktest.Flush(t, h)
	require.NoError(t, h.Close())
	_, err = a.Grow(GrowOptions{Size: size / 2})
	require.ErrorIs(t, err, raid.ErrGrow)
	assert.Contains(t, err.Error(), "ext4")
	p, err := a.Grow(GrowOptions{Size: size/2 + 1000, Force: true})
	require.NoError(t, err)
	assert.True(t, p.Rounded)
	assert.Equal(t, size/2, p.NewSize)
	assert.Equal(t, size/2, a.Map().Size())
}

// TestGrowWhileWriting grows each redundant layout while its device takes writes, many of them
// to the partial last region whose tail the grow zeroes: the writes park while the map is
// resized, and every byte written, before, during and after, reads back, on the running array
// and after a stop and an assemble.
func TestGrowWhileWriting(t *testing.T) {
	for _, c := range growCases[:4] {
		t.Run(c.String(), func(t *testing.T) {
			paths, model := filledArray(t, c)
			for _, p := range paths {
				growDevice(t, p, 20*mib)
			}
			a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
			require.NoError(t, err)
			h := harness(t, a)
			require.NoError(t, a.MarkDirty())
			old := int64(len(model))
			stop := make(chan struct{})
			done := make(chan int)
			var wrote atomic.Int64
			// The grow starts once writes flow, and commits only with a write parked behind it.
			failpoint.Set(func(name string, _ failpoint.Span) {
				switch name {
				case FailpointGrowTrim:
					testutil.WaitFor(t, "writes before the grow", func() bool { return wrote.Load() >= 20 })
				case FailpointGrowCommit:
					testutil.WaitFor(t, "a write parked by the grow", func() bool {
						a.regions.mu.Lock()
						defer a.regions.mu.Unlock()
						return a.regions.lockWaiters != nil
					})
				}
			})
			defer failpoint.Set(nil)
			go func() {
				n := 0
				rng := rand.New(rand.NewPCG(7, uint64(c.n)))
				for {
					select {
					case <-stop:
						done <- n
						return
					default:
					}
					// Half the writes land in the last MiB, near the end the grow extends.
					ln := (rng.Int64N(64) + 1) * 512
					off := rng.Int64N((old-ln)/512+1) * 512
					if rng.IntN(2) == 0 {
						off = old - ln - rng.Int64N(mib/512)*512
					}
					data := randomBytes(ln, uint64(n))
					ublktest.Write(t, h, off, data)
					copy(model[off:], data)
					n++
					wrote.Add(1)
				}
			}()
			p, err := a.Grow(GrowOptions{})
			failpoint.Set(nil)
			close(stop)
			writes := <-done
			require.NoError(t, err)
			assert.Positive(t, writes)
			assert.Equal(t, p.NewSize, a.Map().Size())
			h.SetSize(p.NewSize) // the kernel learns it (UPDATE_SIZE)
			size := p.NewSize
			for off := int64(0); off < size; off += harnessMaxIO {
				n := min(harnessMaxIO, size-off)
				want := make([]byte, n)
				if off < old {
					copy(want, model[off:])
				}
				require.True(t, bytes.Equal(want, ublktest.Read(t, h, off, int(n))), "bytes at %d", off)
			}
			// The new space takes writes.
			ublktest.Write(t, h, size-4096, bytes.Repeat([]byte{7}, 4096))
			ublktest.Flush(t, h)
			require.NoError(t, h.Close())
			require.NoError(t, a.MarkClean())
			require.NoError(t, a.Close())
			grownModel := make([]byte, size)
			copy(grownModel, model)
			copy(grownModel[size-4096:], bytes.Repeat([]byte{7}, 4096))
			b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
			require.NoError(t, err)
			defer b.Close()
			assert.Equal(t, StateNameClean, b.Status("", 0).State)
			h2 := harness(t, b)
			for off := int64(0); off < size; off += harnessMaxIO {
				n := min(harnessMaxIO, size-off)
				require.True(t, bytes.Equal(grownModel[off:off+n], ublktest.Read(t, h2, off, int(n))), "after assemble, bytes at %d", off)
			}
		})
	}
}

// growDevice makes the member file size bytes long, the bytes it gains full of old garbage, as a
// larger disk that held something else would be.
func growDevice(t *testing.T, path string, size int64) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0xAA}, int(size-fi.Size())), fi.Size())
	require.NoError(t, err)
}
