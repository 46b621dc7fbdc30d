package bench

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"uraid/mapping"
	"uraid/ublk"
)

// Kernel-native members for scenario (e): brd RAM disks, which the guest
// loads (bench/guest.sh). Real NVMe members are kernel devices, so this is
// the comparison users make; simssd members are ublk servers themselves and
// would charge md a userspace round trip too.
var nativeMembers = []string{"/dev/ram0", "/dev/ram1", "/dev/ram2", "/dev/ram3"}

// ErrBusy means the guest's CPU was not its own during a measurement:
// another guest or process competed for the host, and the figures would
// say more about that than about the arrays.
var ErrBusy = errors.New("bench: the guest's CPU speed moved between repetitions (another guest competing for the host?): rerun on a quiet machine, or pass -allow-busy to keep such figures")

// minNativeReps is the fewest repetitions scenario (e) measures, whatever
// -reps says: fewer give no spread worth the name.
func (r *Runner) minNativeReps() int { return r.scale(5, 3) }

// nativeSystems are md and uraid for each level; where the kernel lends
// uraid the request's pages, uraid forced to copy as well (the gap between
// the two is what zero copy buys); and where it has the batch I/O commands,
// uraid with them (what batching buys).
func (r *Runner) nativeSystems(level mapping.Level) []System {
	s := []System{mdSystem(level), uraidSystem(level, "sync")}
	f, err := ublk.KernelFeatures()
	if err == nil && (f.Has(ublk.FeatureAutoBufReg) || f.Has(ublk.FeatureZeroCopy)) {
		c := uraidSystem(level, "sync")
		c.Name, c.ZeroCopy = "uraid-"+level.String()+"-copy", "off"
		s = append(s, c)
	}
	if err == nil && f.Has(ublk.FeatureBatchIO) {
		c := uraidSystem(level, "sync")
		c.Name, c.BatchIO = "uraid-"+level.String()+"-batch", "auto"
		s = append(s, c)
	}
	return s
}

// nativeTest is one fio job of scenario (e) and the figure it yields.
type nativeTest struct {
	name, metric, unit, better string
	opts                       []string
	write                      bool
	value                      func(fioSide) float64
}

func iops(s fioSide) float64 { return s.IOPS }
func mibs(s fioSide) float64 { return s.BW / 1024 }

// latP50 is the median total latency (submission to completion) in
// microseconds; it needs fio's lat_percentiles.
func latP50(s fioSide) float64 { return s.Lat.Percentile["50.000000"] / 1000 }

var nativeTests = []nativeTest{
	{"randread-4k-qd32", "iops", "iops", "higher", []string{"rw=randread", "bs=4k", "iodepth=32"}, false, iops},
	{"randwrite-4k-qd32", "iops", "iops", "higher", []string{"rw=randwrite", "bs=4k", "iodepth=32"}, true, iops},
	{"read-1m", "throughput", "MiB/s", "higher", []string{"rw=read", "bs=1M", "iodepth=8"}, false, mibs},
	{"write-1m", "throughput", "MiB/s", "higher", []string{"rw=write", "bs=1M", "iodepth=8"}, true, mibs},
	{"randread-4k-qd1", "lat_p50", "us", "lower", []string{"rw=randread", "bs=4k", "iodepth=1", "lat_percentiles=1"}, false, latP50},
}

