package daemon

import "uraid/raid"

// Status is what a daemon answers on GET /status: the array's status, with the state "failed"
// while its device has failed, and what the daemon knows of its device's recovery.
type Status struct {
	raid.Status
	// Failure says why the device failed (a queue stopped serving); the daemon exits with it,
	// leaving the device for its successor.
	Failure  string         `json:"failure,omitempty"`
	Recovery RecoveryStatus `json:"recovery"`
	// Version is the daemon's build.
	Version string `json:"version,omitempty"`
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
