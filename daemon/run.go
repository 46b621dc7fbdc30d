package daemon

// run.go owns a daemon's start on a new device: Config, Run, its record, and the pieces of a
// start that Recover uses too: the signals, the device's options, and startNew, which also
// creates again, under its number, a device the kernel no longer has.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"uraid/array"
	"uraid/raid"
	"uraid/ublk"
)

// Serving defaults: one queue per CPU as the kernel's blk-mq expects, deep enough for NVMe.
const (
	DefaultQueues = 0 // one per CPU
	DefaultDepth  = 128
)

// startTimeout bounds how long a device may take to appear before the start counts as
// failed.
const startTimeout = 60 * time.Second

// Config says how a daemon serves its array.
type Config struct {
	// Members are the member paths as create or assemble were given them (spares among them),
	// which a successor assembles from; when empty, the array's members in their slots.
	Members []string
	// Options are the array's serving options; Run records them for its successors.
	Options array.Options
	// MetricsListen is a TCP address to serve GET /metrics on too, or "" for none. Recover
	// serves on the recorded one when it is empty.
	MetricsListen string
	// Supervised says a supervisor (systemd) runs this daemon in the foreground and starts it
	// again when it exits with a failure: a hand-over then ends with ErrRestartMe instead of
	// leaving the successor to uraid restart.
	Supervised bool
	// Log is where the daemon logs its events and its array's messages (nil: slog.Default()).
	Log *slog.Logger
}

// logger is c.Log, or the default logger.
func (c Config) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

// Run serves a, just created or assembled, as a new ublk device until it is stopped (SIGTERM,
// SIGINT or POST /stop, each refused while the device is open), handed over (POST /handover) or
// its device fails. It stops in the order that loses nothing: remove the device (the kernel
// drains in-flight I/O), finish queued TRIMs, flush the members, mark them clean. n and onReady
// (if not nil) hear when the device is usable.
func Run(a *array.Array, cfg Config, n *Notifier, onReady func(device string)) (err error) {
	name := a.Name
	ready := false
	defer func() {
		if !ready {
			a.Close()
			n.Failed(err)
		}
	}()
	// Installed first: a signal during the start must not kill the process with the device
	// half made. It is looked at once the device serves.
	sigs := notifySignals()
	defer signal.Stop(sigs)
	// The array's members are open; the record keeps their paths as they were given.
	if err := leaveWorkingDir(); err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}

	srv, err := Listen(name)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := checkNoDevice(name); err != nil {
		return err
	}
	uo, err := deviceOptions(cfg.Options)
	if err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}
	var ms *metricsServer
	if cfg.MetricsListen != "" {
		if ms, err = listenMetrics(cfg.MetricsListen); err != nil {
			return fmt.Errorf("array %s: %w", name, err)
		}
		defer ms.Close()
	}
	rec := newRecord(a, cfg)
	if err := a.MarkDirty(); err != nil {
		return fmt.Errorf("array %s: mark members in use: %w", name, err)
	}
	dev, err := startNew(a, uo, rec, false)
	if err != nil {
		_ = a.MarkClean() // nothing was written through the device
		return fmt.Errorf("array %s: %w", name, err)
	}
	s := newServed(a, dev, rec, cfg)
	s.metrics = ms
	s.started = array.Event{Type: EventStarted, Message: "serving " + dev.Path()}
	ready = true
	return s.serve(srv, sigs, n, onReady)
}

func notifySignals() chan os.Signal {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	return sigs
}

func executable() string {
	exe, _ := os.Executable()
	return exe
}

func newRecord(a *array.Array, cfg Config) *Record {
	members := raid.StablePaths(cfg.Members) // as the array knows them: see raid.StablePath
	if len(members) == 0 {
		for _, m := range a.Members() {
			if m != nil {
				members = append(members, m.Path)
			}
		}
	}
	opts := recordOptions(cfg.Options)
	opts.MetricsListen = cfg.MetricsListen
	return &Record{
		Name: a.Name, UUID: a.Superblock().ArrayUUID.String(),
		PID: os.Getpid(), PIDStart: processStart(os.Getpid()), Exe: executable(),
		Members: members, Options: opts, Supervised: cfg.Supervised,
		Unclean: a.Unclean(),
	}
}

// ZeroCopyEnv chooses the daemon's zero-copy mode (auto, off or register; see ublk.ZeroCopy), for
// tests and for measuring the copy against zero copy.
const ZeroCopyEnv = "URAID_ZERO_COPY"

// BatchIOEnv chooses whether the daemon uses the batch I/O commands (off, the default, or auto;
// see ublk.BatchIO), for tests and for measuring one against the other.
const BatchIOEnv = "URAID_BATCH_IO"

func zeroCopyOption() (ublk.ZeroCopy, error) {
	zc, err := ublk.ParseZeroCopy(os.Getenv(ZeroCopyEnv))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ZeroCopyEnv, err)
	}
	return zc, nil
}

// deviceOptions asks for user recovery, with reissue, wherever the driver has them, and the
// zero-copy mode URAID_ZERO_COPY and the batch I/O choice URAID_BATCH_IO make.
func deviceOptions(o array.Options) (ublk.Options, error) {
	zc, err := zeroCopyOption()
	if err != nil {
		return ublk.Options{}, err
	}
	bio, err := ublk.ParseBatchIO(os.Getenv(BatchIOEnv))
	if err != nil {
		return ublk.Options{}, fmt.Errorf("%s: %w", BatchIOEnv, err)
	}
	uo := ublk.Options{Queues: o.Queues, Depth: o.Depth, ZeroCopy: zc, BatchIO: bio}
	feat, err := ublk.KernelFeatures()
	if err != nil {
		return uo, err
	}
	uo.UserRecovery = feat.Has(ublk.FeatureUserRecovery)
	uo.ReissueOnRecovery = feat.Has(ublk.FeatureUserRecovery|ublk.FeatureReissue) && os.Getenv(envNoReissue) != "1"
	return uo, nil
}

// startNew adds and starts a device for a, writing the record before the device exists so that
// it never exists without one. A new array takes the lowest free device number; one created
// again (reuse) keeps its recorded number.
func startNew(a *array.Array, uo ublk.Options, rec *Record, reuse bool) (device, error) {
	taken := map[uint32]bool{}
	for attempt := 0; ; attempt++ {
		id := rec.DeviceID
		if !reuse {
			var err error
			if id, err = freeDeviceID(rec.Name, taken); err != nil {
				return nil, err
			}
		}
		rec.DeviceID, rec.Device = id, ublk.BlockPath(id)
		if err := writeRecord(rec); err != nil {
			return nil, err
		}
		uo.ID, uo.FixedID = id, true
		dev, err := ublk.New(a, uo)
		if err != nil {
			_ = removeRecord(rec.Name)
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		err = dev.Start(ctx)
		cancel()
		if err == nil {
			rec.Reissue = dev.Flags().Reissue()
			return dev, writeRecord(rec)
		}
		// Start removed what it made; the record goes with it unless the device stayed.
		if deviceGone(id) {
			_ = removeRecord(rec.Name)
		}
		if errors.Is(err, unix.EEXIST) && !reuse && attempt < 16 {
			taken[id] = true // another array took it meanwhile
			continue
		}
		return nil, err
	}
}
