package reshape

import (
	"testing"

	"uraid/mapping"
)

// TestNextAllocatesNothing checks that planning a step into a Step that has
// held one as large, and routing, allocate nothing: the array plans steps
// and routes requests on its hot path.
func TestNextAllocatesNothing(t *testing.T) {
	r, err := New(geo(mapping.RAID10, mapping.Near2, 64*kib, 4, 64*mib), geo(mapping.RAID10, mapping.Near2, 64*kib, 6, 64*mib), Config{MaxWindowBytes: 4 * mib})
	if err != nil {
		t.Fatal(err)
	}
	half := func(off, end int64) (bool, int64) { // live and dead by turns of 1 MiB
		next := min(end, (off/mib+1)*mib)
		return off/mib%2 == 0, next
	}
	states := []State{{}, {Cursor: 8 * r.Unit()}, {Cursor: r.End() - r.Unit()}, {Cursor: r.End()}}
	var s Step
	for _, st := range states {
		if err := r.Next(st, half, &s); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range states {
		if n := testing.AllocsPerRun(20, func() { _ = r.Next(st, half, &s) }); n != 0 {
			t.Errorf("Next(%+v) allocates %v times", st, n)
		}
	}
	p := Position{Cursor: 4 * r.Unit(), WindowEnd: 6 * r.Unit()}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = r.Route(p, 0, r.From().Size()) }); n != 0 {
		t.Errorf("Route allocates %v times", n)
	}
}
