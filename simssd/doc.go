// Package simssd is a simulated SSD for testing and benchmarking the discard
// engine without hardware: RAM-backed data, a TRIM that takes time, the
// back-to-back penalty some drives charge when TRIMs follow each other
// closely, one TRIM at a time, and optionally reads and writes that wait
// while a TRIM runs, as on SATA drives where TRIM is a non-queued command.
//
// Tests need not race its latencies against the machine's speed: a
// VirtualClock makes every latency free, and the TRIM gate (Device.Hold,
// Release, ReleaseN, WaitHeld) keeps TRIMs from going on for exactly as long
// as a test looks at what happens while they are pending.
//
// What it guarantees: discarded bytes read as zeros once Discard returns, or
// with Config.TrimGarbage as the bytes Garbage gives for the device's seed;
// every other byte reads as last written (zeros if never written). TRIM
// latency is a function of the configuration, the clock and the seed only,
// so a run with a VirtualClock is deterministic; time spent held at the gate
// is no part of it. Held TRIMs leave the gate in the order they reached it.
// It can record every TRIM it receives so tests can check that nothing
// outside a request was trimmed.
//
// A Device is safe for concurrent use: TRIMs are serialized, reads and
// writes of distinct bytes run in parallel, and the gate may be worked from
// any goroutine.
package simssd
