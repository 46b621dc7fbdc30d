package region

import (
	"sync"
	"testing"
)

// dirtyMap returns a map of a 1 TiB array (262144 regions of 4 MiB) whose
// regions are all dirty on disk: the state a busy array is in.
func dirtyMap(b *testing.B) *Map {
	b.Helper()
	g := Geometry{ArrayUUID: testUUID, ArraySize: 1 << 40, RegionSize: 4 << 20}
	m, err := New(g, Dirty)
	if err != nil {
		b.Fatal(err)
	}
	gen, _, err := m.Flush(FlushAll, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Flushed(gen); err != nil {
		b.Fatal(err)
	}
	for r := range m.Regions() {
		m.Resynced(r)
		if _, err := m.BeginWrite(int64(r)<<22, 4096); err != nil {
			b.Fatal(err)
		}
	}
	gen, _, _ = m.Flush(FlushUrgent, nil)
	_ = m.Flushed(gen)
	for r := range m.Regions() {
		_ = m.EndWrite(int64(r)<<22, 4096, true)
	}
	return m
}

// BenchmarkWriteDirty is the hot path: a 4 KiB write to a random region
// already dirty on disk, begun and ended. The offsets are drawn before the
// loop so that only the map is measured.
func BenchmarkWriteDirty(b *testing.B) {
	m := dirtyMap(b)
	offs := randomOffsets(m)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		off := offs[i&(len(offs)-1)]
		i++
		if gen, err := m.BeginWrite(off, 4096); err != nil || gen != 0 {
			b.Fatalf("BeginWrite: %d, %v", gen, err)
		}
		if err := m.EndWrite(off, 4096, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteDirtyLocked is the hot path as the array will call it from
// its queue goroutines: under one mutex, from every CPU at once.
func BenchmarkWriteDirtyLocked(b *testing.B) {
	m := dirtyMap(b)
	offs := randomOffsets(m)
	var mu sync.Mutex
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			off := offs[i&(len(offs)-1)]
			i += 7
			mu.Lock()
			gen, err := m.BeginWrite(off, 4096)
			mu.Unlock()
			if err != nil || gen != 0 {
				b.Errorf("BeginWrite: %d, %v", gen, err)
				return
			}
			mu.Lock()
			err = m.EndWrite(off, 4096, true)
			mu.Unlock()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func randomOffsets(m *Map) []int64 {
	offs := make([]int64, 1<<16)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range offs {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		offs[i] = int64(x%uint64(m.Geometry().ArraySize>>12)) << 12
	}
	return offs
}

// BenchmarkCleanAndRedirty is the cost to the CPU of a region that goes
// idle and is written again: its clean reaches the disk with a lazy flush,
// and the next write waits for an urgent one. Two one-block flushes.
func BenchmarkCleanAndRedirty(b *testing.B) {
	m := dirtyMap(b)
	flush := func(mode FlushMode, dst []Block) {
		gen, _, err := m.Flush(mode, dst[:0])
		if err != nil || gen == 0 {
			b.Fatalf("Flush(%d): %d, %v", mode, gen, err)
		}
		if err := m.Flushed(gen); err != nil {
			b.Fatal(err)
		}
	}
	dst := make([]Block, 0, m.Blocks())
	m.Clean(0, 0)
	flush(FlushChanged, dst)
	b.ReportAllocs()
	for b.Loop() {
		gen, err := m.BeginWrite(0, 4096)
		if err != nil || gen == 0 {
			b.Fatalf("BeginWrite on a clean region: %d, %v", gen, err)
		}
		flush(FlushUrgent, dst)
		if err := m.EndWrite(0, 4096, true); err != nil {
			b.Fatal(err)
		}
		if m.Clean(0, 0) != 1 {
			b.Fatal("the region was not cleaned")
		}
		flush(FlushChanged, dst)
	}
}

// BenchmarkLoad reads back the 17 blocks of a 1 TiB array's map from two
// members, as assembly does.
func BenchmarkLoad(b *testing.B) {
	m := dirtyMap(b)
	gen, blocks, _ := m.Flush(FlushAll, nil)
	area := make([]byte, m.Geometry().AreaBytes())
	for _, bl := range blocks {
		copy(area[bl.Offset:], bl.Data)
	}
	_ = m.Flushed(gen)
	areas := [][]byte{area, area}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Load(testUUID, m.Geometry().ArraySize, areas); err != nil {
			b.Fatal(err)
		}
	}
}
