package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
	"uraid/mapping"
)

// leftoverError says that an array's daemon is gone and left its record: the array is unusable
// until it is recovered (detail --test exits 2 for it, as status --test does).
type leftoverError struct{ error }

func (e leftoverError) Unwrap() error { return e.error }

func arrayStatus(ctx context.Context, name string) (daemon.Status, error) {
	var st daemon.Status
	err := daemon.NewClient(name).Status(ctx, &st)
	if errors.Is(err, daemon.ErrNotRunning) {
		// Say what the dead daemon left, and what to do about it.
		if e := daemon.Lookup(ctx, name); e.Record != nil {
			return st, leftoverError{fmt.Errorf("array %s is not running: %s", name, e.Describe())}
		}
	}
	return st, err
}

// stateText is the array's state with what a script or an admin must know beside it: why it
// failed, and whether its last run ended uncleanly.
func stateText(st daemon.Status) string {
	s := st.State
	if st.Failure != "" {
		s += ": " + st.Failure
	}
	if st.Unclean {
		s += ", unclean"
		if st.Resync != "" {
			s += ": resync " + st.Resync
		}
	}
	return s
}

func newStatusCommand() *cobra.Command {
	var asJSON, test bool
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show arrays compactly, and devices dead daemons left",
		Long: `Status shows every array (or NAME) compactly, mdstat-like, and the devices dead daemons
left, and exits 0 whenever it reports. --test sets the exit status to the worst health among them,
as detail --test does: 0 all working normally, 1 one degraded, 2 one failed or not answering (its
daemon died: uraid recover NAME), 4 the information could not be had.`,
		Args:              arrayArgs(cobra.MaximumNArgs(1), false),
		ValidArgsFunction: completeArrayNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			var entries []daemon.Entry
			if len(args) == 1 {
				e := daemon.Lookup(cmd.Context(), args[0])
				if e.Status == nil && e.Record == nil {
					return testFailure(cmd, test, e.Err)
				}
				entries = []daemon.Entry{e}
			} else {
				var err error
				if entries, err = daemon.Inventory(cmd.Context()); err != nil {
					return testFailure(cmd, test, err)
				}
			}
			out := cmd.OutOrStdout()
			code := exitOK
			if asJSON {
				if err := writeJSON(out, entriesJSON(entries)); err != nil {
					return err
				}
			} else if len(entries) == 0 {
				fmt.Fprintln(out, "no arrays running")
			}
			for _, e := range entries {
				if e.Status == nil {
					code = max(code, exitTestFailed)
					if !asJSON {
						name := e.Name
						if name == "" {
							name = e.Device.Path()
						}
						fmt.Fprintf(out, "%s : %s\n", name, e.Describe())
					}
					continue
				}
				code = max(code, healthCode(*e.Status))
				if !asJSON {
					writeStatusLine(out, *e.Status)
				}
			}
			if test {
				return testCode(code)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array: each array's status, and what dead daemons left (docs/cli.md)")
	cmd.Flags().BoolVar(&test, "test", false, "exit 1 if an array is degraded, 2 if one failed or is not answering, 4 if the status cannot be had")
	return cmd
}

// writeStatusLine is the mdstat-like view: the array, then one flag per member (U up, F failed,
// _ missing or being rebuilt), then what the discards did, then how each member is trimmed. As
// in mdstat, a failed member's path says (F), a spare's (S) and one being rebuilt (R); a member
// being replaced is followed by its replacement (R).
func writeStatusLine(w io.Writer, st daemon.Status) {
	var flags strings.Builder
	var paths []string
	for _, m := range st.Members {
		switch m.State {
		case "active":
			flags.WriteByte('U')
		case "failed":
			flags.WriteByte('F')
		default:
			flags.WriteByte('_')
		}
		p := m.Path
		if p == "" {
			p = "(missing)"
		}
		paths = append(paths, fmt.Sprintf("%s[%d]%s", p, m.Index, stateMark(m.State)))
		if m.Replacement != "" {
			paths = append(paths, fmt.Sprintf("%s[%d](R)", m.Replacement, m.Index))
		}
	}
	for _, sp := range st.Spares {
		paths = append(paths, sp+"(S)")
	}
	level := levelName(st.Level)
	if st.Layout != "" {
		level += " " + st.Layout
	}
	fmt.Fprintf(w, "%s : %s %s %s %s\n", st.Name, stateText(st), level, st.Device, strings.Join(paths, " "))
	chunk := ""
	if st.ChunkBytes > 0 {
		chunk = " " + bytesize.Format(st.ChunkBytes) + " chunks"
	}
	var queued, inflight int
	for _, m := range st.Members {
		queued += m.Discard.Queued
		inflight += m.Discard.InFlight
	}
	fmt.Fprintf(w, "      %s%s [%d/%d] [%s] discard %s: %d requests, %s, %d member ranges, %d queued, %d in flight\n",
		bytesize.Format(st.SizeBytes), chunk, active(st), len(st.Members), flags.String(), st.DiscardMode,
		st.Discard.Requests, bytesize.Format(int64(st.Discard.Bytes)), st.Discard.MemberRanges, queued, inflight)
	fmt.Fprintf(w, "      TRIMs at once [%s], exclusive: %s\n", strings.Join(trimDepths(st), " "), exclusiveMembers(st))
	writeSyncLine(w, st)
}

// stateMark is mdstat's mark after a member's path: (F) failed, (R) being rebuilt.
func stateMark(state string) string {
	switch state {
	case array.MemberFailed.String():
		return "(F)"
	case array.MemberRebuilding.String():
		return "(R)"
	}
	return ""
}

// trimDepths is each member's TRIM limit in member order; "-" for a missing member.
func trimDepths(st daemon.Status) []string {
	var out []string
	for _, m := range st.Members {
		if m.Path == "" {
			out = append(out, "-")
			continue
		}
		out = append(out, fmt.Sprint(m.TrimInFlight))
	}
	return out
}

// exclusiveMembers names the members whose TRIMs wait for their reads and writes.
func exclusiveMembers(st daemon.Status) string {
	var out []string
	for _, m := range st.Members {
		if m.TrimExclusive {
			out = append(out, fmt.Sprintf("%s[%d]", m.Path, m.Index))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

func active(st daemon.Status) int {
	n := 0
	for _, m := range st.Members {
		if m.State == "active" {
			n++
		}
	}
	return n
}

// levelName is how the text views spell the level that the JSON carries by its short name: "10"
// is shown as "raid10", as mdadm shows it. A name this build does not know is shown as it came.
func levelName(short string) string {
	l, err := mapping.ParseLevel(short)
	if err != nil {
		return short
	}
	return l.String()
}
