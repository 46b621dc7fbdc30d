package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/monitor"
)

type monitorOptions struct {
	json           bool
	scan           bool
	oneshot        bool
	program        string
	programTimeout time.Duration
	interval       time.Duration
}

func newMonitorCommand() *cobra.Command {
	var o monitorOptions
	cmd := &cobra.Command{
		Use:   "monitor [NAME]",
		Short: "Print the events of running arrays as they happen",
		Long: `Monitor streams events from the daemon of array NAME, or of every array running when it
starts, one line each, until interrupted or until every watched array has stopped: a member
failing, the array running degraded (or failed), a spare taking a member's place, a resync,
check, repair or rebuild starting, passing each tenth of its work and ending (outcome ok, failed
or cancelled), a daemon taking over a device or handing it over, a stop waiting for the members'
TRIMs. Only events from the moment it connects are shown; a watcher that falls far behind is told
how many events it lost. --json prints each event as one JSON object per line.

--scan runs as a service: it watches every array, picks up arrays as they start (array_started)
and daemons that take over (daemon_recovered), reports arrays that stop and daemons that go
without a stop (daemon_lost), and runs until interrupted. --oneshot reports once the arrays
that need attention (array_degraded, array_failed, daemon_lost) and exits, for cron.

--program PROGRAM runs PROGRAM (no shell) for every event, as mdadm --monitor does, with the
arguments EVENT DEVICE [MEMBER] and the event in URAID_EVENT, URAID_ARRAY, URAID_DEVICE,
URAID_MEMBER, URAID_MEMBER_SLOT and URAID_EVENT_JSON; one run at a time per array, in order, each
killed after --program-timeout. A failing program is logged and the monitor carries on.

The daemons log the same events (docs/cli.md: uraid monitor).`,
		Example: `  uraid monitor
  uraid monitor data --json | jq -r 'select(.type == "member_failed") | .path'
  uraid monitor --scan --program /usr/local/sbin/page-oncall
  uraid monitor --oneshot --program /usr/local/sbin/page-oncall   # from cron`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.scan && o.oneshot:
				return usageError{errors.New("--scan and --oneshot: pick one")}
			case (o.scan || o.oneshot) && len(args) > 0:
				return usageError{errors.New("--scan and --oneshot watch every array: name none")}
			case o.interval != 0 && !o.scan:
				return usageError{errors.New("--interval is --scan's")}
			}
			if o.program != "" {
				// Found now rather than at the first event, when nobody reads the error.
				if _, err := exec.LookPath(o.program); err != nil {
					return fmt.Errorf("--program: %w (give the path of an executable file; it runs without a shell)", err)
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			out := &eventPrinter{w: cmd.OutOrStdout(), json: o.json}
			m := monitor.New(ctx, monitor.Config{Out: out.print, Program: o.program,
				ProgramTimeout: o.programTimeout, Interval: o.interval,
				Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))})
			switch {
			case o.scan:
				err := m.Scan(ctx)
				m.Close() // failures are logged: a service carries on
				return err
			case o.oneshot:
				return errors.Join(m.Oneshot(ctx), m.Close())
			}
			err := watchNamed(ctx, cmd, m, args)
			m.Close() // failures are logged
			return err
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "one JSON object per event and line")
	cmd.Flags().BoolVar(&o.scan, "scan", false, "watch every array, those that start later too, until interrupted")
	cmd.Flags().BoolVar(&o.oneshot, "oneshot", false, "report the arrays that need attention once, then exit")
	cmd.Flags().StringVar(&o.program, "program", "", "run `PROGRAM` EVENT DEVICE [MEMBER] for every event")
	cmd.Flags().DurationVar(&o.programTimeout, "program-timeout", monitor.DefaultProgramTimeout, "kill a run of the program after this long")
	cmd.Flags().DurationVar(&o.interval, "interval", 0, "with --scan: how often to look for arrays that started (default 2s)")
	return cmd
}

// watchNamed watches the array named, or those running now, until they stop or ctx is done.
func watchNamed(ctx context.Context, cmd *cobra.Command, m *monitor.Monitor, args []string) error {
	names := args
	if len(names) == 0 {
		var err error
		if names, err = daemon.Running(); err != nil {
			return err
		}
		if len(names) == 0 {
			return fmt.Errorf("no array is running (uraid list); name one to watch once it is (uraid monitor NAME), or watch for arrays to start: uraid monitor --scan")
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.Watch(ctx, name)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
		case len(args) == 0 && errors.Is(err, daemon.ErrNotRunning):
			// A socket a killed daemon left: uraid list tells what became of it.
			fmt.Fprintf(cmd.ErrOrStderr(), "uraid: monitor: %s: %v\n", names[i], err)
		default:
			return err
		}
	}
	return nil
}

// eventPrinter writes events from several streams, a line at a time.
type eventPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (p *eventPrinter) print(e monitor.Event) error {
	var line []byte
	if p.json {
		b, err := e.JSON()
		if err != nil {
			return err
		}
		line = append(b, '\n')
	} else {
		line = []byte(formatEvent(e))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(line)
	return err
}

// formatEvent is e as a line for people: time, array, type, what it concerns, and its message.
func formatEvent(e monitor.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", e.Time.Local().Format(time.DateTime), e.Array, e.Type)
	if e.Member != nil {
		fmt.Fprintf(&b, " member=%d", *e.Member)
	}
	if e.Outcome != "" {
		fmt.Fprintf(&b, " outcome=%s", e.Outcome)
	}
	fmt.Fprintf(&b, ": %s\n", e.Message)
	return b.String()
}
