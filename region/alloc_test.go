package region

import (
	"testing"
	"time"
)

// TestHotPathAllocs: BeginWrite and EndWrite on regions already dirty on
// disk, the path every write of a busy array takes, allocate nothing; nor
// do a flush into a slice with room, a clean, or a discard.
func TestHotPathAllocs(t *testing.T) {
	rg := newRig(t, geom(64), InSync, 2)
	m := rg.m
	for r := range 64 {
		rg.write(r, true)
	}
	var off int64
	allocs := testing.AllocsPerRun(1000, func() {
		gen, err := m.BeginWrite(off, 4096)
		if err != nil || gen != 0 {
			t.Fatalf("BeginWrite: %d, %v", gen, err)
		}
		if err := m.EndWrite(off, 4096, true); err != nil {
			t.Fatal(err)
		}
		off = (off + 7*4096 + 512) % (63 << 12) // crossing regions too
	})
	if allocs != 0 {
		t.Errorf("BeginWrite+EndWrite on dirty regions: %v allocations, want 0", allocs)
	}

	dst := make([]Block, 0, m.Blocks())
	now := time.Duration(0)
	allocs = testing.AllocsPerRun(100, func() {
		now += time.Second
		m.Clean(now, 0)
		tr, _ := m.StartTrim(0, 8192)
		m.EndTrim(tr)
		if _, err := m.BeginWrite(0, 512); err != nil {
			t.Fatal(err)
		}
		gen, blocks, err := m.Flush(FlushChanged, dst[:0])
		if err != nil || gen == 0 || len(blocks) == 0 {
			t.Fatalf("Flush: %d, %d blocks, %v", gen, len(blocks), err)
		}
		if err := m.Flushed(gen); err != nil {
			t.Fatal(err)
		}
		if err := m.EndWrite(0, 512, true); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("clean, trim, a waiting write and its flush: %v allocations, want 0", allocs)
	}
}
