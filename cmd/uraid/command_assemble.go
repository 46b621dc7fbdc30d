package main

import (
	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/raid"
)

type assembleOptions struct {
	degraded bool
	serve    serveFlags
}

func newAssembleCommand() *cobra.Command {
	var o assembleOptions
	cmd := &cobra.Command{
		Use:   "assemble NAME MEMBER...",
		Short: "Start an existing array from its members and print its device",
		Long: `Assemble reads the members' superblocks, checks that they form the array NAME (same
array, same geometry, no member stale or missing) and starts it. --degraded runs a RAID1 or RAID10
array without its missing or stale members while every byte still has a copy.`,
		Example: `  uraid assemble demo /var/lib/uraid/demo/m{0..3}`,
		Args:    usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.serve.check(); err != nil {
				return err
			}
			// Assembled here even for a daemon, so that a wrong member is reported by this command
			// before anything starts.
			a, err := raid.Assemble(args[0], args[1:], o.serve.options(o.degraded))
			if err != nil {
				return err
			}
			if o.serve.foreground {
				return serveHere(cmd, a, &o.serve, nil)
			}
			a.Close()
			return serveDetached(cmd, args[0], args[1:], &o.serve, o.degraded)
		},
	}
	cmd.Flags().BoolVar(&o.degraded, "degraded", false, "run without missing or stale members if every byte still has a copy")
	o.serve.register(cmd)
	return cmd
}

// newServeCommand is the daemon that create and assemble start in the background.
func newServeCommand() *cobra.Command {
	var o assembleOptions
	cmd := &cobra.Command{
		Use:    "serve NAME MEMBER...",
		Short:  "Serve an array (the daemon behind create and assemble)",
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := daemon.NewNotifier()
			a, err := raid.Assemble(args[0], args[1:], o.serve.options(o.degraded))
			if err != nil {
				n.Failed(err)
				return err
			}
			return serveHere(cmd, a, &o.serve, n)
		},
	}
	cmd.Flags().BoolVar(&o.degraded, "degraded", false, "")
	o.serve.register(cmd)
	return cmd
}
