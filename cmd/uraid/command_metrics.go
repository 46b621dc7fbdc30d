package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

type metricsOptions struct {
	listen   string
	textfile string
	interval time.Duration
}

func newMetricsCommand() *cobra.Command {
	var o metricsOptions
	cmd := &cobra.Command{
		Use:   "metrics --listen ADDR | --textfile DIR",
		Short: "Serve the Prometheus metrics of every running array at one address, or write them for node_exporter",
		Long: `Metrics asks every running array's daemon for its metrics through its control socket, at each
scrape, and serves them together, each series labelled with its array: arrays started or stopped
later are picked up without a restart. uraid_array_daemon_up says which arrays answered.

--listen ADDR serves them at http://ADDR/metrics until interrupted. --textfile DIR writes them to
DIR/uraid.prom (atomically) every --interval, for node_exporter's textfile collector; with
--interval 0 it writes once and exits (for a timer).`,
		Example: `  uraid metrics --listen 127.0.0.1:9105
  uraid metrics --textfile /var/lib/prometheus/node-exporter --interval 0`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (o.listen == "") == (o.textfile == "") {
				return usageError{fmt.Errorf("give one of --listen ADDR and --textfile DIR")}
			}
			if err := daemon.CheckListen("--listen", o.listen); err != nil {
				return usageError{err}
			}
			if o.interval < 0 {
				return usageError{fmt.Errorf("--interval must not be negative")}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			h := &daemon.HostMetrics{}
			if o.listen != "" {
				return daemon.ServeHostMetrics(ctx, o.listen, h)
			}
			return writeTextfiles(ctx, cmd.ErrOrStderr(), o.textfile, o.interval, h)
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "", "serve at http://ADDR/metrics, e.g. 127.0.0.1:9105 or :9105")
	cmd.Flags().StringVar(&o.textfile, "textfile", "", "write DIR/"+daemon.TextfileName+" for node_exporter's textfile collector")
	cmd.Flags().DurationVar(&o.interval, "interval", 15*time.Second, "with --textfile: how often to write it (0: once)")
	return cmd
}

// writeTextfiles writes the file every interval until ctx is done; once with interval 0. An
// array that does not answer is no failure (uraid_array_daemon_up says so), a file not written
// is, but only for a single write.
func writeTextfiles(ctx context.Context, stderr io.Writer, dir string, interval time.Duration, h *daemon.HostMetrics) error {
	if interval == 0 {
		return daemon.WriteTextfile(dir, h)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := daemon.WriteTextfile(dir, h); err != nil {
			fmt.Fprintf(stderr, "uraid: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
