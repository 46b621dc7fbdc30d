// Package daemon runs one array per process and lets other processes talk to it.
//
// A daemon serves its array's ublk device until the array is stopped, the device is handed over
// to a successor, or the device fails. It listens on a unix socket, RunDir()/NAME.sock (mode
// 0600: only root may ask), and answers HTTP there: GET /status (the array's status as JSON),
// GET /metrics (Prometheus text format), POST /stop (refused while the device is open) and POST
// /handover (drain and leave the device to a successor). `uraid create` and `uraid assemble`
// start the daemon detached from the terminal and wait on a readiness pipe, so they print the
// device path only once the device is usable, or the daemon's own error if it failed.
//
// Devices outlive their daemon: they are created with the kernel's user recovery, so a daemon
// that dies leaves its device quiesced, and Recover starts a successor on it from the array's
// record, RunDir()/NAME.json (record.go), which exists exactly as long as the device does.
//
// A daemon's life is split by concern: run.go starts it on a new device (Run), recover.go on
// what a predecessor left (Recover), devices.go numbers and checks the kernel's devices for a
// start, served.go serves until a stop or a failure, and handover.go leaves the device to a
// successor. workdir.go moves a started daemon to /; logsink.go chooses where it logs: the
// journal (journal.go, journald's native protocol), a rotated log file, or stderr; notify.go
// tells systemd it is ready and how the array is (sd_notify). metrics_host.go serves every
// running array's metrics at one address (uraid metrics), asking each daemon at each scrape.
//
// Client is safe for concurrent use. Run or Recover, and Spawn, are called once per process.
//
// The daemon owns a process's lifecycle around one array: device, socket, signals, record,
// metrics and events. It does not touch the array's data path or metadata (package array does,
// and raid below it): every change to members, sync jobs or the device's contents goes through
// array's exported calls, so that a daemon and the robustness harness drive the same code.
package daemon