// (e) The I/O path alone on kernel-native members: random 4 KiB IOPS at
// QD32, 1 MiB sequential throughput and 4 KiB QD1 read latency, md and
// uraid over the same four RAM disks. Every repetition builds each system
// in turn, in an order that rotates, so that drift of the machine falls on
// all of them alike; a first repetition warms up and is not kept. Before
// each repetition a fixed CPU workload is timed: when it runs much slower
// than the fastest seen, something else has the host and the repetition is
// measured again (ErrBusy after three tries; a quick run or -allow-busy
// keeps the figures and Busy says so).
func (r *Runner) rawIO() error {
	for _, m := range nativeMembers {
		if _, err := os.Stat(m); err != nil {
			return fmt.Errorf("kernel-native members: %w (load brd: tests/vm/vm modprobe brd rd_nr=4 rd_size=262144)", err)
		}
	}
	// brd allocates a page on its first write: fill the disks once, so
	// that no system's writes pay for the allocation and another's not.
	for _, m := range nativeMembers {
		if err := fill(m); err != nil {
			return err
		}
	}
	rt := r.dur(4*time.Second, 2*time.Second)
	var jobs []job
	for _, t := range nativeTests {
		jobs = append(jobs, job{t.name, append([]string{"stonewall"}, t.opts...)})
	}
	reps := max(r.cfg.Reps, r.minNativeReps())
	for _, level := range r.levels() {
		systems := r.nativeSystems(level)
		var fastest time.Duration
		for rep := -1; rep < reps; rep++ {
			for try := 0; ; try++ {
				spin := calibrate()
				if fastest == 0 || spin < fastest {
					fastest = spin
				}
				if spin <= fastest*13/10 {
					break
				}
				r.logf("e rep %d: guest CPU %.0f%% slower than its fastest (%v against %v): busy", rep,
					100*(float64(spin)/float64(fastest)-1), spin, fastest)
				if try == 2 {
					// A quick run is a smoke test (CI runs it): it
					// keeps going and says so.
					if !r.cfg.AllowBusy && !r.cfg.Quick {
						return ErrBusy
					}
					r.busy = true
					break
				}
				time.Sleep(5 * time.Second)
			}
			order := slices.Clone(systems)
			k := (rep + 1) % len(order)
			order = append(order[k:], order[:k]...)
			for _, sys := range order {
				if err := r.nativeOnce(sys, rep, rt, jobs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nativeOnce builds sys over the native members, runs the jobs once and
// records their figures unless rep is the warm-up (-1).
func (r *Runner) nativeOnce(sys System, rep int, rt time.Duration, jobs []job) error {
	for _, m := range nativeMembers {
		if err := zeroHead(m, 2<<20); err != nil {
			return err
		}
	}
	a, err := r.create(sys, nativeMembers, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", sys.Name, err)
	}
	ctx, cancel := fioCtx(time.Duration(len(jobs)) * (rt + 2*time.Second))
	res, err := fio(ctx, []string{"filename=" + a.dev, "size=256M", secs(rt), "time_based", ramp}, jobs...)
	cancel()
	if serr := r.stop(a); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", sys.Name, err)
	}
	for _, t := range nativeTests {
		side := res[t.name].Read
		if t.write {
			side = res[t.name].Write
		}
		v := t.value(side)
		if rep < 0 {
			r.logf("e %s %s warm-up: %.1f %s", sys.Name, t.name, v, t.unit)
			continue
		}
		r.logf("e %s %s rep %d: %.1f %s", sys.Name, t.name, rep, v, t.unit)
		r.add(Result{Scenario: "e-io", Case: t.name, System: sys.Name, Metric: t.metric, Unit: t.unit, Better: t.better}, v)
	}
	return nil
}

// zeroHead clears the first n bytes of dev, where md and uraid keep their
// superblocks, so that each array is created on members that hold neither.
func zeroHead(dev string, n int) error {
	f, err := os.OpenFile(dev, os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	defer unix.Munmap(buf)
	if _, err := f.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("clear %s: %w", dev, err)
	}
	return nil
}

// fill writes the whole of dev once.
func fill(dev string) error { return fillN(dev, -1) }

// calibrate times a fixed piece of CPU work: in a guest whose host is
// otherwise idle it takes the same time every run. It keeps the fastest of
// several short spins spread over half a second: the guest's own leftovers
// of the last measurement (a daemon exiting, writeback, the driver's work
// items) slow one spin or two, while another guest competing for the host's
// CPUs slows them all.
func calibrate() time.Duration {
	var best time.Duration
	for i := range 7 {
		if i > 0 {
			time.Sleep(80 * time.Millisecond)
		}
		start := time.Now()
		x := uint64(1)
		for range 4_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x)
		if d := time.Since(start); best == 0 || d < best {
			best = d
		}
	}
	return best
}

// sink keeps calibrate's work from being optimised away.
var sink atomic.Uint64
