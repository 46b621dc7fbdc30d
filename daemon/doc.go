// Package daemon runs one array per process and lets other processes talk to it.
//
// A daemon owns its array's ublk device for the array's whole life. It listens on a unix socket,
// RunDir()/NAME.sock (mode 0600: only root may ask), and answers HTTP there: GET /status (the
// array's status as JSON), GET /metrics (Prometheus text format) and POST /stop. `uraid create` and
// `uraid assemble` start the daemon detached from the terminal and wait on a readiness pipe, so they
// print the device path only once the device is usable, or the daemon's own error if it failed.
//
// Client is safe for concurrent use. Serve and Spawn are called once per process.
package daemon
