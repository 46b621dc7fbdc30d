package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/raid"
)

type assembleOptions struct {
	degraded bool
	recover  bool
	spares   []string
	scan     bool
	config   string
	wait     time.Duration
	serve    serveFlags
}

func newAssembleCommand() *cobra.Command {
	var o assembleOptions
	cmd := &cobra.Command{
		Use:   "assemble NAME MEMBER... | assemble --scan [NAME]",
		Short: "Start an existing array from its members and print its device",
		Long: `Assemble reads the members' superblocks, checks that they form the array NAME (same
array, same geometry, no member stale or missing) and starts it. --degraded runs a RAID1 or RAID10
array without its missing or stale members while every byte still has a copy.

If the array's daemon died and left its device behind (quiesced: whatever uses it waits),
assemble refuses, and says so; --recover takes that device over instead, as uraid recover does,
with the options the array ran with. That is what a supervisor restarting a failed daemon runs
(packaging/systemd/uraid@.service).

--scan finds the members by their superblocks instead: on every block device (but the arrays'
own /dev/ublkb* devices, devices that a dm or md device is built on, and partitioned disks, whose
partitions are read instead), and on the files and devices --config names (default
/etc/uraid.conf: one absolute path or glob a line, '#' comments; a --config named must exist). It
starts every array whose members are all there (any whose are not only with --degraded), or only
NAME, and when the file has ARRAY NAME UUID=... lines only the arrays they list (uraid examine
--scan prints them); it leaves a running
array alone, so running it again changes nothing. It prints "NAME DEVICE" for each array it
started and exits 1 if any it found could not start. With NAME, --wait keeps looking for the
members that are not there yet, up to the time given, and --foreground serves it from this process
(docs/boot.md).`,
		Example: `  uraid assemble demo /var/lib/uraid/demo/m{0..3}
  uraid assemble data --foreground --recover /dev/disk/by-id/nvme-a /dev/disk/by-id/nvme-b
  uraid assemble --scan
  uraid assemble --scan data --wait 90s --foreground --recover`,
		Args: arrayArgs(func(cmd *cobra.Command, args []string) error {
			if o.scan {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			return cobra.MinimumNArgs(2)(cmd, args)
		}, false),
		ValidArgsFunction: completeArrayThenFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.serve.check(); err != nil {
				return err
			}
			if o.scan {
				var name string
				if len(args) == 1 {
					name = args[0]
				}
				return assembleScan(cmd, &o, name)
			}
			if o.wait != 0 || cmd.Flags().Changed("config") {
				return usageError{fmt.Errorf("--wait and --config go with --scan")}
			}
			// Spares are told apart by their superblocks: they are assembled with the members.
			name, members := args[0], append(args[1:], o.spares...)
			if o.recover && daemon.Recoverable(name) {
				if err := checkRecordedMembers(name, members); err != nil {
					return err
				}
				if o.serve.foreground {
					return recoverHere(cmd, name, &o.serve, nil)
				}
				return recoverDetached(cmd, name)
			}
			if err := daemon.CheckFree(cmd.Context(), name); err != nil {
				return err
			}
			// Assembled here even for a daemon, so that a wrong member is reported by this command
			// before anything starts.
			a, err := array.Assemble(name, members, o.serve.options(o.degraded))
			if err != nil {
				return err
			}
			if o.serve.foreground {
				return serveHere(cmd, a, members, &o.serve, nil, o.degraded, nil)
			}
			a.Close()
			return serveDetached(cmd, name, members, &o.serve, o.degraded)
		},
	}
	cmd.Flags().BoolVar(&o.degraded, "degraded", false, "run without missing or stale members if every byte still has a copy")
	cmd.Flags().BoolVar(&o.recover, "recover", false, "take over the device a dead daemon of the array left, if there is one")
	cmd.Flags().StringArrayVar(&o.spares, "spare", nil, "a spare of the array (written by create --spare or uraid add), kept as a hot spare; repeatable")
	cmd.Flags().BoolVar(&o.scan, "scan", false, "find the members by their superblocks on every block device and the files --config names")
	cmd.Flags().StringVar(&o.config, "config", DefaultConfig, "with --scan: file naming member files and devices to read besides the block devices")
	cmd.Flags().DurationVar(&o.wait, "wait", 0, "with --scan NAME: how long to wait for members that are not there yet")
	o.serve.register(cmd)
	registerServeCompletion(cmd)
	return cmd
}

// checkRecordedMembers refuses to recover an array whose recorded members are not among those
// given: the command line names another array than the one whose device waits.
func checkRecordedMembers(name string, given []string) error {
	rec, err := daemon.ReadRecord(name)
	if err != nil {
		return err
	}
	for _, m := range rec.Members {
		if !slices.ContainsFunc(given, func(g string) bool { return raid.SameMemberPath(m, g) }) {
			return fmt.Errorf("array %s: its device %s was served from members %v, and %s is not among those given: name the array's members, or recover it with uraid recover %s",
				name, rec.Device, rec.Members, m, name)
		}
	}
	return nil
}

// newServeCommand is the daemon that create, assemble and recover start in the background.
func newServeCommand() *cobra.Command {
	var o assembleOptions
	cmd := &cobra.Command{
		Use:    "serve NAME MEMBER... | serve --recover NAME",
		Short:  "Serve an array (the daemon behind create, assemble and recover)",
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := daemon.NewNotifier()
			if o.recover {
				if len(args) != 1 {
					err := usageError{fmt.Errorf("serve --recover takes the array's name only")}
					n.Failed(err)
					return err
				}
				return recoverHere(cmd, args[0], &o.serve, n)
			}
			if len(args) < 2 {
				err := usageError{fmt.Errorf("serve needs the array's name and its members")}
				n.Failed(err)
				return err
			}
			a, err := array.Assemble(args[0], args[1:], o.serve.options(o.degraded))
			if err != nil {
				n.Failed(err)
				return err
			}
			return serveHere(cmd, a, args[1:], &o.serve, n, o.degraded, nil)
		},
	}
	cmd.Flags().BoolVar(&o.degraded, "degraded", false, "")
	cmd.Flags().BoolVar(&o.recover, "recover", false, "")
	o.serve.register(cmd)
	return cmd
}
