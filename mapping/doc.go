// Package mapping is the layout planner of uraid: it says where the bytes of
// an array live on its members.
//
// A Map is built from a Geometry (level, raid10 layout, chunk size and member
// sizes) and translates a logical byte range of the array into byte ranges of
// the members, in member data space: offset 0 is the first data byte of a
// member, and the caller adds the on-disk data offset. It plans writes (every
// copy, split at chunk boundaries), reads (per chunk, every copy that holds
// it, so the caller can choose one and fail over) and discards (the minimal
// set of member ranges, rounded inward to each member's discard granularity).
//
// Guarantees:
//   - A discard never covers a member byte that does not back the requested
//     range, and the ranges it returns for one member are disjoint and never
//     adjacent. Planning a discard costs O(members) however many chunks
//     it crosses.
//   - Requests are checked before anything is planned: offsets and lengths
//     must be whole 512-byte sectors, non-empty and inside the array. Bad
//     input, from the command line, the disk or the kernel, yields an error
//     wrapping one of the sentinel errors, never a panic.
//   - Write, Read and Discard append to the slice passed in and allocate
//     nothing when it has room (see MaxWriteExtents, MaxReadPieces and
//     MaxDiscardExtents); on error they return the slice unchanged.
//
// The package is pure: no goroutines, no I/O, no clocks. A Map is immutable
// after New and safe for concurrent use by any number of goroutines.
package mapping
