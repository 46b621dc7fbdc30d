package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

func newListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List arrays, one per line: name, device, level, state; and devices dead daemons left",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, err := daemon.Inventory(cmd.Context())
			if err != nil {
				return err
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
}
