package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List running arrays, one per line: name, device, level, state",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sts, err := allStatus(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, s := range sts {
				if s.err != nil {
					fmt.Fprintf(w, "%s\t-\t-\tnot answering: %v\n", s.name, s.err)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.st.Name, s.st.Device, levelName(s.st.Level), s.st.State)
			}
			return w.Flush()
		},
	}
}
