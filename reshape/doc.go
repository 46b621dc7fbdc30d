// Package reshape plans the online reshape of a raid0 or raid10 (n2, o2)
// array from N members to M > N, with the same chunk and data size: where
// every byte is while the reshape runs, and the steps that move it, crash-safe
// and moving only live data. It is the pure half; the array carries the steps
// out (docs/design.md, "Reshape (planned)").
//
// The reshape goes forward from array byte 0. A persisted cursor C, a
// multiple of Unit (whole rows of the new layout), says: array bytes below C
// are in the new layout, bytes at or above it in the old one. A step moves a
// window [C, C+W); its I/O waits meanwhile (Route says ZoneWait), but for
// reads in a plain Copy, which its old places still serve (Step.ReadsOld).
//
// Guarantees:
//   - Route places every array byte at exactly one place per copy, and no two
//     bytes share a member byte, for every cursor and window: below C by the
//     new map, at or past C+W by the old one.
//   - The safety rule: a step writes or discards only member bytes that hold,
//     in the old layout, nothing or an array byte below the persisted cursor
//     (durable in its new home), or, for a step whose window a persisted
//     backup holds, a byte of that window. Where no window is safe (the first
//     rows, the critical section), the window goes to a backup area in the
//     new members' tail first (Kind BackupCopy).
//   - Next is a function of the persisted State and the liveness alone: a
//     step cut anywhere is planned again, the same, from what was persisted.
//   - Dead bytes (Live says so) are not copied: their new places are
//     discarded, under the same rule. Only a backup holds its window whole,
//     dead bytes too, so that what it holds does not hang on the liveness.
//   - Input from disk (State) or from the array (Live) that breaks its
//     contract yields an error wrapping a sentinel, never a panic.
//
// The package is pure: no goroutines, no I/O, no clocks. A Reshape is
// immutable after New and safe for concurrent use; Next and Route allocate
// nothing once the Step passed in has room.
package reshape
