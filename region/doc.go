// Package region is uraid's persistent region map: for each region of an
// array, whether its copies agree (in sync), may differ (dirty), or were
// discarded whole by the array's user (trimmed). It is what lets a raid1 or
// raid10 whose daemon was killed mid-write resync only the regions that were
// being written, lets a mirror check skip trimmed regions, and lets a
// rebuild trim them on the new member instead of copying them.
//
// Regions are in the array's logical address space, so one map describes
// the whole array and every member carries an identical copy of it, in the
// area between its superblock and its data (docs/superblock.md). The region
// size is a power of two chosen from the array size (ChooseRegionSize).
//
// The package is pure, like mapping/: no goroutines, no I/O, no clock.
// Encoding and decoding work on byte slices; the caller reads and writes the
// blocks, and passes the time to Clean.
//
// # Write intent
//
//   - A region is dirty on every member's disk before any write to it is
//     issued: BeginWrite returns 0 only then, and otherwise the generation of
//     the flush to wait for. One flush covers every write that arrived while
//     the previous one was in flight.
//   - A region never leaves Dirty while a write to it is in flight (begun and
//     not ended), nor while it needs resync. Writes that fail on some copy,
//     and writes while the array is degraded, leave their regions needing
//     resync; only Resynced ends that, or a discard that trims the region
//     whole on every copy (its bytes are then free space everywhere).
//   - Regions go back to in sync lazily: Clean moves regions whose writes
//     ended at least an idle time ago (DefaultIdle), and they reach the disk
//     with a later flush. Time never affects safety, only how often a busy
//     region bounces. While the array is degraded no dirty region is ever
//     cleared.
//   - The hot path, BeginWrite and EndWrite on regions already dirty on
//     disk, is O(1) per region touched and allocates nothing.
//
// # Trimmed
//
//   - A region becomes Trimmed only when a discard covering it whole has
//     completed on every copy (EndTrim, which the caller calls once the
//     discard engine says so), with no write in flight to it
//     when the discard arrived and none begun before it completed; and never
//     while the array is degraded, nor for a discard that arrived before it
//     last degraded.
//   - Trimmed reaches the disk only with a flush after that completion. The
//     first write to a trimmed region makes it dirty on disk before the write
//     is issued, as for any region not dirty there.
//
// # On disk
//
//   - Each block is self-describing and checksummed; one region update
//     rewrites exactly one block. A block that is torn, corrupt, missing, or
//     of another array decodes as every region in it dirty.
//   - Load merges the copies of every member pessimistically: dirty if any
//     copy says dirty, trimmed only if all say trimmed. So a lost or torn
//     update, or a member that missed updates, can only make a region look
//     more dirty and less trimmed, never the reverse.
//   - After Load, every region dirty on disk needs resync; a clean stop
//     leaves none dirty except those written while the array was degraded.
//   - The Cursor in the header checkpoints a resync, check or rebuild. A lost
//     header update only moves it back.
//   - Decoders never panic, whatever the bytes; they tell "no map here",
//     "torn or damaged", "too new" and "impossible fields" apart.
//
// # Concurrency
//
// A Map is not safe for concurrent use: the caller serializes every call
// with one lock, held for a few nanoseconds on the hot path. Flushes are
// serialized too: at most one is in flight, and the blocks it returned stay
// untouched until Flushed or FlushFailed. Geometry, Header,
// Cursor and Trim are plain values.
package region
