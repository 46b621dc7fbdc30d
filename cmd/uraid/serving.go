package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
)

// serveFlags are how create and assemble pass serving choices on to the daemon.
type serveFlags struct {
	discard    string
	inflight   string
	exclusive  memberList
	minGap     time.Duration
	queues     int
	depth      int
	metrics    string
	foreground bool
	logFormat  string
	// log is the daemon's logger, made once (logger).
	log *slog.Logger
}

func (f *serveFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.discard, "discard", "sync", "when a discard completes: sync (once every member trimmed) or async (once queued on every member)")
	fl.StringVar(&f.inflight, "trim-inflight", "", "TRIMs each member runs at once: N for every member, or MEMBER=N,... for some; 0 or\nunset: learned, starting from 1 for files and exclusive members, 4 for other block\ndevices. Set, it overrides what is learned")
	fl.Var(&f.exclusive, "trim-exclusive", "members whose TRIMs stall their reads and writes, e.g. a SATA SSD behind a USB or SAS\nbridge: they run one TRIM at a time (unless --trim-inflight says otherwise) and let reads\nand writes go first. Without it exclusivity is learned by measurement, starting from\nrotational members and members on a SATA/ATA port. Set, it overrides what is learned")
	fl.DurationVar(&f.minGap, "trim-gap", 0, "least time between two TRIMs on one member, for drives that penalise back-to-back TRIMs;\n0: learned by measurement. Set, it overrides what is learned")
	fl.IntVar(&f.queues, "queues", daemon.DefaultQueues, "ublk queues (0: one per CPU)")
	fl.IntVar(&f.depth, "depth", daemon.DefaultDepth, "requests in flight per queue")
	fl.StringVar(&f.metrics, "metrics-listen", "", "also serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9105 (default: off;\nthey are always on the control socket)")
	fl.BoolVar(&f.foreground, "foreground", false, "serve from this process until stopped (for systemd) instead of a background daemon")
	fl.StringVar(&f.logFormat, "log-format", daemon.LogText, "how the daemon logs its events where it writes text (stderr, or its log file without a\njournal): text (key=value) or json; the journal takes them as fields")
}

// check validates the flags and spells the enum flags (--discard, --log-format) the one way the
// daemon and its record keep them: every enum flag of uraid takes its words in any case.
func (f *serveFlags) check() error {
	f.discard = strings.ToLower(strings.TrimSpace(f.discard))
	f.logFormat = strings.ToLower(strings.TrimSpace(f.logFormat))
	if _, err := array.ParseDiscardMode(f.discard); err != nil {
		return usageError{err}
	}
	if _, _, err := parseInFlight(f.inflight); err != nil {
		return usageError{err}
	}
	if _, err := daemon.NewLogger(io.Discard, f.logFormat); err != nil {
		return usageError{fmt.Errorf("--log-format: %w", err)}
	}
	if f.minGap < 0 || f.queues < 0 || f.depth < 1 || f.depth > 4096 {
		return usageError{fmt.Errorf("--trim-gap and --queues must not be negative, --depth must be 1 to 4096")}
	}
	if err := daemon.CheckMetricsListen(f.metrics); err != nil {
		return usageError{err}
	}
	return nil
}

// memberList is a flag of member paths, MEMBER[,MEMBER...], that may be given more than once.
type memberList []string

func (l *memberList) String() string { return strings.Join(*l, ",") }
func (l *memberList) Type() string   { return "MEMBER,..." }

func (l *memberList) Set(s string) error {
	ps := strings.Split(s, ",")
	for _, p := range ps {
		if p == "" {
			return fmt.Errorf("empty member name in %q: give member paths separated by commas, e.g. /dev/sda,/dev/sdb", s)
		}
	}
	*l = append(*l, ps...)
	return nil
}

// parseInFlight reads --trim-inflight: "" or "0" (the defaults), "N" (every member) or
// "PATH=N,PATH=N".
func parseInFlight(s string) (all int, per map[string]int, err error) {
	if s == "" || s == "0" {
		return 0, nil, nil
	}
	bad := fmt.Errorf("--trim-inflight %q: give a count from 1 to 64 for every member (0 for the defaults), or MEMBER=COUNT,... e.g. /dev/sda=1,/dev/nvme0n1=8", s)
	count := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 1 && n <= 64
	}
	if n, ok := count(s); ok {
		return n, nil, nil
	}
	per = map[string]int{}
	for _, kv := range strings.Split(s, ",") {
		path, v, found := strings.Cut(kv, "=")
		n, ok := count(v)
		if !found || !ok || path == "" {
			return 0, nil, bad
		}
		per[path] = n
	}
	return 0, per, nil
}

