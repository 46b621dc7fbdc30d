package daemon

import (
	"uraid/array"
)

// Schema is the version of the JSON that the daemon serves and the CLI prints (status, detail,
// examine, list), carried in every object as "schema". It changes only when a field is renamed,
// removed or changes meaning or type; new fields do not change it. docs/cli.md lists the fields.
const Schema = 1

// Status is what a daemon answers on GET /status: the array's status, with the state "failed"
// while its device has failed, and what the daemon knows of its device's recovery.
type Status struct {
	// Schema comes first so that a reader sees it before anything it may not understand.
	Schema int `json:"schema"`
	array.Status
	// Failure says why the device failed (a queue stopped serving); the daemon exits with it,
	// leaving the device for its successor.
	Failure  string         `json:"failure,omitempty"`
	Recovery RecoveryStatus `json:"recovery"`
	// Version is the daemon's build.
	Version string `json:"version,omitempty"`
	// Cost is what serving has cost so far (system calls per queue, the Go runtime's counters),
	// for benchmarks; absent where no daemon serves.
	Cost *CostStatus `json:"cost,omitempty"`
}

// RecoveryStatus says how the array's device survives its daemon.
type RecoveryStatus struct {
	// Enabled: the device outlives a daemon that dies, quiesced (its I/O waits) until
	// uraid recover takes it over.
	Enabled bool `json:"enabled"`
	// Reissue: requests a dead daemon held go to its successor instead of failing.
	Reissue bool `json:"reissue"`
	// Count is the number of daemons that took the device over since it was created.
	Count int `json:"count"`
	// LastExit is why the daemon before this one ended without stopping the device.
	LastExit string `json:"last_exit,omitempty"`
}

// Leftover is an array, or a ublk device, that no daemon answers for, as `status --json` and
// `list --json` show it beside the running arrays: so that a script sees a dead array instead of
// missing it.
type Leftover struct {
	Schema int `json:"schema"`
	// Name is the array's; empty for an orphan (a device no record names).
	Name string `json:"name,omitempty"`
	// Device is the block device the record names, or the orphan's.
	Device string `json:"device,omitempty"`
	// State is the kernel's state of the device left behind (LeftQuiesced, LeftLive, LeftDead),
	// LeftGone when the kernel no longer has it, or LeftUnknown when there is no record to say
	// which device it was or the kernel cannot be asked.
	State string `json:"state"`
	// PID is the dead (or not answering) daemon's, from the record; 0 without one.
	PID int `json:"pid,omitempty"`
	// DaemonRunning: the record's daemon still runs but does not answer on its socket.
	DaemonRunning bool `json:"daemon_running"`
	// Orphan: no record names the device; uraid stop DEVICE removes it.
	Orphan bool `json:"orphan"`
	// Message says what is left and what to do, as the text views do.
	Message string `json:"message"`
}

// Leftover states, beside the kernel's own ("live", "dead", "quiesced").
const (
	LeftQuiesced = "quiesced"
	LeftLive     = "live"
	LeftDead     = "dead"
	LeftGone     = "gone"
	LeftUnknown  = "unknown"
)
