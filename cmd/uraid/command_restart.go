package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

func newRestartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Hand a running array over to a new daemon from the uraid binary now on disk (live upgrade)",
		Long: `Restart upgrades the daemon of array NAME without unmounting anything: the daemon finishes
the requests it has started, finishes queued TRIMs, flushes the members and exits without removing
the device; a new daemon, started from this uraid binary, takes the device over. Requests that
arrive meanwhile wait in the kernel and go to the new daemon. The device needs user recovery
reissue (UBLK_F_USER_RECOVERY_REISSUE, Linux 6.12 has it), or those requests would fail: without
it, restart is refused. A daemon run by systemd (--foreground under Type=notify) exits with status
75 instead, and systemd's Restart=on-failure starts the new one. If the new daemon cannot start,
the device waits for one (its I/O is held, not failed): run uraid recover NAME once it can.`,
		Example:           `  install -m 0755 build/uraid /usr/local/bin/uraid && uraid restart demo`,
		Args:              arrayArgs(cobra.ExactArgs(1), false),
		ValidArgsFunction: completeArrayNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			ctx, cancel := context.WithTimeout(cmd.Context(), spawnTimeout)
			defer cancel()
			dev, err := daemon.Restart(ctx, name, func() (string, error) {
				return spawn(name, []string{"serve", "--recover", name})
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), dev)
			return err
		},
	}
}
