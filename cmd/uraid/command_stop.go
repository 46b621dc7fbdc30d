package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/internal/bytesize"
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
			done := make(chan struct{})
			go sayWhatStopWaitsFor(ctx, cmd.ErrOrStderr(), args[0], done)
			res, err := daemon.Stop(ctx, args[0])
			close(done)
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

// stopQuiet is how long a stop may take before the command says what it waits for, and then how
// often it says it again.
const stopQuiet = 3 * time.Second

// sayWhatStopWaitsFor prints, while a stop takes long, what the daemon still has to do: the queued
// and in-flight TRIMs it drains before it flushes the members (a slow SSD can take minutes).
func sayWhatStopWaitsFor(ctx context.Context, w io.Writer, name string, done <-chan struct{}) {
	if strings.HasPrefix(name, "/") {
		return // a device path: an orphan, with no daemon to ask
	}
	tick := time.NewTicker(stopQuiet)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var st daemon.Status
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		err := daemon.NewClient(name).Status(qctx, &st)
		cancel()
		if err != nil {
			continue // the daemon is going: the stop's own answer says how it ended
		}
		var queued, inflight int
		var bytes int64
		for _, m := range st.Members {
			queued += m.Discard.Queued
			bytes += m.Discard.QueuedBytes
			inflight += m.Discard.InFlight
		}
		select {
		case <-done:
			return
		default:
		}
		if queued+inflight > 0 {
			fmt.Fprintf(w, "uraid: array %s: stopping: waiting for the members' TRIMs (%d queued, %s, %d in flight), then flushing the members\n",
				name, queued, bytesize.Format(bytes), inflight)
		} else {
			fmt.Fprintf(w, "uraid: array %s: stopping: waiting for the daemon to flush the members and mark them clean\n", name)
		}
	}
}
