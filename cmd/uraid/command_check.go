package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
)

type checkOptions struct {
	repair, cancel, wait bool
	maxRate              rateFlag
}

func newCheckCommand() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check NAME [--repair] [--max-rate RATE] [--wait] | check --cancel NAME",
		Short: "Compare the copies of a raid1 or raid10 (and with --repair rewrite what differs)",
		Long: `Check starts a check of the running array NAME in the background: every region that is not
trimmed is read from every copy and compared with the first, with writes to the region held
meanwhile; the bytes that differ are counted and the regions they are in listed (uraid status and
uraid detail show the progress and the result). Blocks discarded since the array started and not
written since are left out: after a TRIM a drive returns what it likes there. With --repair,
what differs is rewritten from the first copy.

While the array serves I/O the check keeps to 1 MiB/s, so that it always progresses and takes
little from the user; when it is idle the check runs as fast as the members allow, or at
--max-rate. It is refused while a resync is needed (the copies are known to differ there until
it has run) and while another job runs. --wait waits for the end and prints the result; the exit
status is then 0 when the check ran to its end (whatever it found), 1 when it failed or was
cancelled. check --cancel stops a running check or repair; a resync or rebuild is not cancelled.`,
		Example: `  uraid check demo --wait
  uraid check demo --repair --max-rate 50M
  uraid check --cancel demo`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if o.cancel && (o.repair || o.wait || o.maxRate != 0) {
				return usageError{errors.New("check --cancel takes no --repair, --max-rate or --wait: it only stops the running check")}
			}
			if err := daemon.CheckName(name); err != nil {
				return err
			}
			c := daemon.NewClient(name)
			if o.cancel {
				what, err := c.CancelCheck(cmd.Context())
				if err != nil {
					return err
				}
				if what == "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "uraid: array %s: no check runs; nothing cancelled\n", name)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "uraid: array %s: %s cancelled\n", name, what)
				}
				return nil
			}
			if err := c.Check(cmd.Context(), o.repair, int64(o.maxRate)); err != nil {
				return err
			}
			action := array.SyncCheck
			if o.repair {
				action = array.SyncRepair
			}
			if !o.wait {
				fmt.Fprintf(cmd.ErrOrStderr(), "uraid: array %s: %s started; follow it with uraid status %s, wait for it with uraid wait %s\n", name, action, name, name)
				return nil
			}
			st, err := c.WaitSync(cmd.Context())
			if err != nil {
				return err
			}
			return reportLast(cmd.OutOrStdout(), name, st)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.repair, "repair", false, "rewrite what differs from the first copy")
	f.Var(&o.maxRate, "max-rate", "cap the rate while the array is idle, per second, e.g. 50M (default: as fast as the members allow)")
	f.BoolVar(&o.wait, "wait", false, "wait for the end and print the result")
	f.BoolVar(&o.cancel, "cancel", false, "cancel the running check or repair")
	return cmd
}

func newWaitCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "wait NAME",
		Short: "Wait until no resync, check, repair or rebuild runs on the array; exit 1 if the last failed",
		Long: `Wait blocks until no resync, check, repair or rebuild runs on the running array NAME (a
rebuild followed by the resync it leaves counts as one), then prints how the last job ended. It
exits 0 when that job ran to its end, or when none has run since the daemon started; 1 when it
failed or was cancelled, or when the daemon stopped or died while waiting. A resync that cannot
run yet (a member is missing) does not keep it waiting: it says so on stderr.`,
		Example: `  uraid assemble demo /dev/sdb /dev/sdc && uraid wait demo`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := daemon.CheckName(name); err != nil {
				return err
			}
			st, err := daemon.NewClient(name).WaitSync(cmd.Context())
			if err != nil {
				return err
			}
			if st.Waiting != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "uraid: array %s: resync pending: %s\n", name, st.Waiting)
			}
			if st.Last == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: no job has run\n", name)
				return nil
			}
			return reportLast(cmd.OutOrStdout(), name, st)
		},
	}
}

// reportLast prints how the last job ended, and fails when it did not run to its end.
func reportLast(w io.Writer, name string, st array.SyncStatus) error {
	l := st.Last
	if l == nil {
		return fmt.Errorf("array %s: the job ended without a result", name)
	}
	fmt.Fprintf(w, "%s: %s\n", name, lastText(l))
	switch {
	case l.Error != "":
		return fmt.Errorf("array %s: %s failed: %s", name, l.Action, l.Error)
	case l.Cancelled:
		return fmt.Errorf("array %s: %s was cancelled before its end", name, l.Action)
	}
	return nil
}

// rateFlag is a pflag.Value holding bytes per second, written as a size with an optional "/s".
type rateFlag int64

func (f *rateFlag) String() string {
	if *f == 0 {
		return "0"
	}
	return bytesize.Format(int64(*f)) + "/s"
}

func (f *rateFlag) Set(s string) error {
	v, err := parseSize(strings.TrimSuffix(strings.TrimSuffix(s, "/s"), "/S"))
	if err != nil {
		return fmt.Errorf("rate %q: use bytes per second with an optional K, M, G suffix, e.g. 50M", s)
	}
	*f = rateFlag(v)
	return nil
}

func (f *rateFlag) Type() string { return "rate" }
