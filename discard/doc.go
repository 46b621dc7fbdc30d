// Package discard is uraid's TRIM engine: it takes the per-member pieces of
// each array discard, queues them on every member at once, merges what
// touches, paces what the device would punish, and issues TRIMs from a few
// goroutines per member, so that one slow SSD never serializes the array and
// TRIMs never stall the filesystem above.
//
// # Halves
//
// Queue is the pure planner of one member: queued pieces sorted by offset,
// merged when they touch (up to the member's longest TRIM), cut by writes,
// and the in-flight TRIMs that writes and reads must wait for. The design
// and the measured figures are in docs/discard.md. It has no
// goroutines, no clock and no syscalls and is tested against a byte-level
// model.
//
// Engine is the issuing half: per member, one lane goroutine takes TRIMs
// from the Queue and starts them on the member's Issuer, at most InFlight
// outstanding (RingIssuer: SQEs on an io_uring of the lane's own). Members
// never wait for one another. In Sync mode a discard is acknowledged when
// every member is done; in Async mode as soon as it is queued, except that
// a member over MaxQueued holds the acknowledgement back until it has
// caught up (backpressure, not loss, and never a blocked caller).
//
// A lane whose member learns (Member.Learn) measures what the member's
// TRIMs cost, to it and to the reads and writes beside them, and paces them
// by what package learn decides: whether they yield to I/O, how many run at
// once, how long the member rests between them; a setting the
// configuration fixes (Member.Fixed) stays as configured. Reads go to the
// copy whose expected wait, priced by what was measured, is least.
//
// # The way in
//
// The array admits every request through the engine, which keeps the rules
// itself: BeginRead (and Reread after a failed read) for reads, BeginWrite
// for writes, Discard for discards, Fail for a member that failed. None of
// them blocks. A read or write that must wait for a TRIM is parked and its
// Waiter resumed when it may try again; a ublk queue resumes it on its own
// goroutine.
//
// Requests speak mapping's vocabulary, as the planner hands them over: a
// member byte range is a mapping.Extent (a write's copies, a discard's
// pieces), a read's part a mapping.Piece with its copies. mapping stays
// below the engine: it knows nothing of discard.
//
// A discard's Watch asks to hear whether it was trimmed (Config.OnTrimmed):
// the engine alone decides, by its own numbering of the pieces, and tells
// each watched discard once, so that the region map learns of completed
// trims without asking.
//
// # Guarantees
//
//   - A TRIM covers only bytes some queued discard asked for: merging joins
//     only pieces that touch, and cutting never extends.
//   - A write never loses to a discard acknowledged before it: BeginWrite
//     removes the write's range from queued discards and parks the write
//     while a TRIM in flight overlaps it.
//   - Reads agree across copies: BeginRead parks a read of a range while
//     any copy has a discard pending over it, and serves those TRIMs first
//     (see BeginRead for why this rule).
//   - No caller blocks: Discard, BeginRead and BeginWrite take a member lock
//     for a few list operations and return.
//   - No piece starves: the oldest queued piece is always in the next TRIM,
//     and the I/O gate holds a TRIM back at most MaxDefer.
//   - A watched discard is told trimmed only once every piece of it has
//     been trimmed without error on every member it went to (a piece a
//     write took away before it was issued counts as settled: the write
//     is the caller's to account for), never while one is queued or in
//     flight, and never if one failed, was dropped by Fail or Close, or
//     was not queued because its member was out of service.
//   - A crash loses at most queued TRIMs, never data. A discard promises
//     nothing about what the range reads afterwards (uraid does not
//     advertise discard as zeroing, and write-zeroes is never served by an
//     asynchronous discard), so the old bytes a lost TRIM leaves behind are
//     as valid as zeros. Every byte that an acknowledged write put on a
//     member stays: a queued TRIM overlapping it was cut before the write
//     was issued, and one in flight finished before it.
//   - FLUSH does not wait for the discard queue. A flush makes completed
//     writes durable; a discard has no durable effect to make, and the
//     filesystem may not rely on one. Holding flushes behind slow TRIMs
//     would bring back the very stall this package exists to remove.
//     After a crash, mirrors may differ in ranges that were discarded and
//     not rewritten, which is free space to the filesystem; Drain before a
//     clean stop or a mirror check makes them agree.
//
// # Concurrency
//
// Every Engine method is safe for concurrent use; a Read, Write or Discard
// belongs to one request at a time. Completers, Waiters, OnError and
// OnTrimmed run on engine goroutines (or the caller's) without member
// locks held. Close
// stops every goroutine the engine started and waits for them. A Queue is
// not safe for concurrent use. With URAID_VERIFY=1 every change of a
// member's state checks its invariants and panics on the first violation.
//
// It owns the order of TRIMs, reads and writes on each member and tells the
// region map when a watched discard completes (Config.OnTrimmed); it does not
// know arrays, regions or superblocks: the caller maps requests to member
// extents (package mapping) and decides what a completion means.
package discard
