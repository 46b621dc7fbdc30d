package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
)

func newDetailCommand() *cobra.Command {
	var asJSON, test bool
	cmd := &cobra.Command{
		Use:   "detail NAME",
		Short: "Show one array in full, with per-member I/O and discard statistics",
		Long: `Detail shows one array in full, with per-member I/O and discard statistics, and exits 0
whenever it reports, whatever the array's state (so that uraid detail NAME | grep works under
set -e). --test sets the exit status to the array's health instead, as mdadm --detail --test
does: 0 working normally, 1 degraded (at least one member failed or missing), 2 failed (unusable),
4 the information could not be had (no daemon answers, for one).`,
		Args:              arrayArgs(cobra.ExactArgs(1), false),
		ValidArgsFunction: completeArrayNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := arrayStatus(cmd.Context(), args[0])
			if err != nil {
				return testFailure(cmd, test, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, stamped(st)); err != nil {
					return err
				}
			} else {
				writeDetail(out, st)
			}
			if test {
				return testCode(healthCode(st))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&test, "test", false, "exit 1 if the array is degraded, 2 if it failed, 4 if its status cannot be had (mdadm --detail --test)")
	return cmd
}

// healthCode is the exit status --test gives for an array in the state st.
func healthCode(st daemon.Status) int {
	switch st.State {
	case array.StateNameFailed:
		return exitTestFailed
	case array.StateNameDegraded:
		return exitTestDegraded
	}
	return exitOK
}

// testCode is the error that makes a command exit with code, nil for exitOK.
func testCode(code int) error {
	if code == exitOK {
		return nil
	}
	return exitCode(code)
}

// testFailure is what a command that could not get the information returns: with --test it says
// why on stderr and exits 4, as mdadm --detail --test does (2 for an array whose daemon died and
// left its device: it is unusable until recovered); without it, err.
func testFailure(cmd *cobra.Command, test bool, err error) error {
	var ue usageError
	if !test || errors.As(err, &ue) {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "uraid: %v\n", err)
	if errors.As(err, new(leftoverError)) {
		return exitCode(exitTestFailed)
	}
	return exitCode(exitTestError)
}

// zeroCopyText says whether member I/O copies, and why when it does.
func zeroCopyText(st daemon.Status) string {
	switch {
	case st.ZeroCopy:
		return "yes (" + st.ZeroCopyMode + ")"
	case st.ZeroCopyReason != "":
		return "no: " + st.ZeroCopyReason
	case st.ZeroCopyMode == "":
		return "unknown (not served)"
	}
	return "no"
}

// batchIOText says whether the queues use the batch I/O commands, and why not.
func batchIOText(st daemon.Status) string {
	switch {
	case st.BatchIO:
		return "yes"
	case st.BatchIOReason != "":
		return "no: " + st.BatchIOReason
	case st.ZeroCopyMode == "":
		return "unknown (not served)"
	}
	return "no"
}

func writeDetail(out io.Writer, st daemon.Status) {
	row := func(k, v string) { fmt.Fprintf(out, "%15s : %s\n", k, v) }
	row("Name", st.Name)
	row("UUID", st.UUID)
	row("Device", st.Device)
	row("Raid Level", levelName(st.Level))
	if st.Layout != "" {
		row("Layout", st.Layout)
	}
	if st.ChunkBytes > 0 {
		row("Chunk Size", bytesize.Format(st.ChunkBytes))
	}
	row("Array Size", fmt.Sprintf("%s (%d bytes)", bytesize.Format(st.SizeBytes), st.SizeBytes))
	row("Raid Devices", fmt.Sprint(len(st.Members)))
	row("Active Devices", fmt.Sprint(active(st)))
	if len(st.Spares) > 0 {
		row("Spare Devices", fmt.Sprint(len(st.Spares)))
	}
	row("State", stateText(st))
	recovery := "off: a daemon that dies takes the device with it"
	if st.Recovery.Enabled {
		recovery = "on, in-flight I/O fails when the daemon dies"
		if st.Recovery.Reissue {
			recovery = "on, in-flight I/O reissued"
		}
		if st.Recovery.Count > 0 {
			recovery += fmt.Sprintf("; recovered %d times, last: %s", st.Recovery.Count, st.Recovery.LastExit)
		}
	}
	row("Recovery", recovery)
	row("Events", fmt.Sprint(st.Events))
	row("Creation Time", st.CreateTime.UTC().Format(time.RFC3339))
	row("Discard Mode", st.DiscardMode)
	row("Zero Copy", zeroCopyText(st))
	row("Batch I/O", batchIOText(st))
	row("Discards", fmt.Sprintf("%d requests, %s, split into %d member ranges", st.Discard.Requests,
		bytesize.Format(int64(st.Discard.Bytes)), st.Discard.MemberRanges))
	writeSyncDetail(row, st)
	fmt.Fprintln(out)
	t := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(t, "Number\tState\tTRIM unit\tTRIMs at once\tExclusive\tReads\tWrites\tErrors\tTRIMs\tTRIM bytes\tMerged\tQueued\tIn flight\tp50 us\tp99 us\tmax us\tPath")
	for _, m := range st.Members {
		d := m.Discard
		unit := "none"
		if m.DiscardGranularity > 0 {
			unit = bytesize.Format(m.DiscardGranularity)
		}
		exclusive := "no"
		if m.TrimExclusive {
			exclusive = "yes"
		}
		fmt.Fprintf(t, "%d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", m.Index, m.State, unit,
			m.TrimInFlight, exclusive, m.IO.Reads, m.IO.Writes,
			m.IO.Errors+d.Errors, d.Issued, bytesize.Format(d.IssuedBytes), d.Merged, d.Queued, d.InFlight,
			d.Latency.P50, d.Latency.P99, d.Latency.Max, m.Path)
		if m.Replacement != "" {
			fmt.Fprintf(t, "%d\treplacement\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t%s\n", m.Index, m.Replacement)
		}
	}
	for _, sp := range st.Spares {
		fmt.Fprintf(t, "-\tspare\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t%s\n", sp)
	}
	t.Flush()
	// What each lane measured and decided, with the figures behind it (the JSON's trim_learned).
	for _, m := range st.Members {
		if m.TrimLearned != nil {
			fmt.Fprintf(out, "member %d %s\n", m.Index, m.TrimLearned)
		}
	}
}
