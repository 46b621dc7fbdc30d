package bench

import (
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"uraid/mapping"
)

// Scenario is one benchmark: it measures every system it is about.
type Scenario struct {
	Name string // "a-blkdiscard"
	Desc string
	Run  func(r *Runner) error
}

// Scenarios lists the suite in order.
func Scenarios() []Scenario {
	return []Scenario{
		{"a-blkdiscard", "full-device BLKDISCARD wall time", (*Runner).fullDiscard},
		{"b-churn", "ext4 small-file churn: files/s with -o discard and nodiscard", (*Runner).churn},
		{"c-fstrim", "FITRIM wall time on a fragmented ext4", (*Runner).fstrim},
		{"d-read-under-discard", "4 KiB random-read p99 with and without a discard stream", (*Runner).readUnderDiscard},
		{"e-io", "random IOPS at QD32, 1 MiB sequential throughput and QD1 read latency on kernel-native members (brd)", (*Runner).rawIO},
		{"f-slow-member", "RAID10 with one SATA-like member: fstrim and I/O latency while it runs", (*Runner).slowMember},
		{"g-rebuild", "replacing a RAID10 member under a 20%-full ext4 on kernel-native members (brd): time and bytes written to the new one", (*Runner).rebuild},
		{"h-back-to-back", "RAID10 with one member that charges a back-to-back TRIM penalty: fstrim until every TRIM is done, learned against hand-set --trim-gap values", (*Runner).backToBack},
		{"i-flood", "RAID10 with one NBD member that runs one command at a time, 50 ms per TRIM, one ublk queue: a QD1 reader beside a 4 KiB discard flood at QD32, learned against --trim-exclusive", (*Runner).flood},
		{"j-cost", "per 4 KiB request: the server's CPU time, context switches, io_uring_enter calls and Go runtime counters, uraid beside the reference C server, on memory-backed null_blk members", (*Runner).cost},
		{"k-reshape", "reshaping a RAID10 near-2 of 4 members to 6 under a 20%-full ext4 on kernel-native members (brd): both online with the filesystem mounted (md's --grow, uraid's grow --add), time, bytes read and written, and read p99 during the reshape against before", (*Runner).reshape},
	}
}

// scale picks the full or the quick figure.
func (r *Runner) scale(full, quick int) int {
	if r.cfg.Quick {
		return quick
	}
	return full
}

// levels are the RAID levels measured: RAID10 alone in a quick run, whose
// every array costs seconds to set up under emulation.
func (r *Runner) levels() []mapping.Level {
	if r.cfg.Quick {
		return []mapping.Level{mapping.RAID10}
	}
	return []mapping.Level{mapping.RAID0, mapping.RAID10}
}

func (r *Runner) dur(full, quick time.Duration) time.Duration {
	if r.cfg.Quick {
		return quick
	}
	return full
}

