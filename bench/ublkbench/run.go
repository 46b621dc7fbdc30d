package ublkbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"uraid/ublk"
)

// Config is one benchmark run.
type Config struct {
	File    string        // backing file, created and filled here
	Size    int64         // of the backing file, bytes
	Runtime time.Duration // per fio job, measured
	Ramp    time.Duration // per fio job, before measuring
	Reps    int
	Queues  int // ublk queues, 0: one per CPU
	Depth   int // ublk queue depth, 0: the default
	// Profile, when set, adds a pass after the repetitions: the QD32 jobs
	// against ublk alone under a CPU profile of this process (the
	// server), written to Profile; its top functions go to the log.
	Profile string
}

// Run creates the backing file and measures the workloads on ublk and
// loop, Reps times, alternating which goes first so that drift over the
// run (page cache, host load) falls on both. Result lines go to out as
// they are taken, so that a run cut short still yields figures; progress
// goes to log.
func Run(ctx context.Context, cfg Config, out, log io.Writer) error {
	if _, err := exec.LookPath("fio"); err != nil {
		return fmt.Errorf("fio: %w (install fio)", err)
	}
	if cfg.Reps < 1 || cfg.Size < 1<<20 || cfg.Runtime < time.Second {
		return fmt.Errorf("want at least one repetition, 1 MiB and one second per job; have %d, %d bytes, %v", cfg.Reps, cfg.Size, cfg.Runtime)
	}
	fmt.Fprintf(log, "ublkbench: filling %s (%d MiB)\n", cfg.File, cfg.Size>>20)
	// A block device (a RAM disk, like the SSDs uraid serves) is filled
	// in place and left; a file is made here and removed after.
	bdev := false
	if st, err := os.Stat(cfg.File); err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0 {
		bdev = true
	}
	fs, err := fill(cfg.File, cfg.Size, bdev)
	if err != nil {
		return err
	}
	if !bdev {
		defer os.Remove(cfg.File)
	}

	env := environment(cfg, fs)
	// Learn whether loop really does direct I/O before measuring anything.
	lp, dio, err := attachLoop(ctx, cfg.File)
	if err != nil {
		return err
	}
	if err := lp.detach(); err != nil {
		return err
	}
	if !dio {
		return fmt.Errorf("loop falls back to buffered I/O on %s: the comparison would be unfair (use a filesystem with direct I/O)", fs)
	}
	env.LoopDIO = dio
	if err := EmitEnv(out, env); err != nil {
		return err
	}

	uopts := ublk.Options{Queues: cfg.Queues, Depth: cfg.Depth}
	for rep := 1; rep <= cfg.Reps; rep++ {
		order := []string{Ublk, Loop}
		if rep%2 == 0 {
			order = []string{Loop, Ublk}
		}
		for _, target := range order {
			fmt.Fprintf(log, "ublkbench: repetition %d/%d on %s\n", rep, cfg.Reps, target)
			figs, err := measure(ctx, cfg, target, uopts, Workloads)
			if err != nil {
				return fmt.Errorf("repetition %d on %s: %w", rep, target, err)
			}
			for _, w := range Workloads {
				if err := EmitResult(out, Result{Rep: rep, Target: target, Workload: w.Name, Figures: figs[w.Name]}); err != nil {
					return err
				}
			}
		}
	}
	if cfg.Profile != "" {
		return profile(ctx, cfg, uopts, out, log)
	}
	return nil
}

// measure attaches target, runs the workloads on it in one fio, and
// detaches it.
func measure(ctx context.Context, cfg Config, target string, uopts ublk.Options, ws []Workload) (map[string]Figures, error) {
	var (
		dev attached
		err error
	)
	switch target {
	case Ublk:
		dev, err = attachUblk(ctx, cfg.File, uopts)
	case Loop:
		dev, _, err = attachLoop(ctx, cfg.File)
	default:
		err = fmt.Errorf("unknown target %q", target)
	}
	if err != nil {
		return nil, err
	}
	figs, err := runFio(ctx, dev, cfg, ws)
	return figs, errors.Join(err, dev.detach())
}

