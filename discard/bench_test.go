package discard

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"uraid/internal/discardtest"
	"uraid/internal/testutil"
	"uraid/mapping"
	"uraid/simssd"
)

// The benchmarks run on simulated SSDs in real time, scaled down from the
// field figures (1 ms isolated TRIM, 100 ms back to back) so that a run
// takes seconds.

func benchDev(b *testing.B, cfg simssd.Config) *simssd.Device {
	b.Helper()
	if cfg.Size == 0 {
		cfg.Size = 1 << 40
	}
	d, err := simssd.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// chanWaiter is a Waiter that reports on a channel.
type chanWaiter chan struct{}

func (c chanWaiter) Resume() { c <- struct{}{} }

// sim is a simulated drive as a member's Issuer.
func sim(d *simssd.Device) Issuer { return discardtest.Blocking(d.Discard, nil) }

// chanDone is a Completer that reports on a channel.
type chanDone chan error

func (c chanDone) Done(err error) { c <- err }

func benchEngine(b *testing.B, cfg Config) *Engine {
	b.Helper()
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkFanOut: a full-width discard over four members whose TRIM takes
// L. Members are trimmed concurrently, so the discard takes about L, where
// trimming them one after another would take 4L. Reports wall/L.
func BenchmarkFanOut(b *testing.B) {
	const lat = 10 * time.Millisecond
	var members []Member
	for range 4 {
		members = append(members, Member{Issuer: sim(benchDev(b, simssd.Config{TrimLatency: lat})), InFlight: InFlightNVMe})
	}
	e := benchEngine(b, Config{Mode: Sync, Members: members})
	done := make(chanDone, 1)
	d := &Discard{Extents: make([]mapping.Extent, 4), Done: done}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		for m := range d.Extents {
			d.Extents[m] = mapping.Extent{Member: m, Offset: int64(i) << 20, Length: 1 << 20}
		}
		e.Discard(d)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(lat), "wall/L")
}

// BenchmarkReadP99UnderTrims: 4 KiB random reads on a raid10-like set of
// two mirrored pairs, where member 0 is a SATA-like drive (TRIM blocks its
// reads, 20 ms per TRIM; reads take 500 µs everywhere) fed a constant
// stream of discards. Reads are
// steered away from members with TRIMs pending; the TRIMs on member 0
// yield to its I/O. Reports the read p99 with and without the TRIM load
// and their ratio; "unsteered" is what an array that reads any mirror
// regardless gets. Wall-clock percentiles suffer from scheduling noise on
// a loaded machine, so the share of reads that queued behind a TRIM, as
// the drive counts them, is reported too.
func BenchmarkReadP99UnderTrims(b *testing.B) {
	const (
		reads   = 2000
		readLat = 500 * time.Microsecond
	)
	run := func(b *testing.B, trims, steer bool) (time.Duration, float64) {
		devs := []*simssd.Device{
			benchDev(b, simssd.Config{TrimLatency: 20 * time.Millisecond, ReadLatency: readLat, Exclusive: true}),
			benchDev(b, simssd.Config{TrimLatency: time.Millisecond, ReadLatency: readLat}),
			benchDev(b, simssd.Config{ReadLatency: readLat}),
			benchDev(b, simssd.Config{ReadLatency: readLat}),
		}
		members := []Member{
			{Issuer: sim(devs[0]), InFlight: InFlightSATA, YieldToIO: steer, MaxQueued: 64},
			{Issuer: sim(devs[1]), InFlight: InFlightNVMe, MaxQueued: 64},
			{Issuer: sim(devs[2])}, {Issuer: sim(devs[3])},
		}
		e := benchEngine(b, Config{Mode: Async, Members: members})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		if trims {
			wg.Go(func() {
				// Discards are acknowledged once queued, or held while member
				// 0's queue is over its bound, as a block device's requests.
				rng := rand.New(rand.NewPCG(1, 2))
				done := make(chanDone, 1)
				d := &Discard{Extents: make([]mapping.Extent, 2), Done: done}
				for {
					select {
					case <-stop:
						return
					default:
					}
					off := rng.Int64N(1<<30) &^ (64<<10 - 1)
					d.Extents[0] = mapping.Extent{Member: 0, Offset: off, Length: 64 << 10}
					d.Extents[1] = mapping.Extent{Member: 1, Offset: off, Length: 64 << 10}
					e.Discard(d)
					<-done
				}
			})
			testutil.WaitFor(b, "a TRIM in flight on member 0", func() bool { return e.Stats()[0].InFlight != 0 })
		}
		rng := rand.New(rand.NewPCG(3, 4))
		buf := make([]byte, 4096)
		lat := make([]time.Duration, 0, reads)
		resumed := make(chanWaiter, 1)
		r := &Read{Ticket: Ticket{Waiter: resumed}}
		for i := range reads {
			pair := rng.IntN(2)
			m := rng.IntN(2)
			off := rng.Int64N(1<<30) &^ 4095
			r.Reset()
			if steer {
				// The array's way: the engine picks the copy.
				r.Add(mapping.Extent{Member: 2 * pair, Offset: off, Length: 4096}, mapping.Extent{Member: 2*pair + 1, Offset: off, Length: 4096})
			} else {
				// md's way: any mirror, regardless of its TRIMs.
				r.Add(mapping.Extent{Member: 2*pair + m, Offset: off, Length: 4096})
			}
			start := time.Now()
			for !e.BeginRead(r, uint32(i)) {
				<-resumed
			}
			m = r.Pick(0).Member
			if _, err := devs[m].ReadAt(buf, off); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			e.EndRead(r, 0)
		}
		close(stop)
		wg.Wait()
		slices.Sort(lat)
		return lat[len(lat)*99/100], 100 * float64(devs[0].Counters().Stalled) / reads
	}
	for range b.N {
		idle, _ := run(b, false, true)
		loaded, stalled := run(b, true, true)
		unsteered, unsteeredStalled := run(b, true, false)
		b.ReportMetric(float64(idle.Microseconds()), "p99-idle-µs")
		b.ReportMetric(float64(loaded.Microseconds()), "p99-trims-µs")
		b.ReportMetric(float64(unsteered.Microseconds()), "p99-unsteered-µs")
		b.ReportMetric(float64(loaded)/float64(idle), "ratio")
		b.ReportMetric(stalled, "stalled-%")
		b.ReportMetric(unsteeredStalled, "unsteered-stalled-%")
	}
}

// BenchmarkBackToBack: 1000 small discards to one drive that charges 5 ms
// for a TRIM starting within 1 ms of the previous one and 200 µs otherwise.
// "naive" issues each as it comes and waits for it, as a filesystem
// waiting on every discard does; "engine" queues them asynchronously with a
// 1 ms gap between TRIMs, merging what touches meanwhile. Half of the
// discards touch the previous one, as when neighbouring files are deleted.
func BenchmarkBackToBack(b *testing.B) {
	const n = 1000
	cfg := simssd.Config{TrimLatency: 200 * time.Microsecond, BackToBackLatency: 5 * time.Millisecond,
		BackToBackWindow: time.Millisecond}
	offs := make([]int64, n)
	rng := rand.New(rand.NewPCG(5, 6))
	var off int64
	for i := range offs {
		offs[i] = off
		off += 4096
		if rng.IntN(2) == 0 {
			off += 4096 * (1 + rng.Int64N(8))
		}
	}
	b.Run("naive", func(b *testing.B) {
		var trims int64
		for range b.N {
			d := benchDev(b, cfg)
			for _, o := range offs {
				if err := d.Discard(o, 4096); err != nil {
					b.Fatal(err)
				}
			}
			trims += d.Counters().Trims
		}
		b.ReportMetric(float64(trims)/float64(b.N), "trims/op")
	})
	b.Run("engine", func(b *testing.B) {
		var trims int64
		var ack atomic.Int64
		for range b.N {
			d := benchDev(b, cfg)
			e := benchEngine(b, Config{Mode: Async, Members: []Member{{Issuer: sim(d), MinGap: cfg.BackToBackWindow}}})
			done := make(chanDone, 1)
			dc := &Discard{Extents: make([]mapping.Extent, 1), Done: done}
			start := time.Now()
			for _, o := range offs {
				dc.Extents[0] = mapping.Extent{Offset: o, Length: 4096}
				e.Discard(dc)
				<-done
			}
			ack.Add(int64(time.Since(start)))
			e.Drain()
			trims += d.Counters().Trims
			e.Close()
		}
		b.ReportMetric(float64(trims)/float64(b.N), "trims/op")
		b.ReportMetric(float64(ack.Load())/float64(b.N)/1e6, "ack-ms/op")
	})
}

// BenchmarkOneSlowMember: discards over four members, one of which takes
// ten times as long per TRIM (a SATA drive among NVMe ones). In Sync mode
// the filesystem waits for the slow one, as md makes it; in Async mode it
// waits only for queueing. Reports the mean acknowledgement latency, and the
// wall time until every TRIM is done.
func BenchmarkOneSlowMember(b *testing.B) {
	const (
		fast     = 2 * time.Millisecond
		slow     = 20 * time.Millisecond
		discards = 20
	)
	for _, mode := range []Mode{Sync, Async} {
		b.Run(mode.String(), func(b *testing.B) {
			var ack, wall time.Duration
			for range b.N {
				var members []Member
				for m := range 4 {
					lat := fast
					if m == 0 {
						lat = slow
					}
					members = append(members, Member{Issuer: sim(benchDev(b, simssd.Config{TrimLatency: lat})), InFlight: InFlightSATA})
				}
				e := benchEngine(b, Config{Mode: mode, Members: members})
				done := make(chanDone, 1)
				d := &Discard{Extents: make([]mapping.Extent, 4), Done: done}
				start := time.Now()
				for i := range discards {
					for m := range d.Extents {
						d.Extents[m] = mapping.Extent{Member: m, Offset: int64(i) << 21, Length: 1 << 20}
					}
					t0 := time.Now()
					e.Discard(d)
					if err := <-done; err != nil {
						b.Fatal(err)
					}
					ack += time.Since(t0)
				}
				e.Drain()
				wall += time.Since(start)
				e.Close()
			}
			b.ReportMetric(float64(ack.Microseconds())/float64(b.N*discards), "ack-µs")
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms")
		})
	}
}

// BenchmarkAdmit is what the engine costs a read and a write of a mirror
// pair with no discard pending: BeginRead/EndRead and BeginWrite/EndWrite,
// member 0 an ordinary drive or one whose TRIMs stall I/O (YieldToIO, as
// --trim-exclusive makes it). The two should cost the same: the I/O gate of
// an exclusive member is two atomic adds while it has no TRIM to do.
func BenchmarkAdmit(b *testing.B) {
	for _, yield := range []bool{false, true} {
		name := "plain"
		if yield {
			name = "exclusive"
		}
		b.Run(name, func(b *testing.B) {
			e := benchEngine(b, Config{Mode: Async, Members: []Member{
				{Issuer: sim(benchDev(b, simssd.Config{})), InFlight: InFlightSATA, YieldToIO: yield},
				{Issuer: sim(benchDev(b, simssd.Config{}))},
			}})
			r := &Read{}
			w := &Write{Extents: make([]mapping.Extent, 2)}
			picks := [2]int{}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				off := int64(i%1024) << 12
				r.Reset()
				r.Add(mapping.Extent{Member: 0, Offset: off, Length: 4096}, mapping.Extent{Member: 1, Offset: off, Length: 4096})
				if !e.BeginRead(r, uint32(i)) {
					b.Fatal("a read parked with no discard pending")
				}
				picks[r.Pick(0).Member]++
				e.EndRead(r, 0)
				w.Extents[0] = mapping.Extent{Member: 0, Offset: off, Length: 4096}
				w.Extents[1] = mapping.Extent{Member: 1, Offset: off, Length: 4096}
				if !e.BeginWrite(w) {
					b.Fatal("a write parked with no discard pending")
				}
				e.EndWrite(w, 0)
				e.EndWrite(w, 1)
			}
			// Reads alternate between the copies when both are idle.
			b.ReportMetric(100*float64(picks[0])/float64(max(picks[0]+picks[1], 1)), "%reads-member0")
		})
	}
}
