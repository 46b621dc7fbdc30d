// Package latency counts durations in fixed buckets, fine enough for a quantile within an eighth
// and holding every bound uraid exports as a Prometheus histogram, with atomic counters:
// recording is a binary search and a few adds, with no lock and no allocation, so that a ublk
// queue goroutine can time every request. A Histogram is safe for concurrent use;
// a Snapshot read while others record is not atomic as a whole (a sample may be in the count and
// not yet in the sum), which a scrape tolerates.
//
// It only counts: it reads no clock but the monotonic one of Now, exports nothing itself (the
// daemon's metrics read Snapshots), and knows nothing of what it times.
package latency
