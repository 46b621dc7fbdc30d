// Package ublkfile is a ublk server for tests: it serves one file or block
// device as /dev/ublkbN with the file target until it is told to stop.
// Guest tests run it as a separate process (the test binary re-executed)
// so that they can kill it like a real daemon.
//
// Protocol on stdout, one line each:
//
//	ready ID ZC B the device is /dev/ublkbID and serving; ZC is its
//	              ublk.ZeroCopyStatus as JSON, B its ublk.BatchIOStatus
//	stats JSON    after SIGUSR1: the target's request counters
//	stopped       after SIGTERM or SIGINT: the device is gone
//
// Errors go to stderr and make the process exit with status 1.
package ublkfile

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"

	"uraid/ublk"
	"uraid/ublk/filetarget"
)

// Main runs the server with command-line style args and returns the exit
// status.
func Main(args []string, stdout, stderr io.Writer) int {
	if err := run(args, stdout); err != nil {
		fmt.Fprintln(stderr, "ublkfile:", err)
		return 1
	}
	return 0
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ublkfile", flag.ContinueOnError)
	queues := fs.Int("queues", 0, "hardware queues (0: one per CPU)")
	depth := fs.Int("depth", 0, "queue depth (0: default)")
	buffered := fs.Bool("buffered", false, "open the backing file without O_DIRECT")
	recovery := fs.Bool("recovery", false, "let the device outlive this server (user recovery)")
	recoverID := fs.Int("recover", -1, "take over quiesced device ID instead of adding one")
	zeroCopy := fs.String("zerocopy", "auto", "zero copy: auto, off or register")
	batchIO := fs.String("batchio", "off", "batch I/O commands: off or auto")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: ublkfile [flags] FILE")
	}

	// Install the handlers first: a signal that arrives while starting
	// must not kill the process with the device half made.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGUSR1)

	tg, err := filetarget.Open(fs.Arg(0), filetarget.Options{Buffered: *buffered})
	if err != nil {
		return err
	}
	defer tg.Close()
	zc, err := ublk.ParseZeroCopy(*zeroCopy)
	if err != nil {
		return err
	}
	bio, err := ublk.ParseBatchIO(*batchIO)
	if err != nil {
		return err
	}
	opts := ublk.Options{Queues: *queues, Depth: *depth, UserRecovery: *recovery, ZeroCopy: zc, BatchIO: bio}
	var dev *ublk.Device
	if *recoverID >= 0 {
		dev, err = ublk.NewRecovery(tg, uint32(*recoverID), opts)
	} else {
		dev, err = ublk.New(tg, opts)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dev.Start(ctx); err != nil {
		return err
	}
	zcs, err := json.Marshal(dev.ZeroCopy())
	if err != nil {
		return err
	}
	bs, err := json.Marshal(dev.BatchIO())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ready %d %s %s\n", dev.ID(), zcs, bs)

	for {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-dev.Failed():
			return errors.Join(dev.Err(), dev.Stop())
		}
		if sig == unix.SIGUSR1 {
			b, err := json.Marshal(tg.Stats())
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "stats %s\n", b)
			continue
		}
		if err := dev.Stop(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "stopped")
		return nil
	}
}
