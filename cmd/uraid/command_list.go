package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

// listed is one running array as list --json prints it.
type listed struct {
	Schema int    `json:"schema"`
	Name   string `json:"name"`
	Device string `json:"device"`
	Level  string `json:"level"`
	State  string `json:"state"`
}

// listJSON is list --json for entries: a running array in brief, and what each dead daemon left
// as status --json shows it.
func listJSON(entries []daemon.Entry) []any {
	out := []any{}
	for _, e := range entries {
		if st := e.Status; st != nil {
			out = append(out, listed{Schema: daemon.Schema, Name: st.Name, Device: st.Device, Level: st.Level, State: st.State})
		} else {
			out = append(out, e.Leftover())
		}
	}
	return out
}

func newListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List arrays, one per line: name, device, level, state; and devices dead daemons left",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, err := daemon.Inventory(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), listJSON(entries))
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, e := range entries {
				switch {
				case e.Status != nil:
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Status.Name, e.Status.Device, levelName(e.Status.Level), stateText(*e.Status))
				case e.Name == "":
					fmt.Fprintf(w, "-\t%s\t-\t%s\n", e.Device.Path(), e.Describe())
				default:
					dev := "-"
					if e.Record != nil {
						dev = e.Record.Device
					}
					fmt.Fprintf(w, "%s\t%s\t-\t%s\n", e.Name, dev, e.Describe())
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array: name, device, level and state of each array, and what dead daemons left")
	return cmd
}
