// Package learn estimates, from what a member's TRIMs and I/O were measured
// to cost, how the member should be trimmed: whether its TRIMs stall its
// reads and writes (exclusive), how many TRIMs it runs at once with profit
// (in-flight limit), and how long it must rest between TRIMs to avoid a
// back-to-back penalty (gap).
//
// A Learner is a pure function of the observations it is given: it has no
// clock (times come in the observations), no goroutine and no syscall, and
// it allocates nothing after it is made, so the data path can feed it. It is
// not safe for concurrent use: the discard engine feeds each member's
// Learner under that member's lock.
//
// # Guarantees
//
//   - Noise never flips a decision: every decision has an enter and a
//     leave threshold apart from one another, a minimum number of samples,
//     and a run of agreeing evaluations before it changes (see the
//     constants, and docs/discard.md for the figures and why).
//   - Statistics decay (exponentially weighted, on log latency, so one
//     outlier moves them little), so a member that changes is relearned.
//   - What a decision stops being observed (back-to-back TRIMs once a gap is
//     kept, concurrent TRIMs once the limit is 1) is probed: one TRIM in
//     every ProbeEvery runs as the decision forbids, so that a member that
//     stops misbehaving is found out. A probe never delays a read or write:
//     it only changes when and how many TRIMs start.
//   - Decisions stay within the prior: the in-flight limit never exceeds the
//     limit the member was configured with (a SATA drive that aborts a second
//     TRIM is never sent one).
package learn
