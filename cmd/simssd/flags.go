package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"uraid/simssd"
	"uraid/simssd/simblk"
	"uraid/ublk"
)

// config is everything the command line decides.
type config struct {
	drive simssd.Config
	blk   simblk.Options
	ublk  ublk.Options
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("simssd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "1G", "device size (bytes, or with a K, M, G or T suffix); the data lives in RAM")
	maxDiscard := fs.String("max-discard", "0", "largest TRIM the device takes in one request (0: no limit)")
	fs.DurationVar(&c.drive.TrimLatency, "trim-latency", 0, "time an isolated TRIM takes")
	fs.DurationVar(&c.drive.BackToBackLatency, "b2b-latency", 0, "time a TRIM takes instead when it follows the previous one within --b2b-window")
	fs.DurationVar(&c.drive.BackToBackWindow, "b2b-window", 0, "how soon after a TRIM the next one pays --b2b-latency")
	fs.DurationVar(&c.drive.Jitter, "jitter", 0, "uniform random extra time per TRIM, drawn from --seed")
	fs.Uint64Var(&c.drive.Seed, "seed", 1, "seed of the TRIM jitter and of --trim-garbage")
	fs.BoolVar(&c.drive.TrimGarbage, "trim-garbage", false, "trimmed blocks read back as pseudo-random bytes drawn from --seed and the block number,\nnot zeros (give each device its own --seed so that mirrors disagree)")
	fs.BoolVar(&c.drive.Exclusive, "exclusive", false, "SATA-like: reads and writes wait while a TRIM runs (the device stays non-rotational, as a SATA SSD is)")
	fs.BoolVar(&c.blk.Rotational, "rotational", false, "mark the device rotational")
	fs.IntVar(&c.ublk.Queues, "queues", 1, "ublk queues (0: one per CPU)")
	fs.IntVar(&c.ublk.Depth, "depth", 128, "requests in flight per queue")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: simssd [flags]   (serves until SIGTERM; prints /dev/ublkbN when ready)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() != 0 {
		return c, fmt.Errorf("unexpected arguments %q: simssd takes flags only", fs.Args())
	}
	var err error
	if c.drive.Size, err = parseSize(*size); err != nil {
		return c, fmt.Errorf("--size: %w", err)
	}
	md, err := parseSize(*maxDiscard)
	if err != nil {
		return c, fmt.Errorf("--max-discard: %w", err)
	}
	if c.drive.BackToBackWindow > 0 && c.drive.BackToBackLatency == 0 {
		return c, errors.New("--b2b-window without --b2b-latency would make back-to-back TRIMs instant; set both")
	}
	c.blk.MaxDiscard, c.blk.Exclusive = uint64(md), c.drive.Exclusive
	return c, nil
}

// parseSize reads "4096", "512K", "64M", "1G" or "1T" (powers of 1024).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	if n := len(s); n > 0 {
		switch strings.ToUpper(s[n-1:]) {
		case "K":
			mult = 1 << 10
		case "M":
			mult = 1 << 20
		case "G":
			mult = 1 << 30
		case "T":
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size: want a number of bytes with an optional K, M, G or T suffix", s)
	}
	if v > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return v * mult, nil
}
