// Command benchrun runs the uraid-against-md benchmark suite (package bench)
// as root on a kernel with ublk and md, and prints the results as JSON
// between marker lines on stdout, progress on stderr. make bench runs it in
// the guest; benchreport turns its output into docs/benchmarks.md figures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"uraid/bench"
)

// Markers delimit the JSON in a console log that also carries progress.
const (
	BeginMarker = "=== benchrun results begin ==="
	EndMarker   = "=== benchrun results end ==="
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		quick    = flag.Bool("quick", false, "smaller sizes and shorter runs (make bench-quick)")
		reps     = flag.Int("reps", 3, "repetitions of every measurement")
		only     = flag.String("only", "", "comma-separated scenario names or letters to run (default: all)")
		simssd   = flag.String("simssd", "build/simssd", "simssd binary")
		uraid    = flag.String("uraid", "build/uraid", "uraid binary")
		memberMB = flag.Int("member-mib", 256, "size of each simulated SSD in MiB (held in RAM)")
		trim     = flag.Duration("trim-latency", 2*time.Millisecond, "simulated TRIM latency")
		b2b      = flag.Duration("b2b-latency", 20*time.Millisecond, "simulated back-to-back TRIM latency")
		window   = flag.Duration("b2b-window", 5*time.Millisecond, "simulated back-to-back window")
		maxDisc  = flag.String("max-discard", "32M", "simulated largest TRIM")
		busy     = flag.Bool("allow-busy", false, "keep figures measured while the guest's CPU speed moved (another guest competing)")
		costEnv  = flag.String("cost-env", "", "comma-separated VAR=VALUE: scenario j measures uraid with them too (GOMAXPROCS=4)")
		costAlt  = flag.String("cost-alt", "", "another uraid build that scenario j measures beside -uraid (a change's before and after)")
		peer     = flag.String("peer-ublk", "", "the reference ublk server's command, built by bench/peer-ublksrv.sh, for scenario j (empty: uraid alone)")
	)
	flag.Parse()
	drive := bench.Drive{TrimLatency: *trim, B2BLatency: *b2b, B2BWindow: *window, MaxDiscard: *maxDisc}
	r, err := bench.NewRunner(bench.Config{SimSSD: *simssd, URaid: *uraid, Reps: *reps, Quick: *quick,
		MemberSize: int64(*memberMB) << 20, Drive: drive, AllowBusy: *busy, PeerUblk: *peer, CostEnv: splitList(*costEnv), CostAlt: *costAlt, Log: os.Stderr})
	if err != nil {
		return err
	}
	suite := bench.Suite{
		Started: time.Now().UTC().Format(time.RFC3339),
		Quick:   *quick,
		Reps:    *reps,
		Machine: bench.Machine(),
		Settings: map[string]string{
			"members":        fmt.Sprintf("4 simulated SSDs of %d MiB, RAM-backed, one ublk queue of depth 128 each", *memberMB),
			"drive":          drive.String(),
			"fast drive (f)": bench.Fast.String(),
			"native (e)": "4 brd RAM disks of 256 MiB, md and uraid over the same four in turn in every repetition " +
				"(order rotating, one warm-up repetition not kept, at least 5 kept); uraid-*-copy is uraid with zero copy turned off",
			"cost (j)": "4 memory-backed null_blk members of 1 GiB (nr_devices=4 memory_backed=1 gb=1, its other settings the defaults), the first 256 MiB written once; " +
				"uraid raid0 and raid10 (discard sync) over the four, the reference server's loop target (-q 2 -d 128) over the first, in turn in every repetition; " +
				"each run warms up for a second, then the counters are read around each fio job (no ramp)",
			"slow drive (f)": bench.SlowDrive.String() + ", member 0 of the RAID10",
			"rebuild (g)":    bench.RebuildSetting(*quick),
			"reshape (k)":    bench.ReshapeSetting(*quick),
			"drive (h)": bench.SeedDrive.String() + ", member 0 of the RAID10, the others instant; uraid with no TRIM flag " +
				"(learned) against --trim-gap " + fmt.Sprint(bench.B2BGaps) + ", every array fresh in each repetition, in turn",
			"drive (i)": bench.FloodDrive.String() + ", member 0 of the RAID10 (the others instant simulated SSDs), one ublk queue of " +
				"depth 128; uraid with no TRIM flag (learned) against --trim-exclusive on member 0, every array fresh in each repetition, in turn",
			"chunk": "512 KiB; md with --assume-clean --metadata 1.2, RAID10 near-2 for both",
		},
	}
	fmt.Fprintf(os.Stderr, "settings: %v\n", suite.Settings)
	var failed []string
	for _, s := range bench.Scenarios() {
		if !selected(*only, s.Name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s: %s\n", s.Name, s.Desc)
		start := time.Now()
		if err := s.Run(r); err != nil {
			fmt.Fprintf(os.Stderr, "== %s FAILED: %v\n", s.Name, err)
			failed = append(failed, s.Name)
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s done in %v\n", s.Name, time.Since(start).Round(time.Second))
		// Everything so far, after every scenario, so that a run cut short
		// by the guest's time limit still leaves results.
		suite.Results = r.Results()
		if r.Busy() {
			suite.Settings["busy"] = "yes: some figures were measured while the guest's CPU ran more than 30% slower than its fastest"
		}
		b, err := json.MarshalIndent(suite, "", "  ")
		if err != nil {
			return err
		}
		fmt.Printf("%s\n%s\n%s\n", BeginMarker, b, EndMarker)
	}
	if len(failed) > 0 {
		return fmt.Errorf("scenarios failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// selected says whether scenario name ("c-fstrim") is in the list, which
// may name it in full or by its letter.
func selected(list, name string) bool {
	if list == "" {
		return true
	}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == name || s == name[:1] {
			return true
		}
	}
	return false
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
