package daemon

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

	"uraid/internal/clock"
	"uraid/raid"
	"uraid/ublk"
)

// Serving defaults: one queue per CPU as the kernel's blk-mq expects, deep enough for NVMe.
const (
	DefaultQueues = 0 // one per CPU
	DefaultDepth  = 128
)

const (
	// startTimeout bounds how long a device may take to appear before the start counts as
	// failed.
	startTimeout = 60 * time.Second
	// recoverTimeout bounds the wait for what a dead daemon leaves behind to come free: its
	// process, its member files (held until its last I/O ends), its device (until the kernel
	// has quiesced it).
	recoverTimeout = 3 * time.Minute
)

// Config says how a daemon serves its array.
type Config struct {
	// Members are the member paths as create or assemble were given them (spares among them),
	// which a successor assembles from; when empty, the array's members in their slots.
	Members []string
	// Options are the array's serving options; Run records them for its successors.
	Options raid.Options
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
func Run(a *raid.Array, cfg Config, n *Notifier, onReady func(device string)) (err error) {
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
	s.started = raid.Event{Type: EventStarted, Message: "serving " + dev.Path()}
	ready = true
	return s.serve(srv, sigs, n, onReady)
}

// Recover brings back the array called name on the device its dead (or departing) daemon left,
// from the record that daemon kept: the same members, options and /dev/ublkbN. A quiesced device
// is taken over (START/END_USER_RECOVERY): whatever has it open or mounted carries on, and the
// requests the dead daemon held are reissued to this one where the device has
// UBLK_F_USER_RECOVERY_REISSUE. A device the kernel no longer has, or has stopped, is created
// again under the same number. Unless the predecessor handed over cleanly, the array counts as
// unclean: writes it had in flight may have reached some copies only. Then it serves as Run does.
func Recover(name string, cfg Config, n *Notifier, onReady func(device string)) (err error) {
	var a *raid.Array
	ready := false
	defer func() {
		if !ready {
			if a != nil {
				a.Close()
			}
			n.Failed(err)
		}
	}()
	sigs := notifySignals()
	defer signal.Stop(sigs)
	log := cfg.logger().With("array", name)

	rec, err := ReadRecord(name)
	if err != nil {
		return err
	}
	if rec.Version < 1 {
		return fmt.Errorf("array %s: its record was written by an older uraid and does not say enough to recover the device; stop it (uraid stop %s) and assemble it again", name, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	defer cancel()
	if err := waitPredecessor(ctx, &rec); err != nil {
		return err
	}
	srv, err := Listen(name)
	if err != nil {
		return err
	}
	defer srv.Close()
	info, takeover, err := recoverableDevice(ctx, &rec)
	if err != nil {
		return err
	}
	opts := rec.Options.raidOptions()
	opts.Log = cfg.logger()
	if takeover {
		// The array's per-queue state must match the queues the kernel made.
		opts.Queues, opts.Depth = info.Queues, info.Depth
	}
	if a, err = assembleRecorded(ctx, &rec, opts); err != nil {
		return err
	}
	pauseAt(log, name, pauseMembers)

	// The superblocks of a running array always say dirty; what the predecessor did says more.
	unclean := rec.Unclean || !rec.Handover || (!takeover && a.Unclean())
	a.SetUnclean(unclean)
	lastExit := predecessorExit(&rec)
	rec.PID, rec.PIDStart, rec.Exe = os.Getpid(), processStart(os.Getpid()), executable()
	rec.Supervised, rec.Handover, rec.Unclean = cfg.Supervised, false, unclean
	rec.LastExit, rec.Failure = lastExit, ""
	if takeover {
		rec.Recoveries++
	}
	// Written before the device serves a request: if this daemon dies too, the next one must not
	// take the predecessor's clean hand-over for this daemon's.
	if err := writeRecord(&rec); err != nil {
		return err
	}
	if err := a.MarkDirty(); err != nil {
		return fmt.Errorf("array %s: mark members in use: %w", name, err)
	}
	var dev device
	if takeover {
		d, err := ublk.NewRecovery(a, rec.DeviceID, ublk.Options{Queues: opts.Queues, Depth: opts.Depth,
			BeforeEndRecovery: func() { pauseAt(log, name, pauseFetching) }})
		if err != nil {
			return fmt.Errorf("array %s: %w", name, err)
		}
		sctx, scancel := context.WithTimeout(ctx, startTimeout)
		err = d.Start(sctx)
		scancel()
		if err != nil {
			return fmt.Errorf("array %s: take over %s: %w", name, rec.Device, err)
		}
		dev = d
		log.Info("took over the device", "device", rec.Device, "predecessor", lastExit)
	} else {
		uo, err := deviceOptions(opts)
		if err != nil {
			return fmt.Errorf("array %s: %w", name, err)
		}
		if dev, err = startNew(a, uo, &rec, true); err != nil {
			return fmt.Errorf("array %s: %w", name, err)
		}
		log.Info("the device was gone; created it again", "device", rec.Device, "predecessor", lastExit)
	}
	rec.Reissue = dev.Flags().Reissue()
	if err := writeRecord(&rec); err != nil {
		log.Error("record not written", "err", err)
	}
	if cfg.MetricsListen == "" {
		cfg.MetricsListen = rec.Options.MetricsListen
	}
	s := newServed(a, dev, &rec, cfg)
	if takeover {
		s.started = raid.Event{Type: EventRecovered, Message: fmt.Sprintf("took over %s (%s)", rec.Device, lastExit)}
	} else {
		s.started = raid.Event{Type: EventRecreated, Message: fmt.Sprintf("%s was gone (%s); created it again", rec.Device, lastExit)}
	}
	if cfg.MetricsListen != "" {
		// The predecessor may hold the port until it has exited: bind in the background.
		s.metrics = &metricsServer{addr: cfg.MetricsListen}
		defer s.metrics.Close()
	}
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

func newRecord(a *raid.Array, cfg Config) *Record {
	members := cfg.Members
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
func deviceOptions(o raid.Options) (ublk.Options, error) {
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
func startNew(a *raid.Array, uo ublk.Options, rec *Record, reuse bool) (device, error) {
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

// freeDeviceID is the lowest device number that neither the kernel nor another array's record
// has, nor taken.
func freeDeviceID(name string, taken map[uint32]bool) (uint32, error) {
	ids, err := ublk.List()
	if err != nil {
		return 0, err
	}
	used := map[uint32]bool{}
	for _, id := range ids {
		used[id] = true
	}
	recs, _ := Records()
	for _, r := range recs {
		if r.Name != name {
			used[r.DeviceID] = true
		}
	}
	for id := uint32(0); id < 1<<20; id++ {
		if !used[id] && !taken[id] {
			return id, nil
		}
	}
	return 0, errors.New("no free ublk device number")
}

// deviceGone reports whether the kernel has no device id.
func deviceGone(id uint32) bool {
	_, err := ublk.Info(id)
	return errors.Is(err, unix.ENODEV)
}

// checkNoDevice refuses to start a new device for an array whose record names a device that
// still exists (its daemon died: the device waits for uraid recover), and drops a record whose
// device and daemon are gone.
func checkNoDevice(name string) error {
	rec, err := ReadRecord(name)
	if errors.Is(err, ErrNoRecord) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.running() && rec.PID != os.Getpid() {
		return fmt.Errorf("array %s is already running (pid %d); stop it first: uraid stop %s", name, rec.PID, name)
	}
	info, err := ublk.Info(rec.DeviceID)
	if errors.Is(err, unix.ENODEV) {
		return removeRecord(name)
	}
	if err != nil {
		return err
	}
	return leftDeviceError(name, &rec, info)
}

// leftDeviceError says that the device of a dead daemon is still there and what to do.
func leftDeviceError(name string, rec *Record, info ublk.DeviceInfo) error {
	what := "is still there"
	if info.State == "quiesced" {
		what = "is quiesced: whatever uses it waits for it"
	}
	return fmt.Errorf("array %s: its daemon (pid %d) %s, and its device %s %s; take it over with uraid recover %s, or remove it with uraid stop %s once nothing uses it",
		name, rec.PID, rec.deathNote(), rec.Device, what, name, name)
}

// deathNote is how a record's daemon ended, as far as the record knows.
func (r *Record) deathNote() string {
	switch {
	case r.Handover:
		return "handed its device over"
	case r.Failure != "":
		return "died: " + r.Failure
	}
	return "died"
}

// predecessorExit is why the daemon the record names ended.
func predecessorExit(rec *Record) string {
	switch {
	case rec.Handover:
		return fmt.Sprintf("daemon %d handed over", rec.PID)
	case rec.Failure != "":
		return fmt.Sprintf("daemon %d failed: %s", rec.PID, rec.Failure)
	}
	return fmt.Sprintf("daemon %d died", rec.PID)
}

// waitPredecessor waits for a daemon that is handing over to be gone, and refuses to recover an
// array whose daemon runs on.
func waitPredecessor(ctx context.Context, rec *Record) error {
	if rec.PID == os.Getpid() || !rec.running() {
		return nil
	}
	if !rec.Handover {
		return fmt.Errorf("array %s is running (pid %d): there is nothing to recover (uraid status %s)", rec.Name, rec.PID, rec.Name)
	}
	for rec.running() {
		if err := clock.SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("array %s: its daemon (pid %d) handed over but does not exit: %w", rec.Name, rec.PID, err)
		}
	}
	return nil
}

// recoverableDevice waits until the recorded device is in a state a new daemon can start from,
// and says whether to take it over (true: quiesced, as info describes it) or to create it again
// (false: gone, or stopped and now deleted).
func recoverableDevice(ctx context.Context, rec *Record) (ublk.DeviceInfo, bool, error) {
	for {
		info, err := ublk.Info(rec.DeviceID)
		switch {
		case errors.Is(err, unix.ENODEV):
			return info, false, nil
		case err != nil:
			return info, false, fmt.Errorf("array %s: %w", rec.Name, err)
		}
		if info.PID > 0 && info.PID != rec.PID && processRunning(info.PID, 0) {
			return info, false, fmt.Errorf("array %s: %s is served by pid %d, which is not the array's daemon; leave it alone", rec.Name, rec.Device, info.PID)
		}
		switch info.State {
		case "quiesced":
			return info, true, nil
		case "dead":
			// Added but never started, or stopped but not deleted: nothing can have it
			// open. Delete it, and create it again under its number.
			if err := ublk.RemoveOrphan(rec.DeviceID); err != nil && !errors.Is(err, unix.ENODEV) {
				return info, false, fmt.Errorf("array %s: remove the dead %s: %w", rec.Name, rec.Device, err)
			}
			continue
		}
		// Live without a server: the kernel has yet to quiesce it (or, without user recovery,
		// to remove it).
		if err := clock.SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return info, false, fmt.Errorf("array %s: %s stays %s after its daemon died: %w", rec.Name, rec.Device, info.State, err)
		}
	}
}

// assembleRecorded assembles the recorded members with options o (the recorded ones). A member
// the dead daemon had stopped using is stale and stays out (the array ran without it); members
// its last I/O still holds are waited for.
func assembleRecorded(ctx context.Context, rec *Record, o raid.Options) (*raid.Array, error) {
	o.Degraded = true
	for {
		a, err := raid.Assemble(rec.Name, rec.Members, o)
		if err == nil {
			if u := a.Superblock().ArrayUUID.String(); rec.UUID != "" && u != rec.UUID {
				a.Close()
				return nil, fmt.Errorf("array %s: its members now hold array %s, not %s that the device served: leave the device alone (uraid stop %s removes it)", rec.Name, u, rec.UUID, rec.Name)
			}
			return a, nil
		}
		if !errors.Is(err, raid.ErrMemberBusy) {
			return nil, err
		}
		if serr := clock.SleepCtx(ctx, 10*time.Millisecond); serr != nil {
			return nil, fmt.Errorf("%w (the dead daemon's I/O still holds it: %v)", err, serr)
		}
	}
}
