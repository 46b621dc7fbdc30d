// Package array serves one assembled uraid array: it is the ublk target of the array's device,
// keeps the copies of a mirror in step, and changes its members while it runs. What makes a set
// of devices one array (the superblock, create, the assembly checks, scanning, opening a member
// device) is package raid's; array builds on it.
//
// # Owns
//
//   - Building an Array: Assemble opens the devices a user named (raid.OpenMember), checks that
//     they form the array (raid.CheckAssembly) and are large enough, and serves them; NewArray
//     serves the members raid.Create just wrote. MarkDirty records on the members that the array
//     runs, before its device serves; MarkClean that it stopped cleanly; Close lets them go.
//   - The read, write, flush and discard paths (target.go): Array is a ublk.Resumer. Reads and
//     writes are mapped by the array's mapping.Map, admitted by the discard engine (engine.go sets
//     it up from DiscardOptions and each member's kind) and issued on the queue's own io_uring;
//     their completions come back to Reap. Discards go to the engine, whose lanes trim the
//     members. A member whose I/O fails is taken out of service; a write that left out a copy is
//     acknowledged only once that failure is in the superblocks.
//   - The region map's use (regions.go): for raid1 and raid10, package region's map kept on every
//     member after its superblock, written by a flusher goroutine; a write to a clean region waits
//     until the region is dirty on every member's disk, and the engine tells the map which
//     discards were trimmed.
//   - Sync jobs (sync.go): resync after an unclean stop, check and repair, one at a time, a region
//     at a time with writes to it locked out, paced behind the user's I/O and checkpointed in the
//     map.
//   - Membership (rebuild.go): fail, remove, add, replace and hot spares, and the rebuild that
//     fills a slot online.
//   - What an operator sees of it: Status (status.go), the event stream (events.go), and the
//     Failpoint names (failpoints.go) that tests and the robustness harness hold these paths at.
//
// # Does not touch
//
//   - The superblock's encoding, and what a set of superblocks means, live in raid: array reads
//     and writes superblocks only through raid.ReadSuperblock and raid.WriteSuperblock, and opens
//     member devices only through raid.OpenMember.
//   - Standard error: the array logs through log/slog, to Options.Log (else slog.Default()), every
//     record tagged with the array's name, and tells an operator what happens through its events.
//   - The ublk queue goroutine never blocks and never allocates per request: every tag's state is
//     allocated when the array is built (TestArrayHotPathAllocs counts), a request that must wait
//     (for a TRIM, the region map, a region a sync job holds) is parked and resumed rather than
//     waited for, and what must block (recording a member's failure in the superblocks, a hot
//     spare's rebuild) runs on a goroutine of its own.
//
// # Concurrency
//
// An Array runs its queues' goroutines, the engine's lanes, the region map's flusher and one sync
// job at once. Serve, Resume and Reap are its queues' (a queue's own goroutine); Status, the sync
// jobs' and the membership calls may come from any goroutine meanwhile, as a daemon's control
// socket makes them. Membership changes are serialized by one lock, taken before any other. The
// region map's lock is never held while calling into the discard engine, a member's I/O or a
// request's Resume.
package array
