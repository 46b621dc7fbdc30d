package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"uraid/ublk"
)

// Entry is one array, or one ublk device left without a daemon, as list and status show them.
type Entry struct {
	// Name is the array's; empty for a device no record names (an orphan).
	Name string
	// Status is what the array's daemon answers; nil when none does.
	Status *Status
	// Err is why no daemon answered, for an array that has a socket or a record.
	Err error
	// Record is the array's record, if it has one.
	Record *Record
	// Device is the kernel's view of the device the record names, or of an orphan; nil when
	// the kernel has no such device (DeviceErr wraps ENODEV) or cannot be asked (DeviceErr says
	// why).
	Device    *ublk.DeviceInfo
	DeviceErr error
}

// Orphaned reports whether the entry is a device whose daemon is gone: the device waits
// (quiesced) for uraid recover, or is a leftover for uraid stop.
func (e *Entry) Orphaned() bool { return e.Status == nil && e.Device != nil }

// Describe says, for an entry no daemon answers for, what is left and what to do.
func (e *Entry) Describe() string {
	switch {
	case e.Name == "" && e.Device != nil:
		return fmt.Sprintf("%s orphan (no daemon, no record): uraid stop %s removes it", e.Device.State, e.Device.Path())
	case e.Record != nil && e.Device != nil:
		return fmt.Sprintf("%s: daemon %d %s; uraid recover %s takes it over", e.Device.State, e.Record.PID, e.Record.deathNote(), e.Name)
	case e.Record != nil && e.DeviceErr != nil && !errors.Is(e.DeviceErr, unix.ENODEV):
		return fmt.Sprintf("not answering: daemon %d %s, and the kernel cannot say whether %s is there: %v", e.Record.PID, e.Record.deathNote(), e.Record.Device, e.DeviceErr)
	case e.Record != nil:
		return fmt.Sprintf("not running: daemon %d %s and its device %s is gone; assemble it again", e.Record.PID, e.Record.deathNote(), e.Record.Device)
	case e.Err != nil:
		return "not answering: " + e.Err.Error()
	}
	return "not answering"
}

// Leftover describes an entry no daemon answers for; see Leftover.
func (e *Entry) Leftover() Leftover {
	l := Leftover{Schema: Schema, Name: e.Name, State: LeftUnknown, Orphan: e.Name == "", Message: e.Describe()}
	if e.Record != nil {
		l.Device, l.PID, l.DaemonRunning = e.Record.Device, e.Record.PID, e.Record.running()
		if errors.Is(e.DeviceErr, unix.ENODEV) {
			l.State = LeftGone
		}
	}
	if e.Device != nil {
		l.Device, l.State = e.Device.Path(), e.Device.State
	}
	return l
}

// Inventory lists every array that has a daemon, a socket or a record, sorted by name, then
// the ublk devices whose server is gone and which no record names.
func Inventory(ctx context.Context) ([]Entry, error) {
	names, err := Running()
	if err != nil {
		return nil, err
	}
	recs, _ := Records()
	byName := map[string]*Record{}
	for i := range recs {
		byName[recs[i].Name] = &recs[i]
		if !slices.Contains(names, recs[i].Name) {
			names = append(names, recs[i].Name)
		}
	}
	slices.Sort(names)
	var out []Entry
	named := map[uint32]bool{}
	for _, n := range names {
		e := lookup(ctx, n, byName[n])
		if e.Record != nil {
			named[e.Record.DeviceID] = true
		}
		out = append(out, e)
	}
	ids, _ := ublk.List()
	for _, id := range ids {
		if named[id] {
			continue
		}
		info, err := ublk.Info(id)
		if err != nil || (info.PID > 0 && processRunning(info.PID, 0)) {
			continue // gone meanwhile, or served: not ours to judge
		}
		out = append(out, Entry{Device: &info})
	}
	return out, nil
}

