// Package simssd is a simulated SSD for testing and benchmarking the discard
// engine without hardware: RAM-backed data, a TRIM that takes time, the
// back-to-back penalty some drives charge when TRIMs follow each other
// closely, one TRIM at a time, and optionally reads and writes that wait
// while a TRIM runs, as on SATA drives where TRIM is a non-queued command.
//
// What it guarantees: discarded bytes read as zeros once Discard returns;
// every other byte reads as last written (zeros if never written). TRIM
// latency is a function of the configuration, the clock and the seed only,
// so a run with a VirtualClock is deterministic. It can record every TRIM it
// receives so tests can check that nothing outside a request was trimmed.
//
// A Device is safe for concurrent use: TRIMs are serialized, reads and
// writes of distinct bytes run in parallel.
package simssd
