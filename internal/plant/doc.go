// Package plant reintroduces known defects into the array's code, one at a time, so that the
// robustness harness can prove it finds each of them (robust.TestPlanted). A planted defect is
// compiled in only with the build tag uraid_plant: without it Is is a constant false and every
// planted branch is dead code the compiler drops.
//
// The defects live where the code they undo does: recovery and torn in raid's assembly checks
// (raid/assemble.go), trimwrite in the region map (region/trim.go), and every other in the
// serving array (package array: E in Assemble, the rest in its read, write, sync and rebuild
// paths), steer in the discard engine's read steering (discard/learned.go), and reshapewindow in
// the reshape planner (reshape/reshape.go). steer is a latency defect the harness, which checks
// what reads return, cannot see; reshapewindow is in a planner the array does not run yet: their
// unit tests catch them (make test-planted-unit, which plants them through URAID_PLANT).
//
// The defects, named by the robustness issue's letters and by the harness's own mutations:
//
//	A  a rebuild decides whether a region is trimmed before it locks the region
//	B  a rebuild's end counts every region needing resync as resynced (two copies)
//	C  a write that left out a copy is acknowledged before the failure is recorded
//	syncslot  a sync job's read of a copy whose slot took a new device during the read counts as
//	          that copy's (the blank device's zeros become the resync's source)
//	trimwrite the region map marks a region trimmed when its discard completes although a write
//	          to it began meanwhile (a rebuild then punches that write out of the new copy)
//	flushrec  a flush after a member failed (not by this flush) is acknowledged before the
//	          failure is recorded: the member's cache is left out of it
//	D  a refused fail tests the last-copy rule by storing the failed state into the live one
//	E  assemble takes a member too small for the data area
//	F  a rebuild moves its checkpoint without flushing what it copied
//	map       a write goes to the members before its regions are dirty on disk
//	resync    a resync counts a region in sync without flushing what it copied
//	resyncend a resync's walk over a region ends a step early (its bound tested against the
//	          step's end, < for <=): the region's last 256 KiB are counted in sync, never copied
//	recovery  assemble takes a stale member (events behind) as current
//	readd     a device that left before the array was last made whole again is re-added by the
//	          map's regions (which have forgotten what it missed) instead of rebuilt whole
//	refill    a read prepared before a device is installed in its slot takes what it read
//	source    uraid fail takes the resync's source copy while regions wait for their resync
//	widen     a read kept to the resync's source copy fails when that copy fails
//	torn      assemble takes any member one update behind as current, named in the newest
//	          superblock's slot table or not (md's margin of one event)
//	claim     a device added to a slot claims it in its superblock before the members' maps
//	          carry its fill's checkpoint: cut between the two, it resumes another's
//	clean     the map's lazy work cleans regions without flushing the members first: a region
//	          is clean on disk while its last writes are still in volatile caches
//	steer     a read is steered by its copies' I/O in progress alone, their TRIMs in flight
//	          left out: it goes to a member whose TRIM stalls it although its mirror would
//	          serve it sooner
//	copiesfill a spare that fills an empty slot when the array starts (a raid1's new copy) gets
//	          only the regions the map says need a resync, as a member coming back would, not a
//	          whole rebuild
//	copieswhole a change of copies leaves the event count of the array's last whole moment as
//	          it was: a device that left before a drop made the array whole comes back by the
//	          map's regions, which have forgotten what it missed
//	copiesslot a member's superblock is written back with the slot count and slot it had, so one
//	          a cut left one update behind a change of copies keeps the old ones (invalid)
//	growtrim  a grow trims the new space from a mebibyte below the array's old end, so the last
//	          of the user's data goes with it
//	reshapewindow a reshape step's window reaches one row past the safe distance (at the start,
//	          where none is safe, it skips the backup): its new rows overwrite old places of its
//	          own window, and a cut before its cursor is durable redoes it from destroyed bytes
//	reshapeorder the array's reshape persists a step's state before the step's home writes:
//	          a cut before they reach the members resumes past a window whose new home holds
//	          nothing (array/reshape.go; TestReshape's cuts at reshape-write find it)
//	fixedtag  in copy mode a member read into a registered buffer names the neighbouring tag's
//	          buffer (ublk/ringops.go): the data lands in another request's buffer
//	reshapepark the online reshape lets a write into the window of the step under way instead of
//	          parking it: it lands on the old places the step already read, and the step's copy
//	          over the new ones, which reads go to once the step is persisted, loses it
//	          (array/reshape_online.go; TestReshapeOnline's reads find it, and the harness,
//	          which reshapes raid10 n2 and o2 online, in under 3000 requests)
//	appendorder an append to a linear array commits on the old members before the new member's
//	          superblock is written: cut between the two, the array counts a member no device
//	          claims, and cannot run
package plant
