package array

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"uraid/mapping"
	"uraid/raid"
	"uraid/ublk"
)

// BenchmarkArrayRequests: random requests at QD32 through the array's ublk target over a raid1 of
// two files, with the region map, on the paths the discard engine admits: 4 KiB reads (the
// engine picks a copy), and 1 MiB discards, each covering a region whole, acknowledged when
// trimmed (sync) or once queued (async). allocs/op counts every goroutine's allocations, the
// engine's lanes and the map's flusher included: the queue goroutine's share must be none.
func BenchmarkArrayRequests(b *testing.B) {
	for _, bc := range []struct {
		name   string
		op     ublk.Op
		length int64
		mode   string
	}{
		{"read", ublk.OpRead, 4096, "sync"},
		{"discard-sync", ublk.OpDiscard, 1 << 20, "sync"},
		{"discard-async", ublk.OpDiscard, 1 << 20, "async"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
			ms, sbs, err := raid.Create(raid.CreateOptions{Name: "b", Level: mapping.RAID1, Size: 256 * mib, Members: paths})
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
			if bc.op == ublk.OpRead {
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
			a.DrainDiscards()
		})
	}
}
