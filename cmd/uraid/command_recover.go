package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

type recoverOptions struct {
	foreground bool
}

func newRecoverCommand() *cobra.Command {
	var o recoverOptions
	cmd := &cobra.Command{
		Use:   "recover NAME",
		Short: "Take over the device a dead daemon of array NAME left, and print it",
		Long: `Recover starts a new daemon for array NAME on the device its daemon left when it died:
the same /dev/ublkbN, served from the members, discard mode and TRIM settings the array ran with
(its record in /run/uraid). A filesystem mounted on the device, and every file open on it, carry
on: their I/O waited while no daemon served, and the requests the dead daemon held are sent again
to the new one. Because writes in flight may have reached some copies only, the array is then
marked unclean, and the regions the dead daemon was writing are resynced in the background. A
device the kernel no longer has is created again under the same number.`,
		Example:           `  uraid recover demo`,
		Args:              arrayArgs(cobra.ExactArgs(1), false),
		ValidArgsFunction: completeArrayNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := daemon.CheckName(name); err != nil {
				return err
			}
			e := daemon.Lookup(cmd.Context(), name)
			switch {
			case e.Status != nil:
				return fmt.Errorf("array %s is running (pid %d): there is nothing to recover", name, e.Status.PID)
			case e.Record == nil:
				_, err := daemon.ReadRecord(name)
				return fmt.Errorf("%w: nothing to recover; start it with uraid assemble", err)
			}
			f := serveFlags{foreground: o.foreground}
			if o.foreground {
				return recoverHere(cmd, name, &f, nil)
			}
			return recoverDetached(cmd, name)
		},
	}
	cmd.Flags().BoolVar(&o.foreground, "foreground", false, "serve from this process until stopped (for systemd) instead of a background daemon")
	return cmd
}
