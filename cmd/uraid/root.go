package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"uraid/daemon"
)

// Exit codes that scripts can rely on.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// With --test, detail and status answer for the arrays' health as mdadm --detail --test does:
	// 1 an array is degraded, 2 one is failed (unusable: for status also one not answering), 4 the
	// information could not be had. Without --test they exit 0 whenever they report.
	exitTestDegraded = 1
	exitTestFailed   = 2
	exitTestError    = 4
	// exitHandover ends a supervised daemon that handed its device over to a successor, which
	// its supervisor (systemd, Restart=on-failure) starts: EX_TEMPFAIL.
	exitHandover = 75
)

// exitCode carries a specific exit status out of a command that has already said what it had to.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError marks errors in how uraid was called, so they exit with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func newRootCommand() *cobra.Command {
	daemon.Version = buildVersion()
	root := &cobra.Command{
		Use:   "uraid",
		Short: "Software RAID for SSDs over ublk, with discard fanned out to every member",
		Long: `uraid lays out linear, RAID0, RAID1 and RAID10 arrays over member disks or files and
serves them as /dev/ublkbN block devices. Every discard is split along stripe boundaries into one
range per member and sent to the members concurrently.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       daemon.Version,
		Args:          usageArgs(cobra.NoArgs),
		// uraid alone is a usage error: the help goes where errors go, and the exit says so.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return exitCode(exitUsage)
		},
	}
	root.SetVersionTemplate("uraid {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCommand(), newCreateCommand(), newAssembleCommand(), newServeCommand(),
		newRecoverCommand(), newRestartCommand(), newStopCommand(), newListCommand(), newStatusCommand(),
		newDetailCommand(), newExamineCommand(), newMonitorCommand(), newUdevInfoCommand(),
		newCheckCommand(), newWaitCommand(), newMetricsCommand(), newZeroSuperblockCommand())
	root.AddCommand(newFailCommand(), newRemoveCommand(), newAddCommand(), newReplaceCommand(), newGrowCommand())
	return root
}

func run(args []string) int { return runWith(args, os.Stdout, os.Stderr) }

func runWith(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintf(stderr, "uraid: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitError
}

// isCobraUsage recognises the one usage error cobra reports as a plain error: an unknown
// subcommand. Flag errors come through SetFlagErrorFunc and argument errors through usageArgs.
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// arrayArgs is usageArgs that also checks the array name, the first argument: a name no array
// can have is a usage error, found before anything is asked of a daemon. With devices, a path
// (/dev/ublkbN) is let through in its place.
func arrayArgs(v cobra.PositionalArgs, devices bool) cobra.PositionalArgs {
	return usageArgs(func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return err
		}
		if len(args) == 0 || (devices && strings.HasPrefix(args[0], "/")) {
			return nil
		}
		return daemon.CheckName(args[0])
	})
}

// usageArgs wraps a cobra argument validator so its errors exit with exitUsage.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
