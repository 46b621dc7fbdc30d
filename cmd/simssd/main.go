// Command simssd serves one simulated SSD (RAM-backed, with TRIM latency and
// the back-to-back TRIM penalty, optionally reading trimmed blocks back as
// garbage) as /dev/ublkbN, so that md and uraid can be measured over
// identical members. The TRIM gate of package simssd (Hold, Release) is for
// tests that hold the Device in their own process; the command has no way
// to reach it. It prints the device path once the device
// is ready, serves until SIGTERM or SIGINT, then prints the drive's counters
// as JSON on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"uraid/simssd"
	"uraid/simssd/simblk"
	"uraid/ublk"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "simssd:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	drive, err := simssd.New(cfg.drive)
	if err != nil {
		return err
	}
	tg, err := simblk.New(drive, cfg.blk)
	if err != nil {
		return err
	}
	dev, err := ublk.New(tg, cfg.ublk)
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dev.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Fprintln(stdout, dev.Path())
	<-stop
	err = dev.Stop()
	json.NewEncoder(stderr).Encode(drive.Counters())
	return err
}
