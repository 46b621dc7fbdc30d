package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/raid"
)

// serveFlags are how create and assemble pass serving choices on to the daemon.
type serveFlags struct {
	discard    string
	inflight   int
	minGap     time.Duration
	queues     int
	depth      int
	foreground bool
}

func (f *serveFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.discard, "discard", "sync", "when a discard completes: sync (once every member trimmed) or async (once queued on every member)")
	fl.IntVar(&f.inflight, "trim-inflight", 0, "TRIMs each member runs at once (0: 1 for files and rotational/SATA-like disks, 4 for others)")
	fl.DurationVar(&f.minGap, "trim-gap", 0, "least time between two TRIMs on one member, for drives that penalise back-to-back TRIMs")
	fl.IntVar(&f.queues, "queues", daemon.DefaultQueues, "ublk queues (0: one per CPU)")
	fl.IntVar(&f.depth, "depth", daemon.DefaultDepth, "requests in flight per queue")
	fl.BoolVar(&f.foreground, "foreground", false, "serve from this process until stopped (for systemd) instead of a background daemon")
}

func (f *serveFlags) check() error {
	if _, err := raid.ParseDiscardMode(f.discard); err != nil {
		return usageError{err}
	}
	if f.inflight < 0 || f.minGap < 0 || f.queues < 0 || f.depth < 1 || f.depth > 4096 {
		return usageError{fmt.Errorf("--trim-inflight, --trim-gap and --queues must not be negative, --depth must be 1 to 4096")}
	}
	return nil
}

func (f *serveFlags) options(degraded bool) raid.Options {
	q := f.queues
	if q == 0 {
		q = numCPU()
	}
	return raid.Options{Queues: q, Depth: f.depth, Degraded: degraded,
		Discard: raid.DiscardOptions{Mode: f.discard, InFlight: f.inflight, MinGap: f.minGap}}
}

// args renders the flags for the detached `uraid serve`.
func (f *serveFlags) args() []string {
	return []string{"--discard", f.discard, fmt.Sprintf("--trim-inflight=%d", f.inflight),
		"--trim-gap", f.minGap.String(), fmt.Sprintf("--queues=%d", f.queues), fmt.Sprintf("--depth=%d", f.depth)}
}

// serveDetached starts `uraid serve` for the array in the background and prints its device once
// it is usable.
func serveDetached(cmd *cobra.Command, name string, members []string, f *serveFlags, degraded bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{"serve", name}, f.args()...)
	if degraded {
		args = append(args, "--degraded")
	}
	args = append(append(args, "--"), members...)
	dev, err := daemon.Spawn(name, exe, args, 90*time.Second)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), dev)
	return err
}

// serveHere runs the array in this process until it is stopped.
func serveHere(cmd *cobra.Command, a *raid.Array, f *serveFlags, n *daemon.Notifier) error {
	o := f.options(false)
	if n == nil {
		n = daemon.NewNotifier()
	}
	return daemon.Run(a, o.Queues, o.Depth, n, func(dev string) {
		if f.foreground {
			fmt.Fprintln(cmd.OutOrStdout(), dev)
		}
	})
}