func runFio(ctx context.Context, dev attached, cfg Config, ws []Workload) (map[string]Figures, error) {
	per := cfg.Runtime + cfg.Ramp + 5*time.Second
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(ws))*per+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "fio", FioArgs(dev.path, cfg.Size, cfg.Runtime, cfg.Ramp, ws)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fio: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("fio on %s: %w: %s", dev.path, err, strings.TrimSpace(stderr.String()))
		}
	case <-dev.failed:
		// The server stopped on its own: fio would wait on I/O that
		// never completes until the timeout.
		cancel()
		<-done
		return nil, fmt.Errorf("the ublk server stopped serving %s during fio", dev.path)
	}
	return ParseFio(stdout.Bytes(), ws)
}

// profile runs the QD32 workloads on ublk under a CPU profile of this
// process and prints the profile to out.
func profile(ctx context.Context, cfg Config, uopts ublk.Options, out, log io.Writer) error {
	var ws []Workload
	for _, w := range Workloads {
		if w.IODepth == 32 {
			ws = append(ws, w)
		}
	}
	fmt.Fprintf(log, "ublkbench: profiling the server over %d QD32 jobs\n", len(ws))
	dev, err := attachUblk(ctx, cfg.File, uopts)
	if err != nil {
		return err
	}
	f, err := os.Create(cfg.Profile)
	if err != nil {
		return errors.Join(err, dev.detach())
	}
	threads, err := readThreadCPU()
	if err != nil {
		return errors.Join(err, f.Close(), dev.detach())
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return errors.Join(err, f.Close(), dev.detach())
	}
	figs, err := runFio(ctx, dev, cfg, ws)
	pprof.StopCPUProfile()
	if now, terr := readThreadCPU(); terr == nil {
		fmt.Fprintf(out, "ublkbench thread CPU ticks (of 100 a second) over the profiled jobs: %s\n",
			strings.Join(now.Since(threads), ", "))
	}
	if err := errors.Join(err, f.Close(), dev.detach()); err != nil {
		return err
	}
	for _, w := range ws {
		fmt.Fprintf(out, "ublkbench profiled %s: %.0f IOPS\n", w.Name, figs[w.Name].IOPS)
	}
	// The guest's root is read-only and pprof is slow under emulation:
	// the profile travels in the log and is read on the host.
	b, err := os.ReadFile(cfg.Profile)
	if err != nil {
		return err
	}
	return EmitProfile(out, b)
}

// fill writes size bytes of non-zero data to path, so that reads find
// data rather than holes the filesystem answers without touching memory.
// It returns the filesystem's name for the record. A block device must
// hold size bytes; fio and both targets use only that much of it.
func fill(path string, size int64, bdev bool) (string, error) {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if bdev {
		flags = os.O_RDWR
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return "", fmt.Errorf("backing file: %w", err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		buf[0] = byte(off >> 20) // each MiB differs a little
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			f.Close()
			return "", fmt.Errorf("fill backing file: %w (is there room? the guest's /tmp is RAM)", err)
		}
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("backing file: %w", err)
	}
	if bdev {
		return "block device", nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "", os.NewSyscallError("statfs", err)
	}
	return fsName(st.Type), nil
}

func fsName(magic int64) string {
	switch magic {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	}
	return fmt.Sprintf("filesystem magic %#x", magic)
}

func environment(cfg Config, fs string) Env {
	e := Env{
		NProc:     runtime.NumCPU(),
		Backing:   fmt.Sprintf("%s on %s, filled with data", cfg.File, fs),
		SizeMiB:   cfg.Size >> 20,
		Runtime:   int(cfg.Runtime.Seconds()),
		Ramp:      int(cfg.Ramp.Seconds()),
		Reps:      cfg.Reps,
		Queues:    cfg.Queues,
		Depth:     cfg.Depth,
		FioEngine: "io_uring",
	}
	if e.Queues == 0 {
		e.Queues = e.NProc
	}
	if e.Depth == 0 {
		e.Depth = ublk.DefaultDepth
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return e
}
