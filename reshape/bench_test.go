package reshape

import (
	"testing"

	"uraid/mapping"
)

// BenchmarkNext plans a 64 MiB step of a raid10 n2 4 to 6 reshape whose
// liveness alternates every MiB: the planner's share of a step's cost.
func BenchmarkNext(b *testing.B) {
	r, err := New(geo(mapping.RAID10, mapping.Near2, 512*kib, 4, 16<<30), geo(mapping.RAID10, mapping.Near2, 512*kib, 6, 16<<30), Config{})
	if err != nil {
		b.Fatal(err)
	}
	half := func(off, end int64) (bool, int64) { return off/mib%2 == 0, min(end, (off/mib+1)*mib) }
	st := State{Cursor: r.End() / 2 / r.Unit() * r.Unit()}
	var s Step
	for b.Loop() {
		if err := r.Next(st, half, &s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.To-s.From)/(1<<20), "MiB/step")
}
