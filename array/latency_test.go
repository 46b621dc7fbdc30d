package array

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
	"uraid/ublk"
)

// TestLatencyHistograms: every successful read, write and discard lands in the array's histogram
// and each member I/O in its member's, and timing them costs the data path no allocation.
func TestLatencyHistograms(t *testing.T) {
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			a, _ := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, mode)
			defer a.Close()
			h := harness(t, a)
			require.NoError(t, a.MarkDirty())
			req := func(op ublk.Op, off int64) func() {
				return func() {
					res, err := h.Do(ublk.HarnessRequest{Op: op, Offset: off, Length: 4096})
					if err != nil || (op != ublk.OpDiscard && res != 4096) || (op == ublk.OpDiscard && res != 0) {
						panic("request failed")
					}
				}
			}
			req(ublk.OpWrite, 0)() // warm: the region map's first dirtying of a region writes it out
			req(ublk.OpDiscard, 1<<20)()
			a.engine.Drain()
			for _, c := range []struct {
				name string
				op   ublk.Op
				off  int64
			}{{"read", ublk.OpRead, 0}, {"write", ublk.OpWrite, 0}, {"discard", ublk.OpDiscard, 1 << 20}} {
				allocs := testing.AllocsPerRun(200, req(c.op, c.off))
				a.engine.Drain()
				assert.Zero(t, allocs, "%s allocates", c.name)
			}
			st := a.Status("", 0)
			// 201 runs each (AllocsPerRun warms once), plus the warm-up requests above.
			assert.EqualValues(t, 201, st.ReadLatency.Count())
			assert.EqualValues(t, 202, st.WriteLatency.Count())
			assert.EqualValues(t, 202, st.DiscardLatency.Count())
			var reads, writes uint64
			for _, m := range st.Members {
				reads += m.ReadLatency.Count()
				writes += m.WriteLatency.Count()
				assert.EqualValues(t, 202, m.WriteLatency.Count(), "every copy is written")
				assert.Equal(t, m.IO.Reads, m.ReadLatency.Count())
				assert.Equal(t, m.Discard.Completed, m.Discard.LatencyHistogram.Count())
				assert.NotZero(t, m.Discard.LatencyHistogram.Count())
			}
			assert.EqualValues(t, 201, reads, "each read goes to one copy")
			assert.EqualValues(t, 404, writes)
		})
	}
}