// Lookup is the entry of the array called name.
func Lookup(ctx context.Context, name string) Entry {
	var rec *Record
	if r, err := ReadRecord(name); err == nil {
		rec = &r
	}
	return lookup(ctx, name, rec)
}

func lookup(ctx context.Context, name string, rec *Record) Entry {
	e := Entry{Name: name, Record: rec}
	var st Status
	if err := NewClient(name).Status(ctx, &st); err == nil {
		e.Status = &st
		return e
	} else {
		e.Err = err
	}
	if rec != nil {
		info, err := ublk.Info(rec.DeviceID)
		if err == nil {
			e.Device = &info
		}
		e.DeviceErr = err
	}
	return e
}

// CheckFree refuses a name that create or assemble cannot start an array under: one that runs,
// or whose device a dead daemon left behind (it waits for uraid recover). A record whose daemon
// and device are both gone is dropped.
func CheckFree(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	e := Lookup(ctx, name)
	switch {
	case e.Status != nil:
		return fmt.Errorf("array %s is already running; stop it first (uraid stop %s) or pick another name", name, name)
	case e.Record == nil:
		return nil
	case e.Record.running():
		return fmt.Errorf("array %s is already running (pid %d, not answering yet); stop it first (uraid stop %s) or pick another name", name, e.Record.PID, name)
	case e.Device != nil:
		return leftDeviceError(name, e.Record, *e.Device)
	case !errors.Is(e.DeviceErr, unix.ENODEV):
		return fmt.Errorf("array %s has a record (%s) and the kernel cannot say whether its device %s is still there: %w", name, RecordPath(name), e.Record.Device, e.DeviceErr)
	}
	return removeRecord(name)
}

// Recoverable reports whether name has a record whose device a new daemon can take over or
// create again: the array's daemon is gone or handing over.
func Recoverable(name string) bool {
	rec, err := ReadRecord(name)
	return err == nil && rec.Version >= 1 && (!rec.running() || rec.Handover)
}

// StopResult says what Stop did.
type StopResult struct {
	// Orphan is set when no daemon served the device: Stop removed what a dead one left.
	Orphan bool
	// Device is the device removed; PID the dead daemon's, for an orphan.
	Device string
	PID    int
}

// Stop stops the array called target, or the array or leftover device whose path target is
// (/dev/ublkbN). A running daemon stops its array (and refuses while the device is open); for
// a dead one, Stop removes the device it left, unless something has it open, and its record.
func Stop(ctx context.Context, target string) (StopResult, error) {
	name := target
	if strings.HasPrefix(target, "/") {
		rec, id, err := recordOfDevice(target)
		if err != nil {
			return StopResult{}, err
		}
		if rec == nil {
			if err := ublk.RemoveOrphan(id); err != nil {
				return StopResult{}, stopOrphanError(target, err)
			}
			return StopResult{Orphan: true, Device: target}, nil
		}
		name = rec.Name
	}
	err := NewClient(name).Stop(ctx)
	if err == nil || !errors.Is(err, ErrNotRunning) {
		return StopResult{}, err
	}
	rec, rerr := ReadRecord(name)
	if rerr != nil {
		return StopResult{}, err
	}
	if rec.running() {
		return StopResult{}, fmt.Errorf("array %s: its daemon (pid %d) runs but does not answer on %s; if it hangs, kill it and try again", name, rec.PID, SocketPath(name))
	}
	if err := ublk.RemoveOrphan(rec.DeviceID); err != nil && !errors.Is(err, unix.ENODEV) {
		if errors.Is(err, ublk.ErrBusy) {
			return StopResult{}, fmt.Errorf("array %s: its daemon (pid %d) %s; refusing to remove %s: %w; to carry on, take it over with uraid recover %s",
				name, rec.PID, rec.deathNote(), rec.Device, err, name)
		}
		return StopResult{}, fmt.Errorf("array %s: its daemon (pid %d) is gone; removing the device %s it left: %w", name, rec.PID, rec.Device, err)
	}
	if err := removeRecord(name); err != nil {
		return StopResult{}, err
	}
	return StopResult{Orphan: true, Device: rec.Device, PID: rec.PID}, nil
}

