package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"uraid/array"
	"uraid/discard/learn"
)

// A member's applied TRIM pacing and what its lane learned are exported; a member that cannot
// discard (no trim_learned) has only the applied ones.
func TestTrimLearnedMetrics(t *testing.T) {
	st := metricsStatus()
	st.Members[0].TrimExclusive, st.Members[0].TrimInFlight, st.Members[0].TrimGapMS = true, 1, 40
	st.Members[0].TrimLearned = &array.TrimLearned{Decision: learn.Decision{Exclusive: true, InFlight: 1, GapMS: 40,
		Basis: learn.Basis{IOCleanUS: 200, IOOverlappedUS: 90000, Changes: 2, Probes: 3}}}
	out := scrape(t, st)
	for _, want := range []string{
		`uraid_member_trim_exclusive{array="m",member="0",path="/dev/a"} 1`,
		`uraid_member_trim_inflight_limit{array="m",member="0",path="/dev/a"} 1`,
		`uraid_member_trim_gap_seconds{array="m",member="0",path="/dev/a"} 0.04`,
		`uraid_member_trim_learned_exclusive{array="m",member="0",path="/dev/a"} 1`,
		`uraid_member_trim_learned_gap_seconds{array="m",member="0",path="/dev/a"} 0.04`,
		`uraid_member_trim_learned_io_overlapped_seconds{array="m",member="0",path="/dev/a"} 0.09`,
		`uraid_member_trim_learned_changes_total{array="m",member="0",path="/dev/a"} 2`,
		`uraid_member_trim_exclusive{array="m",member="1",path=""} 0`,
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, `uraid_member_trim_learned_exclusive{array="m",member="1"`)
}
