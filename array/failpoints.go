package array

import "uraid/internal/failpoint"

// Failpoints of the healing paths (package failpoint): where a test or the robustness harness
// may hold a step or cut the power.
const (
	// FailpointRebuildRegion: a rebuild is about to take its next region.
	FailpointRebuildRegion = "rebuild-region"
	// FailpointRebuildCursor: a rebuild finished a region and moved its checkpoint past it.
	FailpointRebuildCursor = "rebuild-cursor"
	// FailpointResyncRegion: a resync, check or repair is about to take its next region.
	FailpointResyncRegion = "resync-region"
	// FailpointFailed: a member is out of service in memory, not yet in the superblocks.
	FailpointFailed = "member-failed"
	// FailpointSyncIO: a sync job (resync, check, repair, rebuild) is about to read or write one
	// copy; a membership change may come between its choice of copies and the I/O.
	FailpointSyncIO = "sync-io"
	// FailpointMapFlush: a region map generation is about to be written to the members.
	FailpointMapFlush = "map-flush"
)

var hit = failpoint.Hit

// hitRegion is hit at a step about to work on region r, whose span the hook is told.
func (g *regions) hitRegion(name string, r int) {
	if !failpoint.Active() {
		return
	}
	off, n := g.span(r)
	failpoint.HitAt(name, failpoint.Span{Off: off, Len: n})
}
