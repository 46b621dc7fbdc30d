// Package simblk serves a simulated SSD (package simssd) as a ublk block
// device, so that the kernel's md and uraid can be built over the very same
// simulated members and compared side by side.
//
// The device advertises discard with a 4 KiB granularity. A SATA-like
// (Exclusive) drive stays non-rotational, as a SATA SSD is: md balances reads
// over it like over any SSD, and uraid learns what it is only when told
// (uraid --trim-exclusive), as with a real SATA SSD behind a bridge. The
// rotational attribute is a separate option.
//
// What it guarantees: every request is answered with what the simulated
// drive did, and the queue goroutines never wait for a TRIM. Reads and writes
// of a drive that is not Exclusive are memory copies and are done inline;
// TRIMs, and all I/O of an Exclusive drive, may wait and are done on their
// own goroutines, which is where their latency is spent.
//
// A Target is safe for concurrent use by all queues of one device.
package simblk