// (a) Full-device discard: how long the array takes to discard everything.
func (r *Runner) fullDiscard() error {
	for _, sys := range Systems(r.levels(), r.cfg.Quick) {
		err := r.withArray(sys, same(r.cfg.Drive, 4), func(a *array) error {
			for rep := range r.cfg.Reps {
				if err := r.drain(a); err != nil {
					return err
				}
				took, err := blkdiscard(a.dev)
				if err != nil {
					return err
				}
				r.logf("a %s rep %d: %v", sys.Name, rep, took)
				r.add(Result{Scenario: "a-blkdiscard", Case: "full", System: sys.Name, Metric: "wall", Unit: "ms", Better: "lower"},
					ms(took))
			}
			return r.drain(a)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// (b) Small-file churn: create files, sync, delete them, sync; repeat.
// With -o discard every sync commits the freed blocks as discards.
func (r *Runner) churn() error {
	files, rounds := r.scale(300, 100), 2
	for _, sys := range Systems(r.levels(), r.cfg.Quick) {
		err := r.withArray(sys, same(r.cfg.Drive, 4), func(a *array) error {
			if err := mkfs(a.dev); err != nil {
				return err
			}
			for rep := range r.cfg.Reps {
				for _, disc := range []bool{true, false} {
					if err := r.drain(a); err != nil {
						return err
					}
					rate, err := churnOnce(a.dev, disc, files, rounds)
					if err != nil {
						return err
					}
					c := map[bool]string{true: "discard", false: "nodiscard"}[disc]
					r.logf("b %s %s rep %d: %.0f files/s", sys.Name, c, rep, rate)
					r.add(Result{Scenario: "b-churn", Case: c, System: sys.Name, Metric: "files_per_s", Unit: "files/s", Better: "higher"}, rate)
				}
			}
			return r.drain(a)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func churnOnce(dev string, disc bool, files, rounds int) (rate float64, err error) {
	if err := mount(dev, disc); err != nil {
		return 0, err
	}
	defer func() {
		if uerr := umount(); uerr != nil && err == nil {
			err = uerr
		}
	}()
	dir := filepath.Join(mountPoint, "churn")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	unix.Sync()
	start := time.Now()
	for range rounds {
		if err := writeFiles(dir, "c", files, 4096); err != nil {
			return 0, err
		}
		unix.Sync()
		if err := removeFiles(dir, "c", files, 1); err != nil {
			return 0, err
		}
		unix.Sync()
	}
	return float64(files*rounds) / time.Since(start).Seconds(), nil
}

// (c) fstrim of a fragmented filesystem.
func (r *Runner) fstrim() error {
	n, size := r.scale(600, 120), 64<<10
	for _, sys := range Systems(r.levels(), r.cfg.Quick) {
		err := r.withArray(sys, same(r.cfg.Drive, 4), func(a *array) error {
			if err := mkfs(a.dev); err != nil {
				return err
			}
			if err := mount(a.dev, false); err != nil {
				return err
			}
			if err := fragment("frag", n, size); err != nil {
				umount()
				return err
			}
			for rep := range r.cfg.Reps {
				if err := r.remount(a); err != nil {
					return err
				}
				took, err := fitrim()
				if err != nil {
					umount()
					return err
				}
				r.logf("c %s rep %d: %v", sys.Name, rep, took)
				r.add(Result{Scenario: "c-fstrim", Case: "fragmented", System: sys.Name, Metric: "wall", Unit: "ms", Better: "lower"}, ms(took))
			}
			if err := umount(); err != nil {
				return err
			}
			return r.drain(a)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ramp is the fio option that runs a job for two seconds before counting it.
// The first one to two seconds of I/O on a freshly started uraid array are
// slower (read p99 22-50 ms in the first second, 7 ms from the third on, in
// the guest): a one-off of starting the daemon, not the steady state the
// scenarios compare. md's arrays get the same ramp.
const ramp = "ramp_time=2"

// (d) Random-read latency alone and beside a stream of 20 1 MiB discards a
// second in the other half of the device.
func (r *Runner) readUnderDiscard() error {
	rt := r.dur(6*time.Second, 3*time.Second)
	read := []string{"rw=randread", "bs=4k", "iodepth=4", "offset=0", "size=50%", secs(rt), "time_based", ramp}
	// A fixed rate, so that an array that acknowledges discards sooner is
	// not handed more of them.
	trim := []string{"rw=randtrim", "bs=1M", "iodepth=1", "offset=50%", "size=50%", "rate_iops=,,20", secs(rt), "time_based", ramp}
	// Reads alone, then reads beside the discard stream.
	jobs := []job{{"alone", read}, {"with-discards", append([]string{"stonewall"}, read...)}, {"trim", trim}}
	for _, sys := range Systems(r.levels(), r.cfg.Quick) {
		err := r.withArray(sys, same(r.cfg.Drive, 4), func(a *array) error {
			for rep := range r.cfg.Reps {
				if err := r.drain(a); err != nil {
					return err
				}
				ctx, cancel := fioCtx(3 * rt)
				res, err := fio(ctx, []string{"filename=" + a.dev}, jobs...)
				cancel()
				if err != nil {
					return err
				}
				for _, c := range []string{"alone", "with-discards"} {
					p99 := res[c].Read.p99()
					r.logf("d %s %s rep %d: read p99 %.0f us", sys.Name, c, rep, p99)
					r.add(Result{Scenario: "d-read-under-discard", Case: c, System: sys.Name, Metric: "read_p99", Unit: "us", Better: "lower"}, p99)
				}
				r.logf("d %s rep %d: %d discards", sys.Name, rep, res["trim"].Trim.IOs)
				r.add(Result{Scenario: "d-read-under-discard", Case: "with-discards", System: sys.Name, Metric: "discards", Unit: "count", Better: "higher"},
					float64(res["trim"].Trim.IOs))
			}
			return r.drain(a)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SlowDrive is scenario (f)'s slow member: SATA-like, 100 ms per TRIM.
var SlowDrive = Drive{TrimLatency: 100 * time.Millisecond, Exclusive: true}

// (f) RAID10 with one SATA-like member: fstrim wall time of a fragmented
// ext4, and 4 KiB random read/write latency and IOPS in a fixed window that
// starts with the fstrim, against the same window without it. uraid runs
// twice: told that member 0 is exclusive (--trim-exclusive, hand-set) and
// with no TRIM flag (-learned), learning it. Each repetition builds every
// array afresh, in turn (md, hand-set, learned, md, ...): the learned array
// starts knowing nothing every time, and a drift of the host's speed during
// the run falls on every system alike.
func (r *Runner) slowMember() error {
	// md's fstrim runs 100 ms per TRIM on the slow member: fewer holes keep
	// a quick run short.
	n, size := r.scale(120, 20), 256<<10
	rt := r.dur(8*time.Second, 4*time.Second)
	drives := append([]Drive{SlowDrive}, same(Fast, 3)...)
	systems := append(Systems([]mapping.Level{mapping.RAID10}, r.cfg.Quick), learnedSystem(mapping.RAID10, "async"))
	return r.interleave("f", systems, drives, func(sys System, rep int, a *array) error {
		if err := mkfs(a.dev); err != nil {
			return err
		}
		if err := mount(a.dev, false); err != nil {
			return err
		}
		defer umount()
		data := filepath.Join(mountPoint, "fio.data")
		if err := preallocate(data, 32<<20); err != nil {
			return err
		}
		if err := fragment("frag", n, size); err != nil {
			return err
		}
		opts := []string{"filename=" + data, "size=32M", "rw=randrw", "rwmixread=50", "bs=4k", "iodepth=8", secs(rt), "time_based"}
		for _, during := range []bool{false, true} {
			if err := r.remount(a); err != nil {
				return err
			}
			c := "idle"
			if during {
				c = "during-fstrim"
			}
			type trimRes struct {
				took time.Duration
				err  error
			}
			trimDone := make(chan trimRes, 1)
			if during {
				go func() {
					// Let fio start its I/O first.
					time.Sleep(500 * time.Millisecond)
					took, err := fitrim()
					trimDone <- trimRes{took, err}
				}()
			}
			before, err := statsOf(a.members)
			if err != nil {
				return err
			}
			ctx, cancel := fioCtx(rt)
			res, err := fio(ctx, nil, job{"io", opts})
			cancel()
			after, serr := statsOf(a.members)
			if serr != nil {
				return serr
			}
			if during {
				tr := <-trimDone
				if tr.err != nil {
					return tr.err
				}
				r.logf("f %s rep %d: fstrim %v", sys.Name, rep, tr.took)
				r.add(Result{Scenario: "f-slow-member", Case: "fstrim", System: sys.Name, Metric: "wall", Unit: "ms", Better: "lower"}, ms(tr.took))
			}
			if err != nil {
				return err
			}
			io := res["io"]
			r.logf("f %s %s rep %d: read p99 %.0f us %.0f iops, write p99 %.0f us %.0f iops", sys.Name, c, rep,
				io.Read.p99(), io.Read.IOPS, io.Write.p99(), io.Write.IOPS)
			// Which copy served the reads: member 0 (the slow one) and
			// its mirror, member 1, hold the same chunks.
			var reads, writes []int64
			for i := range after {
				d := after[i].sub(before[i])
				reads, writes = append(reads, d.reads), append(writes, d.writes)
			}
			r.logf("f %s %s rep %d: member reads %v, writes %v", sys.Name, c, rep, reads, writes)
			if pair := reads[0] + reads[1]; pair > 0 {
				r.add(Result{Scenario: "f-slow-member", Case: c, System: sys.Name, Metric: "slow_read_share", Unit: "%", Better: "lower"},
					100*float64(reads[0])/float64(pair))
			}
			for _, m := range []struct {
				metric, unit, better string
				v                    float64
			}{
				{"read_p99", "us", "lower", io.Read.p99()},
				{"write_p99", "us", "lower", io.Write.p99()},
				{"read_iops", "iops", "higher", io.Read.IOPS},
				{"write_iops", "iops", "higher", io.Write.IOPS},
			} {
				r.add(Result{Scenario: "f-slow-member", Case: c, System: sys.Name, Metric: m.metric, Unit: m.unit, Better: m.better}, m.v)
			}
		}
		return nil
	})
}

// remount unmounts a's filesystem, waits for uraid's background TRIMs and
// mounts it again (nodiscard): each repetition starts with no TRIM of the
// last one running, and a fresh mount forgets which groups ext4 trimmed.
func (r *Runner) remount(a *array) error {
	if err := umount(); err != nil {
		return err
	}
	if err := r.drain(a); err != nil {
		return err
	}
	return mount(a.dev, false)
}

// preallocate writes a file of size bytes so that fio finds it laid out.
func preallocate(path string, size int) error {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*13 + 5)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for off := 0; off < size; off += len(buf) {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
