package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"uraid/mapping"
)

// interleave runs one repetition of measure on a fresh array of each system
// in turn, then the next repetition: learned, hand-set, learned, ... A
// repetition on a fresh array is what a new user's first fstrim or flood
// meets, and a drift of the host's speed falls on every system alike. After
// each repetition it records what every uraid member's lane learned
// (recordLearned) and waits for its TRIMs.
func (r *Runner) interleave(letter string, systems []System, drives []Drive, measure func(sys System, rep int, a *array) error) error {
	for rep := range r.cfg.Reps {
		for _, sys := range systems {
			err := r.withArray(sys, drives, func(a *array) error {
				if err := measure(sys, rep, a); err != nil {
					return err
				}
				if err := r.recordLearned(letter, sys, rep, a); err != nil {
					return err
				}
				return r.drain(a)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// recordLearned logs each member's trim_learned (status JSON) after a
// repetition and keeps its decision as results of case "learned-mN":
// exclusive (1 or 0), inflight and gap_ms, so that the report shows what
// the lanes decided beside what they achieved. A hand-set system's lanes
// learn too (the flag wins): its figures show what a flag overrode.
func (r *Runner) recordLearned(letter string, sys System, rep int, a *array) error {
	if sys.MD {
		return nil
	}
	st, err := r.status(a)
	if err != nil {
		return err
	}
	scenario := ""
	for _, s := range Scenarios() {
		if strings.HasPrefix(s.Name, letter+"-") {
			scenario = s.Name
		}
	}
	for i, m := range st.Members {
		if m.TrimLearned == nil {
			continue
		}
		b, err := json.Marshal(m.TrimLearned)
		if err != nil {
			return err
		}
		r.logf("%s %s rep %d: member %d (%s) trim_learned %s", letter, sys.Name, rep, i, m.Path, b)
		l := m.TrimLearned
		excl := 0.0
		if l.Exclusive {
			excl = 1
		}
		c := fmt.Sprintf("learned-m%d", i)
		r.add(Result{Scenario: scenario, Case: c, System: sys.Name, Metric: "exclusive", Unit: "bool", Better: "none"}, excl)
		r.add(Result{Scenario: scenario, Case: c, System: sys.Name, Metric: "inflight", Unit: "count", Better: "none"}, float64(l.InFlight))
		r.add(Result{Scenario: scenario, Case: c, System: sys.Name, Metric: "gap_ms", Unit: "ms", Better: "none"}, l.GapMS)
	}
	return nil
}

// SeedDrive is scenario (h)'s member with the back-to-back penalty of the
// field: ~1 ms for an isolated TRIM, ~100 ms for one that starts within
// 10 ms of the previous one's end.
var SeedDrive = Drive{TrimLatency: time.Millisecond, B2BLatency: 100 * time.Millisecond, B2BWindow: 10 * time.Millisecond}

// B2BGaps are the hand-set --trim-gap values (h) measures: under the
// window, at it, and two above.
var B2BGaps = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}

// (h) RAID10 whose member 0 charges the back-to-back penalty (SeedDrive), the
// others fast: the fstrim of a fragmented ext4, timed until the last TRIM
// is done ("settled": async mode acknowledges discards long before), by
// uraid with no flag (learning the gap) and with each of B2BGaps. Each
// fresh array is trimmed twice: "fstrim" is its first, what a new user
// meets while the lane still learns; "fstrim-warm", after as many files
// again are written and half deleted, is what the lane reached.
func (r *Runner) backToBack() error {
	n, size := r.scale(600, 200), 64<<10
	drives := append([]Drive{SeedDrive}, same(Fast, 3)...)
	systems := []System{learnedSystem(mapping.RAID10, "async")}
	for _, g := range B2BGaps {
		systems = append(systems, gapSystem(mapping.RAID10, "async", g))
	}
	return r.interleave("h", systems, drives, func(sys System, rep int, a *array) error {
		if err := mkfs(a.dev); err != nil {
			return err
		}
		if err := mount(a.dev, false); err != nil {
			return err
		}
		defer umount()
		for _, round := range []string{"fstrim", "fstrim-warm"} {
			if err := r.trimFragmented(sys, rep, a, round, n, size); err != nil {
				return err
			}
		}
		return nil
	})
}

// trimFragmented fragments the filesystem on a (files in directory
// round), then times its fstrim until member 0's last TRIM is done.
func (r *Runner) trimFragmented(sys System, rep int, a *array, round string, n, size int) error {
	if err := fragment(round, n, size); err != nil {
		return err
	}
	if err := r.remount(a); err != nil {
		return err
	}
	before, err := r.status(a)
	if err != nil {
		return err
	}
	start := time.Now()
	took, err := fitrim()
	if err != nil {
		return err
	}
	if err := r.drain(a); err != nil {
		return err
	}
	settled := time.Since(start)
	after, err := r.status(a)
	if err != nil {
		return err
	}
	trims := after.Members[0].Discard.Completed - before.Members[0].Discard.Completed
	r.logf("h %s rep %d %s: fstrim %v, settled %v, %d TRIMs on member 0", sys.Name, rep, round, took, settled, trims)
	r.add(Result{Scenario: "h-back-to-back", Case: round, System: sys.Name, Metric: "settled", Unit: "ms", Better: "lower"}, ms(settled))
	r.add(Result{Scenario: "h-back-to-back", Case: round, System: sys.Name, Metric: "wall", Unit: "ms", Better: "lower"}, ms(took))
	r.add(Result{Scenario: "h-back-to-back", Case: round, System: sys.Name, Metric: "m0_trims", Unit: "count", Better: "lower"}, float64(trims))
	return nil
}

// FloodDrive is scenario (i)'s slow member: an NBD device that runs one
// command at a time and takes 50 ms per TRIM, as a SATA SSD behind a USB or
// SAS bridge.
var FloodDrive = Drive{NBD: true, TrimLatency: 50 * time.Millisecond, Exclusive: true}

// (i) The flood: RAID10 over an NBD member (FloodDrive) and three fast
// simulated SSDs, one ublk queue, async discards. A QD1 4 KiB random reader
// on the first 16 MiB (written first) alone, then beside a 4 KiB random
// discard flood at QD32 over the array from 64 MiB on; the reader starts 3 s
// into the flood, once member 0's queue is full. uraid with no flag
// (learned) against --trim-exclusive on member 0 (hand-set). Skipped, with a
// note, where nbdkit or nbd-client is missing.
func (r *Runner) flood() error {
	for _, tool := range NBDTools {
		if _, err := exec.LookPath(tool); err != nil {
			r.logf("i skipped: %s not found (apt install nbdkit nbd-client on the host; the guest runs the host's)", tool)
			return nil
		}
	}
	if _, err := os.Stat("/sys/module/nbd"); err != nil {
		r.logf("i skipped: no nbd module (tests/vm/vm modprobe nbd; bench/guest.sh loads it)")
		return nil
	}
	rt := r.dur(8*time.Second, 5*time.Second)
	const warm = 3 * time.Second
	drives := append([]Drive{FloodDrive}, same(Fast, 3)...)
	// A queue deeper than the flood, so that the reader never waits for a
	// free tag: it can wait only for the array.
	args := []string{"--queues", "1", "--depth", "128"}
	learned, handSet := learnedSystem(mapping.RAID10, "async"), uraidSystem(mapping.RAID10, "async")
	learned.Args, handSet.Args = args, args
	read := []string{"rw=randread", "bs=4k", "iodepth=1", "offset=0", "size=16M", secs(rt), "time_based"}
	// Two fio runs, so that the members' reads can be counted around the
	// flooded one: which copy served the reader beside the flood.
	alone := []job{
		{"fill", []string{"rw=write", "bs=1M", "iodepth=4", "offset=0", "size=16M"}},
		{"alone", append([]string{"stonewall"}, read...)},
	}
	flooded := []job{
		{"with-flood", append([]string{fmt.Sprintf("startdelay=%d", int(warm.Seconds()))}, read...)},
		{"flood", []string{"rw=randtrim", "bs=4k", "iodepth=32", "offset=64M", secs(rt + warm), "time_based"}},
	}
	return r.interleave("i", []System{learned, handSet}, drives, func(sys System, rep int, a *array) error {
		// Writeback throttling counts discards as writes and, once reads
		// slow down, lets fewer through: the flood would not stay 32 deep.
		if err := disableWBT(a.dev); err != nil {
			return err
		}
		if rep == 0 {
			if b, err := os.ReadFile("/sys/block/" + filepath.Base(a.members[0]) + "/queue/rotational"); err == nil {
				r.logf("i %s: member 0 %s rotational %s", sys.Name, a.members[0], strings.TrimSpace(string(b)))
			}
		}
		global := []string{"filename=" + a.dev}
		ctx, cancel := fioCtx(2 * rt)
		res, err := fio(ctx, global, alone...)
		cancel()
		if err != nil {
			return err
		}
		before, err := statsOf(a.members)
		if err != nil {
			return err
		}
		ctx, cancel = fioCtx(rt + warm)
		res2, err := fio(ctx, global, flooded...)
		cancel()
		if err != nil {
			return err
		}
		after, err := statsOf(a.members)
		if err != nil {
			return err
		}
		for k, v := range res2 {
			res[k] = v
		}
		// Member 0 and its mirror, member 1, hold the same chunks: the
		// share of their reads member 0 served while the flood ran (the
		// flood's warm-up included, which has no reads of its own).
		var reads []int64
		for i := range after {
			reads = append(reads, after[i].sub(before[i]).reads)
		}
		r.logf("i %s with-flood rep %d: member reads %v", sys.Name, rep, reads)
		if pair := reads[0] + reads[1]; pair > 0 {
			r.add(Result{Scenario: "i-flood", Case: "with-flood", System: sys.Name, Metric: "slow_read_share", Unit: "%", Better: "lower"},
				100*float64(reads[0])/float64(pair))
		}
		for _, c := range []string{"alone", "with-flood"} {
			rd := res[c].Read
			r.logf("i %s %s rep %d: read p99 %.0f us, %d reads", sys.Name, c, rep, rd.p99(), rd.IOs)
			r.add(Result{Scenario: "i-flood", Case: c, System: sys.Name, Metric: "read_p99", Unit: "us", Better: "lower"}, rd.p99())
			r.add(Result{Scenario: "i-flood", Case: c, System: sys.Name, Metric: "reads", Unit: "count", Better: "higher"}, float64(rd.IOs))
		}
		r.logf("i %s rep %d: %d discards", sys.Name, rep, res["flood"].Trim.IOs)
		r.add(Result{Scenario: "i-flood", Case: "with-flood", System: sys.Name, Metric: "discards", Unit: "count", Better: "higher"},
			float64(res["flood"].Trim.IOs))
		return nil
	})
}

// disableWBT turns off writeback throttling on dev, where the kernel has it.
func disableWBT(dev string) error {
	attr := "/sys/block/" + filepath.Base(dev) + "/queue/wbt_lat_usec"
	if _, err := os.Stat(attr); errors.Is(err, os.ErrNotExist) {
		return nil // a kernel built without CONFIG_BLK_WBT
	}
	return os.WriteFile(attr, []byte("0"), 0)
}
