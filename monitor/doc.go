// Package monitor watches running arrays for an operator: it follows the event stream of each
// array's daemon (daemon.Client.Events), finds arrays as they start and notices them go (Scan),
// reports the arrays that need attention once (Oneshot), and runs the operator's program for
// each event, as mdadm --monitor --program does.
//
// Arrays are found the way uraid list finds them: by their control sockets in daemon.RunDir(),
// looked at every Config.Interval. The monitor adds its own events to the daemons' (Event*): an
// array it found started, one that went without a word, a daemon that took over from one it
// lost. Every event it reports carries the JSON schema (daemon.Schema).
//
// The program runs without a shell, one event at a time per array and in the order of that
// array's events; arrays do not wait for each other. A run is bounded by Config.ProgramTimeout
// (then killed, with the processes it started); a failure or a timeout is logged and the monitor
// carries on.
//
// A Monitor is safe for concurrent use: Watch may run for several arrays at once. Close waits
// for the programs it started; nothing may be watched after it.
//
// The monitor only reads: it asks daemons for their events and status and never changes an
// array.
package monitor
