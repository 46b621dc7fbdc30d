package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version names the build when it is set at link time (go build -ldflags "-X main.version=NAME");
// otherwise the build's VCS revision does.
var version string

func buildVersion() string {
	if version != "" {
		return version
	}
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v = s.Value
			}
		}
	}
	return v
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print uraid's version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "uraid %s\n", buildVersion())
			return err
		},
	}
}