func stopOrphanError(path string, err error) error {
	switch {
	case errors.Is(err, ublk.ErrDaemonAlive):
		return fmt.Errorf("%s is served by a running process that is not a uraid array's daemon: %w", path, err)
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("%s: no such ublk device", path)
	}
	return err
}

// recordOfDevice finds the record of the device at path (/dev/ublkbN), or returns its number
// when no record names it.
// RecordOfDevice is the record of the array served on path (/dev/ublkbN), nil when none names it.
func RecordOfDevice(path string) (*Record, error) {
	rec, _, err := recordOfDevice(path)
	return rec, err
}

func recordOfDevice(path string) (*Record, uint32, error) {
	base := path[strings.LastIndexByte(path, '/')+1:]
	v, err := strconv.ParseUint(strings.TrimPrefix(base, "ublkb"), 10, 32)
	if !strings.HasPrefix(base, "ublkb") || err != nil {
		return nil, 0, fmt.Errorf("%s is not a ublk block device (/dev/ublkbN); name the array instead", path)
	}
	id := uint32(v)
	recs, _ := Records()
	for i := range recs {
		if recs[i].DeviceID == id {
			return &recs[i], id, nil
		}
	}
	return nil, id, nil
}

// WaitNewDaemon waits until the array called name answers from a daemon other than pid, and
// returns its status: the successor of a hand-over that a supervisor starts.
func WaitNewDaemon(ctx context.Context, name string, pid int) (Status, error) {
	for {
		var st Status
		if err := NewClient(name).Status(ctx, &st); err == nil && st.PID != pid {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return Status{}, fmt.Errorf("array %s: no new daemon answered after the hand-over (is its supervisor running uraid assemble --recover?): %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Restart hands the device of the running array called name over to a new daemon without the
// device going away (a live upgrade): the daemon finishes the requests it holds and exits, and
// the successor, started by spawn (with the binary now on disk) or, for a supervised daemon, by
// its supervisor, takes the device over. It returns the device.
func Restart(ctx context.Context, name string, spawn func() (string, error)) (string, error) {
	return handOver(ctx, name, func() error { return NewClient(name).Handover(ctx) }, spawn)
}

// handOver has the daemon of the array called name hand its device over (ask) and starts its
// successor, as Restart describes.
func handOver(ctx context.Context, name string, ask func() error, spawn func() (string, error)) (string, error) {
	var st Status
	if err := NewClient(name).Status(ctx, &st); err != nil {
		return "", err
	}
	rec, err := ReadRecord(name)
	if err != nil {
		return "", err
	}
	if err := ask(); err != nil {
		if rec.running() {
			return "", err // refused: the daemon serves on
		}
		// The daemon died on the way out: its device waits for a successor all the same.
		slog.Warn("hand-over failed; recovering", "array", name, "err", err)
	}
	if rec.Supervised {
		st, err := WaitNewDaemon(ctx, name, st.PID)
		return st.Device, err
	}
	return spawn()
}

// HolderOf names the array whose record lists the device at path (by the file it is, whatever
// its name) while the array runs or a dead daemon's device waits for uraid recover, and says
// which; "" when none does. A member a running daemon serves is also claimed (OpenMember), but
// one of an array waiting for recovery is not: only the record tells.
func HolderOf(ctx context.Context, path string) (name, how string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	entries, err := Inventory(ctx)
	if err != nil {
		return "", "", err
	}
	for _, e := range entries {
		if e.Record == nil || (e.Status == nil && e.Device == nil) {
			continue
		}
		for _, m := range e.Record.Members {
			if mi, err := os.Stat(m); err == nil && os.SameFile(fi, mi) {
				if e.Status != nil {
					return e.Name, "running", nil
				}
				return e.Name, "its daemon died and its device waits for uraid recover " + e.Name, nil
			}
		}
	}
	return "", "", nil
}
