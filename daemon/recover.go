package daemon

// recover.go owns what a dead or departing daemon leaves behind and how a successor takes it
// up: waiting for the predecessor to be gone, taking its device over (or creating it again
// under its number), assembling its members from the record, and saying how it ended.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"

	"uraid/array"
	"uraid/internal/clock"
	"uraid/raid"
	"uraid/ublk"
)

// recoverTimeout bounds the wait for what a dead daemon leaves behind to come free: its
// process, its member files (held until its last I/O ends), its device (until the kernel
// has quiesced it).
const recoverTimeout = 3 * time.Minute

// Recover brings back the array called name on the device its dead (or departing) daemon left,
// from the record that daemon kept: the same members, options and /dev/ublkbN. A quiesced device
// is taken over (START/END_USER_RECOVERY): whatever has it open or mounted carries on, and the
// requests the dead daemon held are reissued to this one where the device has
// UBLK_F_USER_RECOVERY_REISSUE. A device the kernel no longer has, or has stopped, is created
// again under the same number. Unless the predecessor handed over cleanly, the array counts as
// unclean: writes it had in flight may have reached some copies only. Then it serves as Run does.
func Recover(name string, cfg Config, n *Notifier, onReady func(device string)) (err error) {
	var a *array.Array
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
	// Members recorded by a relative path name files from where recover runs, as they always
	// did; resolved here, before the daemon moves to /.
	if err := leaveWorkingDir(rec.Members); err != nil {
		return fmt.Errorf("array %s: %w", name, err)
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
	sizeNote := ""
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
		sizeNote = growTakenOver(log, d, a, rec.Device)
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
		s.started = array.Event{Type: EventRecovered, Message: fmt.Sprintf("took over %s (%s)%s", rec.Device, lastExit, sizeNote)}
	} else {
		s.started = array.Event{Type: EventRecreated, Message: fmt.Sprintf("%s was gone (%s); created it again", rec.Device, lastExit)}
	}
	if cfg.MetricsListen != "" {
		// The predecessor may hold the port until it has exited: bind in the background.
		s.metrics = &metricsServer{addr: cfg.MetricsListen}
		defer s.metrics.Close()
	}
	ready = true
	return s.serve(srv, sigs, n, onReady)
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
func assembleRecorded(ctx context.Context, rec *Record, o array.Options) (*array.Array, error) {
	o.Degraded = true
	for {
		a, err := array.Assemble(rec.Name, rec.Members, o)
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

// leftDeviceError says that the device of a dead daemon is still there and what to do.
func leftDeviceError(name string, rec *Record, info ublk.DeviceInfo) error {
	what := "is still there"
	if info.State == "quiesced" {
		what = "is quiesced: whatever uses it waits for it"
	}
	return fmt.Errorf("array %s: its daemon (pid %d) %s, and its device %s %s; take it over with uraid recover %s, or remove it with uraid stop %s once nothing uses it",
		name, rec.PID, rec.deathNote(), rec.Device, what, name, name)
}

// growTakenOver tells the kernel the array's size when the device taken over is smaller: the
// array grew in the hand-over (members appended, uraid grow --add) or while the kernel could not
// follow. A kernel without UPDATE_SIZE (before 6.16) keeps the device's size until it is made
// again; the note says so, for the started event.
func growTakenOver(log *slog.Logger, d *ublk.Device, a *array.Array, path string) string {
	have, want := d.KernelSize(), a.Map().Size()
	if have >= want {
		return ""
	}
	if err := d.UpdateSize(want); err != nil {
		log.Warn("the device keeps the array's old size", "device", path, "device_size", have, "array_size", want, "err", err)
		return fmt.Sprintf("; %s keeps %d bytes, the array has %d: %v (unmount it, uraid stop %s, uraid assemble --scan %s)",
			path, have, want, err, a.Name, a.Name)
	}
	log.Info("the device grew to the array's size", "device", path, "old_size", have, "new_size", want)
	return fmt.Sprintf("; %s grew from %d to %d bytes", path, have, want)
}
