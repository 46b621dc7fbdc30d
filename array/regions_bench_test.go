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

// BenchmarkArrayRandomWrite: 4 KiB random writes at QD32 through the array's ublk target over a
// raid1 of two files, with the region map and without it. The map's cost is the write intent:
// the first write to each region waits for a metadata write, the others take a lock twice.
// Reports writes per second; the ratio with/without is the figure that matters.
func BenchmarkArrayRandomWrite(b *testing.B) {
	for _, withMap := range []bool{true, false} {
		b.Run(fmt.Sprintf("map=%v", withMap), func(b *testing.B) {
			dir := b.TempDir()
			paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
			ms, sbs, err := raid.Create(raid.CreateOptions{Name: "b", Level: mapping.RAID1, Size: 256 * mib, Members: paths})
			if err != nil {
				b.Fatal(err)
			}
			a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 32})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			if err := a.MarkDirty(); err != nil {
				b.Fatal(err)
			}
			if !withMap {
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
				off := rng.Int64N(size/4096) * 4096
				if err := h.Start(tag, ublk.HarnessRequest{Op: ublk.OpWrite, Offset: off, Length: 4096}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			inflight := 0
			for tag := range uint16(min(32, b.N)) {
				start(tag)
				inflight++
			}
			for done := 0; done < b.N; done++ {
				tag, res, err := h.Wait()
				if err != nil || res != 4096 {
					b.Fatalf("write: %d %v", res, err)
				}
				inflight--
				if done+inflight < b.N {
					start(tag)
					inflight++
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
