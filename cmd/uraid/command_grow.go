package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
)

type growOptions struct {
	size  string
	force bool
	json  bool
}

func newGrowCommand() *cobra.Command {
	var o growOptions
	cmd := &cobra.Command{
		Use:   "grow NAME --size max|SIZE [MEMBER...]",
		Short: "Use the space of members that have grown, or shrink the array, without moving data",
		Long: `Grow changes the size of the array to SIZE, or with --size max to as much as its smallest device
(member or spare) allows: after uraid replace put larger devices in, or the member devices
themselves grew. No byte moves: the space past the old end is trimmed on every member and marked
trimmed in the region map, never resynced. SIZE is the array's size (as blockdev --getsize64 shows
it); one the layout cannot have exactly (raid0 and raid10 grow by a whole chunk per member) is
rounded down, and grow says so. A smaller SIZE shrinks the array; one smaller than the ext4, XFS or
btrfs on it is refused unless --force.

A running array grows through its daemon, while it serves: on Linux 6.16 and later its device
grows at once (resize2fs, xfs_growfs or btrfs filesystem resize then grow a mounted filesystem).
An older kernel cannot resize a running ublk device: the array grows, and its device shows the
new size once it is made again (unmount, uraid stop NAME, uraid assemble --scan NAME); shrinking
a running array needs 6.16. A stopped array grows in place: its members are found by their
superblocks (as assemble --scan does) unless named.

Refused, with the reason and nothing changed: raid10 f2 and linear of several members (their
bytes would move), a degraded array, one whose resync, check, rebuild or replace is unfinished,
a size past the smallest device (named), members that have not grown, and sizes past what the
region map's regions can describe (256 GiB for 1 MiB regions).`,
		Example: `  uraid grow data --size max && resize2fs /dev/ublkb0
  uraid grow data --size 1T /dev/sdb /dev/sdc /dev/sdd /dev/sde   # stopped`,
		Args:              arrayArgs(cobra.MinimumNArgs(1), false),
		ValidArgsFunction: completeArrayThenFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGrow(cmd, &o, args[0], args[1:])
		},
	}
	cmd.Flags().StringVar(&o.size, "size", "", "the array's new size: max, or bytes with an optional K, M, G or T suffix (required)")
	cmd.Flags().BoolVar(&o.force, "force", false, "shrink below the filesystem found on the array")
	cmd.Flags().BoolVar(&o.json, "json", false, "print what was done as JSON")
	return cmd
}

func runGrow(cmd *cobra.Command, o *growOptions, name string, members []string) error {
	var want int64
	switch s := strings.ToLower(strings.TrimSpace(o.size)); s {
	case "":
		return usageError{fmt.Errorf("--size is required: max, or the array's new size, e.g. --size 2T")}
	case "max":
	default:
		v, err := parseSize(s)
		if err != nil || v == 0 {
			return usageError{fmt.Errorf("--size: %q: give max, or a positive size such as 512G", o.size)}
		}
		want = v
	}
	if _, running := runningDevice(cmd.Context(), name); running {
		if len(members) > 0 {
			return usageError{fmt.Errorf("array %s is running: its daemon knows its members; leave them out", name)}
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), memberTimeout)
		defer cancel()
		res, err := daemon.NewClient(name).Grow(ctx, daemon.GrowRequest{SizeBytes: want, Force: o.force})
		if err != nil {
			return err
		}
		return printGrow(cmd, o, name, res)
	}
	if err := daemon.CheckFree(cmd.Context(), name); err != nil {
		return err
	}
	if len(members) == 0 {
		conf, err := scanConfig(cmd, DefaultConfig)
		if err != nil {
			return err
		}
		res, _, err := scanFound(conf)
		if err != nil {
			return err
		}
		f, ok := findArray(res, name)
		if !ok {
			return fmt.Errorf("array %s: no member found (%s superblocks); name its members: uraid grow %s --size %s MEMBER...",
				name, describeScan(res), name, o.size)
		}
		members = memberPaths(f)
	}
	for i, m := range members {
		members[i] = absPath(m)
	}
	a, err := array.Assemble(name, members, array.Options{Queues: 1, Depth: 1, Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	p, err := a.Grow(array.GrowOptions{Size: want, Force: o.force})
	if cerr := a.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("array %s: grown, but closing its members: %w", name, cerr)
	}
	if err != nil {
		return err
	}
	return printGrow(cmd, o, name, daemon.GrowResult{Schema: daemon.Schema, OldSize: p.OldSize, NewSize: p.NewSize, DataSize: p.NewDataSize,
		Asked: p.Asked, Rounded: p.Rounded})
}

func printGrow(cmd *cobra.Command, o *growOptions, name string, r daemon.GrowResult) error {
	if o.json {
		return writeJSON(cmd.OutOrStdout(), r)
	}
	verb := "grown"
	if r.NewSize < r.OldSize {
		verb = "shrunk"
	}
	note := ""
	if r.Rounded {
		note = fmt.Sprintf(" (%s asked for, rounded down to what the layout can have)", bytesize.Format(r.Asked))
	}
	w := cmd.OutOrStdout()
	if _, err := fmt.Fprintf(w, "uraid: array %s: %s from %s (%d bytes) to %s (%d bytes), %s of data on each member%s\n",
		name, verb, bytesize.Format(r.OldSize), r.OldSize, bytesize.Format(r.NewSize), r.NewSize,
		bytesize.Format(r.DataSize), note); err != nil {
		return err
	}
	if r.Note != "" {
		_, err := fmt.Fprintf(w, "uraid: array %s: %s\n", name, r.Note)
		return err
	}
	return nil
}
