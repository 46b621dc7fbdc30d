package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/mapping"
	"uraid/raid"
)

type namedStatus struct {
	name string
	st   raid.Status
	err  error
}

func allStatus(ctx context.Context) ([]namedStatus, error) {
	names, err := daemon.Running()
	if err != nil {
		return nil, err
	}
	var out []namedStatus
	for _, n := range names {
		ns := namedStatus{name: n}
		ns.err = daemon.NewClient(n).Status(ctx, &ns.st)
		out = append(out, ns)
	}
	return out, nil
}

func arrayStatus(ctx context.Context, name string) (raid.Status, error) {
	var st raid.Status
	err := daemon.NewClient(name).Status(ctx, &st)
	return st, err
}

func unhealthy(st raid.Status) bool {
	return st.State == raid.StateNameDegraded || st.State == raid.StateNameFailed
}

func newStatusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show running arrays compactly; exit 3 if one is degraded or failed",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sts []namedStatus
			if len(args) == 1 {
				st, err := arrayStatus(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				sts = []namedStatus{{name: args[0], st: st}}
			} else {
				var err error
				if sts, err = allStatus(cmd.Context()); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			bad := false
			if asJSON {
				list := []raid.Status{}
				for _, s := range sts {
					if s.err == nil {
						list = append(list, s.st)
					}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(list); err != nil {
					return err
				}
			} else if len(sts) == 0 {
				fmt.Fprintln(out, "no arrays running")
			}
			for _, s := range sts {
				if s.err != nil {
					bad = true
					if !asJSON {
						fmt.Fprintf(out, "%s : not answering: %v\n", s.name, s.err)
					}
					continue
				}
				bad = bad || unhealthy(s.st)
				if !asJSON {
					writeStatusLine(out, s.st)
				}
			}
			if bad {
				return exitCode(exitDegraded)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of the arrays' status")
	return cmd
}

// writeStatusLine is the mdstat-like view: the array, then one flag per member (U up, F failed,
// _ missing), then what the discards did, then how each member is trimmed.
func writeStatusLine(w io.Writer, st raid.Status) {
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
		paths = append(paths, fmt.Sprintf("%s[%d]", p, m.Index))
	}
	level := levelName(st.Level)
	if st.Layout != "" {
		level += " " + st.Layout
	}
	fmt.Fprintf(w, "%s : %s %s %s %s\n", st.Name, st.State, level, st.Device, strings.Join(paths, " "))
	chunk := ""
	if st.ChunkBytes > 0 {
		chunk = " " + formatSize(st.ChunkBytes) + " chunks"
	}
	var queued, inflight int
	for _, m := range st.Members {
		queued += m.Discard.Queued
		inflight += m.Discard.InFlight
	}
	fmt.Fprintf(w, "      %s%s [%d/%d] [%s] discard %s: %d requests, %s, %d member ranges, %d queued, %d in flight\n",
		formatSize(st.SizeBytes), chunk, active(st), len(st.Members), flags.String(), st.DiscardMode,
		st.Discard.Requests, formatSize(int64(st.Discard.Bytes)), st.Discard.MemberRanges, queued, inflight)
	fmt.Fprintf(w, "      TRIMs at once [%s], exclusive: %s\n", strings.Join(trimDepths(st), " "), exclusiveMembers(st))
}

// trimDepths is each member's TRIM limit in member order; "-" for a missing member.
func trimDepths(st raid.Status) []string {
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
func exclusiveMembers(st raid.Status) string {
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

func active(st raid.Status) int {
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
