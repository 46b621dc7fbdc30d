package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/ublk"
)

func newStopCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop an array: flush, mark its members clean, remove its device",
		Long: `Stop asks the array's daemon to remove the device (in-flight I/O completes first), finish
queued TRIMs, flush every member and mark the members clean, and waits until it has. If the daemon
was killed, stop removes the device it left behind.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			err := daemon.NewClient(name).Stop(ctx)
			if err == nil || !errors.Is(err, daemon.ErrNotRunning) {
				return err
			}
			// No daemon: clean up after a killed one, if it left its state behind.
			st, serr := daemon.ReadState(name)
			if serr != nil {
				return err
			}
			if rerr := ublk.RemoveOrphan(st.DeviceID); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return fmt.Errorf("array %s: its daemon (pid %d) is gone; removing the device %s it left: %w", name, st.PID, st.Device, rerr)
			}
			os.Remove(daemon.StatePath(name))
			fmt.Fprintf(cmd.ErrOrStderr(), "uraid: array %s: daemon %d had died; removed %s (members are marked dirty: assemble checks them)\n", name, st.PID, st.Device)
			return nil
		},
	}
}
