package array

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"uraid/mapping"
	"uraid/raid"
	"uraid/ublk"
)

// benchCase is one kind of request a benchmark sends at random places of a raid1 of two files.
type benchCase struct {
	op      ublk.Op
	length  int64
	mode    string // the discard mode
	withMap bool
	level   mapping.Level // RAID1 of two files unless set
	members int
}

// runQD32 keeps 32 requests of bc in flight through the array's ublk target until b.N have
// completed.
func runQD32(b *testing.B, bc benchCase) {
	dir := b.TempDir()
	level, n := bc.level, bc.members
	if level == 0 {
		level, n = mapping.RAID1, 2
	}
	var paths []string
	for i := range n {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("m%d", i)))
	}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "b", Level: level, Size: 256 * mib, Members: paths})
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 32, Discard: DiscardOptions{Mode: bc.mode}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	if err := a.MarkDirty(); err != nil {
		b.Fatal(err)
	}
	if !bc.withMap {
		a.syncer.stop()
		a.regions.stop(false)
		a.regions, a.syncer = nil, nil
	}
	h, err := ublk.NewHarness(a, 32, 64<<10)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	size := a.Map().Size()
	start := func(tag uint16) {
		off := rng.Int64N(size/bc.length) * bc.length
		if err := h.Start(tag, ublk.HarnessRequest{Op: bc.op, Offset: off, Length: bc.length}); err != nil {
			b.Fatal(err)
		}
	}
	want := int32(0)
	if bc.op == ublk.OpRead || bc.op == ublk.OpWrite {
		want = int32(bc.length)
	}
	b.ReportAllocs()
	b.ResetTimer()
	inflight := 0
	for tag := range uint16(min(32, b.N)) {
		start(tag)
		inflight++
	}
	for done := 0; done < b.N; done++ {
		tag, res, err := h.Wait()
		if err != nil || res != want {
			b.Fatalf("%v: %d %v", bc.op, res, err)
		}
		inflight--
		if done+inflight < b.N {
			start(tag)
			inflight++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
	a.DrainDiscards()
}

// BenchmarkArrayRandomWrite: 4 KiB random writes at QD32 through the array's ublk target over a
// raid1 of two files, with the region map and without it. The map's cost is the write intent:
// the first write to each region waits for a metadata write, the others take a lock twice.
// Reports requests per second; the ratio with/without is the figure that matters.
func BenchmarkArrayRandomWrite(b *testing.B) {
	for _, withMap := range []bool{true, false} {
		b.Run(fmt.Sprintf("map=%v", withMap), func(b *testing.B) {
			runQD32(b, benchCase{op: ublk.OpWrite, length: 4096, mode: "sync", withMap: withMap})
		})
	}
}

// BenchmarkArrayRequests: random requests at QD32 through the array's ublk target over a raid1 of
// two files, with the region map, on the paths the discard engine admits: 4 KiB reads (the
// engine picks a copy), and 1 MiB discards, each covering a region whole, acknowledged when
// trimmed (sync) or once queued (async). allocs/op counts every goroutine's allocations, the
// engine's lanes and the map's flusher included: the queue goroutine's share must be none.
func BenchmarkArrayRequests(b *testing.B) {
	for _, bc := range []struct {
		name string
		benchCase
	}{
		{"read", benchCase{op: ublk.OpRead, length: 4096, mode: "sync", withMap: true}},
		{"discard-sync", benchCase{op: ublk.OpDiscard, length: 1 << 20, mode: "sync", withMap: true}},
		{"discard-async", benchCase{op: ublk.OpDiscard, length: 1 << 20, mode: "async", withMap: true}},
	} {
		b.Run(bc.name, func(b *testing.B) { runQD32(b, bc.benchCase) })
	}
}

// BenchmarkArrayReadLevels: 4 KiB random reads at QD32 through the array's ublk target over four
// files, raid0 against raid10, with the region map: what choosing a copy costs a read.
func BenchmarkArrayReadLevels(b *testing.B) {
	for _, l := range []mapping.Level{mapping.RAID0, mapping.RAID10} {
		b.Run(l.ShortName(), func(b *testing.B) {
			runQD32(b, benchCase{op: ublk.OpRead, length: 4096, mode: "sync", withMap: true, level: l, members: 4})
		})
	}
}
