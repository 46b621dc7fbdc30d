// Command ublkbench compares the ublk file target with the kernel loop
// device over one backing file (package ublkbench).
//
//	ublkbench run [flags]      as root in the guest: measure, print result lines
//	ublkbench report [flags]   on the host: read a run's log, write the JSON, print the table
//
// make bench-ublk runs both; docs/bench-ublk.md explains the figures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"

	"uraid/bench/ublkbench"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs a subcommand and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: ublkbench run|report [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = run(args[1:], stdout, stderr)
	case "report":
		err = report(args[1:], stdout)
	default:
		fmt.Fprintf(stderr, "ublkbench: unknown subcommand %q; want run or report\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "ublkbench:", err)
		return 1
	}
	return 0
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ublkbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg ublkbench.Config
	fs.StringVar(&cfg.File, "file", "/tmp/ublkbench.img", "backing file to create (on the guest's tmpfs by default)")
	sizeMiB := fs.Int64("size-mib", 1024, "size of the backing file in MiB")
	fs.DurationVar(&cfg.Runtime, "runtime", 10*time.Second, "measured time per fio job")
	fs.DurationVar(&cfg.Ramp, "ramp", 2*time.Second, "unmeasured time before each fio job")
	fs.IntVar(&cfg.Reps, "reps", 3, "repetitions on each target")
	fs.IntVar(&cfg.Queues, "queues", 0, "ublk queues (0: one per CPU)")
	fs.IntVar(&cfg.Depth, "depth", 0, "ublk queue depth (0: the server's default)")
	fs.StringVar(&cfg.Profile, "cpuprofile", "", "after measuring, profile the server over the QD32 jobs into this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("run takes no arguments, got %q", fs.Args())
	}
	if unix.Geteuid() != 0 {
		return fmt.Errorf("run needs root (ublk and loop devices); run it in the guest: make bench-ublk")
	}
	cfg.Size = *sizeMiB << 20
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM)
	defer stop()
	return ublkbench.Run(ctx, cfg, stdout, stderr)
}

func report(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ublkbench report", flag.ContinueOnError)
	log := fs.String("log", "", "console log of a run (required)")
	out := fs.String("out", "", "write the report JSON here (default: do not write)")
	prof := fs.String("cpuprofile", "", "write the server's CPU profile here, if the run took one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *log == "" || fs.NArg() != 0 {
		return fmt.Errorf("usage: ublkbench report -log FILE [-out FILE]")
	}
	b, err := os.ReadFile(*log)
	if err != nil {
		return err
	}
	r, err := ublkbench.ParseLog(b, ublkbench.Workloads)
	if err != nil {
		return fmt.Errorf("%s: %w", *log, err)
	}
	if *out != "" {
		j, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(j, '\n'), 0o644); err != nil {
			return err
		}
	}
	if *prof != "" && r.Profile != nil {
		if err := os.WriteFile(*prof, r.Profile, 0o644); err != nil {
			return err
		}
	}
	e := r.Env
	fmt.Fprintf(stdout, "kernel %s, %d CPUs (%s), %s, %d MiB, %d s per job after %d s ramp, %d repetitions, ublk %d queues x %d\n\n",
		e.Kernel, e.NProc, e.CPU, e.Backing, e.SizeMiB, e.Runtime, e.Ramp, e.Reps, e.Queues, e.Depth)
	fmt.Fprint(stdout, ublkbench.Table(r.Summary))
	return nil
}
