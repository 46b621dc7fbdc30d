package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
)

type monitorOptions struct {
	json bool
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

The daemons log the same events (docs/cli.md: uraid monitor).`,
		Example: `  uraid monitor
  uraid monitor data --json | jq -r 'select(.type == "member_failed") | .path'`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			names := args
			if len(names) == 0 {
				var err error
				if names, err = daemon.Running(); err != nil {
					return err
				}
				if len(names) == 0 {
					return fmt.Errorf("no array is running (uraid list); name one to watch once it is: uraid monitor NAME")
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			out := &eventPrinter{w: cmd.OutOrStdout(), json: o.json}
			var wg sync.WaitGroup
			errs := make([]error, len(names))
			for i, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = daemon.NewClient(name).Events(ctx, out.print)
				}()
			}
			wg.Wait()
			if ctx.Err() != nil {
				return nil // interrupted: the normal end
			}
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
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "one JSON object per event and line")
	return cmd
}

// eventPrinter writes events from several streams, a line at a time.
type eventPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (p *eventPrinter) print(e array.Event) error {
	var line []byte
	if p.json {
		b, err := json.Marshal(e)
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
func formatEvent(e array.Event) string {
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
