package region

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestResizedProperty: for any map, any history of writes, failed writes, trims and cleans, and
// any new size, the resized map keeps the state and resync need of every region both sizes have,
// has every region past the old end trimmed, passes Verify, and reads back from its members the
// same at the new size. Read at the old size (a crash after the new map reached the members and
// before the superblocks took the new size), the same blocks give back the old map's states: the
// header is of the other size, and the blocks decide.
func TestResizedProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const rs = 1 << 12
		maxRegions := 3*RegionsPerBlock + 7
		// Array sizes are whole sectors.
		oldSize := 512 * rapid.Int64Range(1, int64(maxRegions)*rs/512).Draw(t, "oldSectors")
		newSize := 512 * rapid.Int64Range(1, int64(maxRegions)*rs/512).Draw(t, "newSectors")
		g := Geometry{ArrayUUID: testUUID, ArraySize: oldSize, RegionSize: rs}
		rg := newRig(t, g, rapid.SampledFrom([]State{InSync, Trimmed, Dirty}).Draw(t, "initial"), 2)
		// Room for the map at either size.
		big := Geometry{ArrayUUID: testUUID, ArraySize: int64(maxRegions) * rs, RegionSize: rs}
		for i, a := range rg.areas {
			rg.areas[i] = append(a, make([]byte, big.AreaBytes()-int64(len(a)))...)
		}
		regions := g.Regions()
		steps := rapid.IntRange(0, 40).Draw(t, "steps")
		for i := range steps {
			r := rapid.IntRange(0, regions-1).Draw(t, "region")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				rg.write(r, rapid.Bool().Draw(t, "ok"))
			case 2:
				off, n := rg.m.Span(r)
				tr, err := rg.m.StartTrim(off, n)
				if err != nil {
					t.Fatalf("StartTrim: %v", err)
				}
				rg.m.EndTrim(tr)
			case 3:
				rg.m.Clean(time.Duration(i)*time.Hour, time.Hour)
			}
		}
		if rapid.Bool().Draw(t, "flushed") {
			rg.flush(FlushChanged)
		}
		old := rg.m
		n, err := old.Resized(newSize)
		if err != nil {
			t.Fatalf("Resized(%d): %v", newSize, err)
		}
		if err := n.Verify(); err != nil {
			t.Fatalf("resized map: %v", err)
		}
		if got := old.Geometry().ArraySize; got != oldSize {
			t.Fatalf("the old map changed size: %d", got)
		}
		for r := range n.Regions() {
			want := Trimmed
			if r < old.Regions() {
				want = old.State(r)
				if n.NeedsResync(r) != old.NeedsResync(r) {
					t.Fatalf("region %d: needs resync %v, was %v", r, n.NeedsResync(r), old.NeedsResync(r))
				}
			}
			if got := n.State(r); got != want {
				t.Fatalf("region %d of %d (old %d): %s, want %s", r, n.Regions(), old.Regions(), got, want)
			}
		}
		rg.m = n
		rg.flush(FlushAll)
		back, rep := rg.load()
		if len(rep.Problems) > 0 {
			t.Fatalf("load at the new size: %v", errors.Join(rep.Problems...))
		}
		for r := range n.Regions() {
			if want, got := n.State(r), back.State(r); got != want {
				t.Fatalf("region %d: %s on disk, %s in memory", r, got, want)
			}
		}
		if newSize == oldSize {
			return
		}
		before, _, err := Load(testUUID, oldSize, rg.areas)
		if err != nil {
			t.Fatalf("load at the old size: %v", err)
		}
		for r := range min(old.Regions(), n.Regions()) {
			if want, got := old.State(r), before.State(r); got != want {
				t.Fatalf("at the old size, region %d: %s on disk, %s before the resize", r, got, want)
			}
		}
	})
}

func TestResizedRefuses(t *testing.T) {
	rg := newRig(t, geom(4), InSync, 1)
	if _, err := rg.m.BeginWrite(0, 512); err != nil {
		t.Fatal(err)
	}
	if _, err := rg.m.Resized(8 << 12); !errors.Is(err, ErrProtocol) {
		t.Fatalf("with a write in flight: %v, want ErrProtocol", err)
	}
	rg = newRig(t, geom(4), InSync, 1)
	if err := rg.m.SetCursor(Cursor{Action: ActionResync, Position: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := rg.m.Resized(8 << 12); !errors.Is(err, ErrProtocol) {
		t.Fatalf("with a checkpoint: %v, want ErrProtocol", err)
	}
	rg = newRig(t, geom(4), InSync, 1)
	if _, err := rg.m.Resized(int64(MaxRegions+1) << 12); !errors.Is(err, ErrGeometry) {
		t.Fatalf("past MaxRegions: %v, want ErrGeometry", err)
	}
}
