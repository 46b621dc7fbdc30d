package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

func newStopCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME | stop /dev/ublkbN",
		Short: "Stop an array: remove its device, finish TRIMs, flush and mark its members clean",
		Long: `Stop asks the array's daemon to remove the device (in-flight I/O completes first), finish
queued TRIMs, flush every member and mark the members clean, and waits until it has. It refuses,
and changes nothing, while the device is open: mounted, stacked on (md, dm), used as swap or
backing a loop device, or open in a process; the message names what holds it. There is no
--force: unmount first.

If the daemon died, stop removes the device it left (unless something has it open, in which case
uraid recover lets that carry on) and the array's record. A device no record names, for instance
one left by a daemon that died while it started, is stopped by its path.`,
		Example: `  umount /mnt/demo && uraid stop demo
  uraid stop /dev/ublkb3`,
		Args:              arrayArgs(cobra.ExactArgs(1), true),
		ValidArgsFunction: completeArrayNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			res, err := daemon.Stop(ctx, args[0])
			if err != nil {
				return err
			}
			switch {
			case res.Orphan && res.PID > 0:
				fmt.Fprintf(cmd.ErrOrStderr(), "uraid: array %s: daemon %d had died; removed %s (members are marked dirty: assemble checks them)\n", args[0], res.PID, res.Device)
			case res.Orphan:
				fmt.Fprintf(cmd.ErrOrStderr(), "uraid: removed %s, which no daemon served\n", res.Device)
			}
			return nil
		},
	}
}