func (f *serveFlags) options(degraded bool) array.Options {
	q := f.queues
	if q == 0 {
		q = numCPU()
	}
	all, per, _ := parseInFlight(f.inflight) // checked by check
	return array.Options{Queues: q, Depth: f.depth, Degraded: degraded,
		Discard: array.DiscardOptions{Mode: f.discard, InFlight: all, MemberInFlight: per,
			Exclusive: f.exclusive, MinGap: f.minGap}, Log: f.logger()}
}

// args renders the flags for the detached `uraid serve`.
func (f *serveFlags) args() []string {
	args := []string{"--discard", f.discard, "--trim-inflight=" + f.inflight,
		"--trim-gap", f.minGap.String(), fmt.Sprintf("--queues=%d", f.queues), fmt.Sprintf("--depth=%d", f.depth),
		"--log-format=" + f.logFormat}
	if len(f.exclusive) > 0 {
		args = append(args, "--trim-exclusive="+f.exclusive.String())
	}
	if f.metrics != "" {
		args = append(args, "--metrics-listen="+f.metrics)
	}
	return args
}

// spawnTimeout bounds the wait for a detached daemon to say its device is usable; a recovering
// one may first wait for its predecessor's last I/O.
const spawnTimeout = 5 * time.Minute

// serveDetached starts `uraid serve` for the array in the background and prints its device once
// it is usable.
func serveDetached(cmd *cobra.Command, name string, members []string, f *serveFlags, degraded bool) error {
	args := append([]string{"serve", name}, f.args()...)
	if degraded {
		args = append(args, "--degraded")
	}
	return spawnDaemon(cmd, name, append(append(args, "--"), members...))
}

// recoverDetached starts `uraid serve --recover` for the array in the background and prints its
// device once the new daemon serves it.
func recoverDetached(cmd *cobra.Command, name string) error {
	return spawnDaemon(cmd, name, []string{"serve", "--recover", name})
}

func spawnDaemon(cmd *cobra.Command, name string, args []string) error {
	dev, err := spawn(name, args)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), dev)
	return err
}

// spawn starts this binary, as it is on disk now, as the array's daemon.
func spawn(name string, args []string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return daemon.Spawn(name, exe, args, spawnTimeout)
}

// supervised says a supervisor runs this foreground daemon and restarts it when it fails: systemd
// gives Type=notify services NOTIFY_SOCKET.
func (f *serveFlags) supervised() bool { return f.foreground && os.Getenv("NOTIFY_SOCKET") != "" }

// serveHere runs the array in this process until it is stopped.
// started, when not nil, hears that the device is usable.
func serveHere(cmd *cobra.Command, a *array.Array, members []string, f *serveFlags, n *daemon.Notifier, degraded bool, started func()) error {
	if n == nil {
		n = daemon.NewNotifier()
	}
	cfg := daemon.Config{Members: members, Options: f.options(degraded), Supervised: f.supervised(), MetricsListen: f.metrics, Log: f.daemonLogger()}
	ready := printDevice(cmd, f)
	if started != nil {
		ready = func(dev string) { started(); printDevice(cmd, f)(dev) }
	}
	return daemonExit(daemon.Run(a, cfg, n, ready))
}

// recoverHere takes the array's device over from this process and serves it until it is stopped.
func recoverHere(cmd *cobra.Command, name string, f *serveFlags, n *daemon.Notifier) error {
	if n == nil {
		n = daemon.NewNotifier()
	}
	return daemonExit(daemon.Recover(name, daemon.Config{Supervised: f.supervised(), MetricsListen: f.metrics, Log: f.daemonLogger()}, n, printDevice(cmd, f)))
}

// logger is the daemon's log, of its events and its array's messages: the journal where there
// is one, else the log file of a detached daemon, else stderr (daemon.NewDaemonLogger).
func (f *serveFlags) logger() *slog.Logger {
	if f.log != nil {
		return f.log
	}
	l, err := daemon.NewDaemonLogger(f.logFormat)
	if err != nil { // checked by check; the serve command skips that
		l, _ = daemon.NewLogger(os.Stderr, daemon.LogText)
	}
	f.log = l
	return l
}

// daemonLogger is logger, made the default too as this process becomes the daemon: whatever
// logs to slog.Default() goes to the same place.
func (f *serveFlags) daemonLogger() *slog.Logger {
	l := f.logger()
	slog.SetDefault(l)
	return l
}

func printDevice(cmd *cobra.Command, f *serveFlags) func(string) {
	return func(dev string) {
		if f.foreground {
			fmt.Fprintln(cmd.OutOrStdout(), dev)
		}
	}
}

// daemonExit turns the end of a daemon into the command's: a supervised daemon that handed its
// device over exits with exitHandover, which its supervisor takes for a failure to restart.
func daemonExit(err error) error {
	if errors.Is(err, daemon.ErrRestartMe) {
		return exitCode(exitHandover)
	}
	return err
}
