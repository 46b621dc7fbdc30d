package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"uraid/array"
)

// The record of an array, RunDir()/NAME.json, is what a daemon that dies leaves for the one that
// takes its device over: which device, which members, with which options, and whether the copies
// can be trusted to agree. It is written before the device exists and removed only once the
// device is gone, so that no live device is ever without one; every write replaces it whole
// (temporary file, fsync, rename, fsync of the directory), so a crash leaves the old record or
// the new, never a mix.

// RecordVersion is the format of the records this uraid writes. It reads records of this version
// and the unversioned ones (0) older uraids left, which name a device to clean up but not enough
// to recover it.
const RecordVersion = 1

// Record is the persistent state of an array that has a device.
type Record struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	// UUID is the array's, from its superblocks: recovery checks the members still hold it.
	UUID string `json:"uuid,omitempty"`
	// PID is the daemon serving the device, or the last one that did; PIDStart its start time
	// (clock ticks after boot, /proc/PID/stat), so that a reused PID is not taken for it.
	PID      int    `json:"pid"`
	PIDStart uint64 `json:"pid_start,omitempty"`
	// Exe is the binary the daemon runs.
	Exe      string `json:"exe,omitempty"`
	DeviceID uint32 `json:"device_id"`
	Device   string `json:"device"`
	// Members are the paths of the members the daemon serves, missing ones left out.
	Members []string        `json:"members"`
	Options RecordedOptions `json:"options"`
	// Reissue says the device hands the requests a dead daemon held to its successor
	// (UBLK_F_USER_RECOVERY_REISSUE); without it they fail when the daemon dies.
	Reissue bool `json:"reissue"`
	// Supervised says the daemon serves in the foreground for a supervisor that restarts it
	// when it exits with a failure (systemd, Type=notify).
	Supervised bool `json:"supervised,omitempty"`
	// Handover is set by a daemon that finished every request it had started and left the
	// device to a successor: nothing was in flight, so the copies agree.
	Handover bool `json:"handover,omitempty"`
	// Unclean is the array's own unclean flag (array.Array.Unclean) as its daemon last knew it.
	Unclean bool `json:"unclean,omitempty"`
	// Failure is why the daemon PID names gave up its device, written just before it exited;
	// empty if it was killed.
	Failure string `json:"failure,omitempty"`
	// Recoveries counts the daemons that took the device over since it was created.
	Recoveries int `json:"recoveries,omitempty"`
	// LastExit is why the daemon before PID ended without stopping the device.
	LastExit string    `json:"last_exit,omitempty"`
	Updated  time.Time `json:"updated"`
}

// RecordedOptions are the options an array was created or assembled with, which its successor
// serves it with.
type RecordedOptions struct {
	Queues             int            `json:"queues"`
	Depth              int            `json:"depth"`
	Degraded           bool           `json:"degraded,omitempty"`
	DiscardMode        string         `json:"discard_mode"`
	TrimInFlight       int            `json:"trim_inflight,omitempty"`
	TrimMemberInFlight map[string]int `json:"trim_member_inflight,omitempty"`
	TrimExclusive      []string       `json:"trim_exclusive,omitempty"`
	TrimGapNanos       int64          `json:"trim_gap_ns,omitempty"`
	// MetricsListen is the TCP address the daemon serves GET /metrics on too.
	MetricsListen string `json:"metrics_listen,omitempty"`
	// ReshapeMaxRate caps the reshape a hand-over started (uraid grow --add --max-rate), in
	// array bytes moved per second, for the daemons that serve it until it is done.
	ReshapeMaxRate int64 `json:"reshape_max_rate_bytes_per_s,omitempty"`
}

func recordOptions(o array.Options) RecordedOptions {
	return RecordedOptions{
		Queues: o.Queues, Depth: o.Depth, Degraded: o.Degraded, DiscardMode: o.Discard.Mode,
		TrimInFlight: o.Discard.InFlight, TrimMemberInFlight: o.Discard.MemberInFlight,
		TrimExclusive: o.Discard.Exclusive, TrimGapNanos: int64(o.Discard.MinGap), ReshapeMaxRate: o.ReshapeMaxRate,
	}
}

func (r RecordedOptions) raidOptions() array.Options {
	return array.Options{Queues: r.Queues, Depth: r.Depth, Degraded: r.Degraded,
		Discard: array.DiscardOptions{Mode: r.DiscardMode, InFlight: r.TrimInFlight,
			MemberInFlight: r.TrimMemberInFlight, Exclusive: r.TrimExclusive, MinGap: time.Duration(r.TrimGapNanos)},
		ReshapeMaxRate: r.ReshapeMaxRate}
}

// RecordPath is where the record of the array called name lives.
func RecordPath(name string) string { return filepath.Join(RunDir(), name+".json") }

// ErrNoRecord means no record names the array: it was never started on this boot, or was
// stopped.
var ErrNoRecord = errors.New("no record of the array")

// ReadRecord reads the record of the array called name. A missing record is ErrNoRecord.
func ReadRecord(name string) (Record, error) {
	var r Record
	b, err := os.ReadFile(RecordPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("array %s: %w in %s (was it started since boot?)", name, ErrNoRecord, RunDir())
	}
	if err != nil {
		return r, fmt.Errorf("array %s: %w", name, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("array %s: record %s is damaged (%v); remove the device by path (uraid stop /dev/ublkbN) and assemble again", name, RecordPath(name), err)
	}
	if r.Version > RecordVersion {
		return r, fmt.Errorf("array %s: record %s has format %d, newer than this uraid's %d: use the uraid that started the array", name, RecordPath(name), r.Version, RecordVersion)
	}
	if r.Name != name {
		return r, fmt.Errorf("array %s: record %s names array %q", name, RecordPath(name), r.Name)
	}
	return r, nil
}

// Records reads every record in RunDir, sorted by name; unreadable ones come back as errors.
func Records() ([]Record, []error) {
	paths, _ := filepath.Glob(filepath.Join(RunDir(), "*.json"))
	var out []Record
	var errs []error
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		r, err := ReadRecord(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errs
}

// writeRecord replaces the record of r.Name whole.
func writeRecord(r *Record) error {
	r.Version, r.Updated = RecordVersion, time.Now().UTC()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(RunDir(), 0o755); err != nil {
		return fmt.Errorf("array %s: record: %w", r.Name, err)
	}
	if err := writeFileAtomic(RecordPath(r.Name), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("array %s: record: %w", r.Name, err)
	}
	return nil
}

// removeRecord removes the record of the array called name; one already gone is no error.
func removeRecord(name string) error {
	if err := os.Remove(RecordPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("array %s: remove record: %w", name, err)
	}
	return syncDir(RunDir())
}

// writeFileAtomic makes path hold data, or leaves it as it was: a reader or a crash never sees
// part of each.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// processStart is the start time of process pid in clock ticks after boot, or 0 if there is no
// such process.
func processStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces and parentheses: fields count from
	// the last ')'. starttime is field 22; the state, field 3, comes first after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(fields[19], 10, 64)
	return v
}

// processRunning reports whether pid is a live process (not a zombie) started at start, or at
// any time when start is 0.
func processRunning(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
		return false
	}
	return start == 0 || processStart(pid) == start
}

// running reports whether the daemon the record names is alive.
func (r *Record) running() bool { return processRunning(r.PID, r.PIDStart) }
