package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
)

type growOptions struct {
	size    string
	copies  int
	add     []string
	force   bool
	json    bool
	maxRate maxRateFlag
}

func newGrowCommand() *cobra.Command {
	var o growOptions
	cmd := &cobra.Command{
		Use:   "grow NAME --size max|SIZE | --copies N [--add DEV]... | --add DEV... [MEMBER...]",
		Short: "Use the space of members that have grown, shrink the array, change a raid1's copies, append members to a linear array, or reshape a raid0 or raid10 to more members",
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
region map's regions can describe (256 GiB for 1 MiB regions).

With --copies N a raid1 keeps N copies. More: each device given with --add becomes a spare that
fills one new slot by a rebuild, which copies only the regions not trimmed (uraid wait NAME waits
for it); new slots without a device wait for uraid add. Fewer: the slots to drop must be empty
first (uraid fail NAME DEV, then uraid remove NAME DEV); members in higher slots move down. No data
moves either way: every copy of a raid1 is the whole array. A running array changes by a
hand-over (as uraid restart, so Linux 6.12 or later): it finishes its requests, commits the change
and a new daemon takes the device over without its going away. A raid10 keeps the copies of its
layout, and is refused, as are a failed member still in its slot and a rebuild, resync or replace
under way.

With --add DEV and no --copies a linear array takes each device as a new member after its last:
the array grows by one member's data size per device, and no byte moves. The new devices' data
areas are trimmed; each must be at least as large as a member's data offset plus data size. A
running array appends by a hand-over (as uraid restart), and its device then grows at once on Linux
6.16 and later; on older kernels it keeps its old size until it is made again (unmount, uraid stop
NAME, uraid assemble --scan NAME). A stopped array appends in place, its members found as for
--size. Refused, with nothing written: raid1 (use --copies N --add DEV), a degraded array, a device
that is a member already, too small, or holds data (a filesystem, another array's superblock)
without --force.

With --add alone a raid0 or raid10 (n2, o2) is reshaped to more members: its data is restriped
over the old and new members, the array grows by what the new ones hold, and only live data moves
(trimmed regions are not copied). It is crash-safe: the reshape's position is in every member's
superblock after each step, a window that would overwrite itself goes to a backup in the new
members' tail first, and an assemble resumes a reshape cut short. A running array reshapes online:
a hand-over (as uraid restart, so Linux 6.12 or later) commits the reshape, and the new daemon
serves the array at its old size while the bytes move, requests to the few chunks being moved at
a moment waiting for them; --max-rate caps the bytes moved per second. uraid status shows the
progress (sync action reshape), uraid wait NAME waits for it, uraid stop stops it at a step and
the next assemble takes it up. Once done the device grows (at once on Linux 6.16 and later; on
older kernels once it is made again). Resync, check, add and replace wait for the end; a member
that fails meanwhile pauses the reshape (the array serves degraded) until the array is assembled
whole. A stopped array is reshaped in place, at once. The array must be whole, stopped cleanly or
served, with no resync, rebuild or spare. raid10 f2 is refused.`,
		Example: `  uraid grow data --size max && resize2fs /dev/ublkb0
  uraid grow data --size 1T /dev/sdb /dev/sdc /dev/sdd /dev/sde   # stopped
  uraid grow mirror --copies 3 --add /dev/sdd
  uraid fail mirror /dev/sdb && uraid remove mirror /dev/sdb && uraid grow mirror --copies 2
  uraid grow concat --add /dev/sdf && resize2fs /dev/ublkb1
  uraid stop data && uraid grow data --add /dev/sdf --add /dev/sdg && uraid assemble --scan data
  uraid grow data --add /dev/sdf --max-rate 200M && uraid wait data && resize2fs /dev/ublkb0`,
		Args:              arrayArgs(cobra.MinimumNArgs(1), false),
		ValidArgsFunction: completeArrayThenFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGrow(cmd, &o, args[0], args[1:])
		},
	}
	cmd.Flags().StringVar(&o.size, "size", "", "the array's new size: max, or bytes with an optional K, M, G or T suffix")
	cmd.Flags().IntVar(&o.copies, "copies", 0, "the copies a raid1 is to keep")
	cmd.Flags().StringArrayVar(&o.add, "add", nil, "a device to append to a linear array or to reshape a stopped raid0 or raid10 onto, or with --copies to become a new copy (repeat for more)")
	cmd.Flags().BoolVar(&o.force, "force", false, "shrink below the filesystem found on the array; with --add, use devices that hold data")
	cmd.Flags().BoolVar(&o.json, "json", false, "print what was done as JSON")
	cmd.Flags().Var(&o.maxRate, "max-rate", "with --add on a running raid0 or raid10: cap the reshape at RATE array bytes moved per second, e.g. 200M (default: no cap)")
	return cmd
}

func runGrow(cmd *cobra.Command, o *growOptions, name string, members []string) error {
	copies := cmd.Flags().Changed("copies")
	switch {
	case copies && o.size != "":
		return usageError{fmt.Errorf("--size and --copies: give one; grow the size and the copies one after the other")}
	case copies:
		return runCopies(cmd, o, name, members)
	case len(o.add) > 0 && o.size != "":
		return usageError{fmt.Errorf("--size and --add: give one; add the members and grow the size one after the other")}
	case len(o.add) > 0:
		return runAdd(cmd, o, name, members)
	}
	var want int64
	switch s := strings.ToLower(strings.TrimSpace(o.size)); s {
	case "":
		return usageError{fmt.Errorf("--size, --copies or --add is required: --size max, the array's new size (--size 2T), a raid1's copies (--copies 3), or members to append to a linear array (--add DEV)")}
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
	members, err := growMembers(cmd, name, members, "--size "+o.size)
	if err != nil {
		return err
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

// runCopies changes a raid1's copies: through its daemon by a hand-over, or in place when it is
// stopped.
func runCopies(cmd *cobra.Command, o *growOptions, name string, members []string) error {
	if o.copies < 1 {
		return usageError{fmt.Errorf("--copies %d: a raid1 keeps at least one copy", o.copies)}
	}
	add := make([]string, len(o.add))
	for i, d := range o.add {
		add[i] = absPath(d)
	}
	req := daemon.CopiesRequest{Copies: o.copies, Add: add, Force: o.force}
	if _, running := runningDevice(cmd.Context(), name); running {
		if len(members) > 0 {
			return usageError{fmt.Errorf("array %s is running: its daemon knows its members; leave them out", name)}
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), spawnTimeout)
		defer cancel()
		res, dev, err := daemon.ChangeCopies(ctx, name, req, func() (string, error) {
			return spawn(name, []string{"serve", "--recover", name})
		})
		if err != nil {
			if res.New != 0 {
				return fmt.Errorf("array %s: %d copies committed, but no new daemon took %s over: %w (uraid recover %s)", name, res.New, dev, err, name)
			}
			return err
		}
		return printCopies(cmd, o, name, res)
	}
	if err := daemon.CheckFree(cmd.Context(), name); err != nil {
		return err
	}
	members, err := growMembers(cmd, name, members, fmt.Sprintf("--copies %d", o.copies))
	if err != nil {
		return err
	}
	// Degraded: the slots a drop takes away are empty.
	a, err := array.Assemble(name, members, array.Options{Queues: 1, Depth: 1, Degraded: true,
		Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	p, err := a.SetCopies(o.copies, add, o.force)
	if cerr := a.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("array %s: copies changed, but closing its members: %w", name, cerr)
	}
	if err != nil && p.New == 0 {
		return err
	}
	res := daemon.CopiesResult{Schema: daemon.Schema, Old: p.Old, New: p.New, Spares: p.Spares, Dropped: p.Dropped}
	if err != nil {
		res.Error = err.Error()
	}
	return printCopies(cmd, o, name, res)
}

func printCopies(cmd *cobra.Command, o *growOptions, name string, r daemon.CopiesResult) error {
	if r.New == 0 {
		// Refused after the daemon let its device go: a new daemon serves it as it was.
		return fmt.Errorf("array %s: copies not changed: %s", name, r.Error)
	}
	if o.json {
		if err := writeJSON(cmd.OutOrStdout(), r); err != nil {
			return err
		}
	} else {
		w := cmd.OutOrStdout()
		msg := fmt.Sprintf("uraid: array %s: %d copies (was %d)", name, r.New, r.Old)
		for _, d := range r.Dropped {
			msg += fmt.Sprintf("; slot %d dropped", d)
		}
		for _, sp := range r.Spares {
			msg += fmt.Sprintf("; %s fills a new slot by a rebuild (uraid wait %s)", sp, name)
		}
		if empty := r.New - r.Old - len(r.Spares); empty > 0 {
			msg += fmt.Sprintf("; %d new slot(s) wait for uraid add %s DEV", empty, name)
		}
		if _, err := fmt.Fprintln(w, msg); err != nil {
			return err
		}
	}
	if r.Error != "" {
		return fmt.Errorf("array %s: %s", name, r.Error)
	}
	return nil
}

// growMembers is the members of a stopped array to grow: those named, else those a scan finds.
func growMembers(cmd *cobra.Command, name string, members []string, how string) ([]string, error) {
	if len(members) == 0 {
		conf, err := scanConfig(cmd, DefaultConfig)
		if err != nil {
			return nil, err
		}
		res, _, err := scanFound(conf)
		if err != nil {
			return nil, err
		}
		f, ok := findArray(res, name)
		if !ok {
			return nil, fmt.Errorf("array %s: no member found (%s superblocks); name its members: uraid grow %s %s MEMBER...",
				name, describeScan(res), name, how)
		}
		members = memberPaths(f)
	}
	for i, m := range members {
		members[i] = absPath(m)
	}
	return members, nil
}

// runAppend appends members to a linear array: through its daemon by a hand-over, whose
// successor grows the device, or in place when it is stopped.
func runAppend(cmd *cobra.Command, o *growOptions, name string, members []string) error {
	add := make([]string, len(o.add))
	for i, d := range o.add {
		add[i] = absPath(d)
	}
	req := daemon.AppendRequest{Add: add, Force: o.force, MaxRateBytesPS: int64(o.maxRate)}
	if _, running := runningDevice(cmd.Context(), name); running {
		if len(members) > 0 {
			return usageError{fmt.Errorf("array %s is running: its daemon knows its members; leave them out", name)}
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), spawnTimeout)
		defer cancel()
		res, dev, err := daemon.AppendMembers(ctx, name, req, func() (string, error) {
			return spawn(name, []string{"serve", "--recover", name})
		})
		if err != nil {
			if res.NewMembers != 0 {
				return fmt.Errorf("array %s: members appended, but no new daemon took %s over: %w (uraid recover %s)", name, dev, err, name)
			}
			return err
		}
		if res.Reshape {
			res.Device = dev
			return printAppend(cmd, o, name, res)
		}
		if res.NewMembers != 0 {
			res.Device = dev
			res.DeviceSize, err = blockDeviceSize(dev)
			switch {
			case err != nil:
				res.Note = fmt.Sprintf("the array is %s now; the size of %s could not be read: %v", bytesize.Format(res.NewSize), dev, err)
			case res.DeviceSize >= res.NewSize:
				res.DeviceGrown = true
			default:
				res.Note = fmt.Sprintf("the array is %s now, but this kernel cannot resize a running ublk device (Linux 6.16 can): "+
					"%s keeps %s until it is made again: unmount it, uraid stop %s, uraid assemble --scan %s",
					bytesize.Format(res.NewSize), dev, bytesize.Format(res.DeviceSize), name, name)
			}
		}
		return printAppend(cmd, o, name, res)
	}
	if o.maxRate != 0 {
		return usageError{fmt.Errorf("--max-rate paces the online reshape of a running raid0 or raid10; array %s is stopped: leave it out", name)}
	}
	if err := daemon.CheckFree(cmd.Context(), name); err != nil {
		return err
	}
	members, err := growMembers(cmd, name, members, "--add "+strings.Join(o.add, " --add "))
	if err != nil {
		return err
	}
	a, err := array.Assemble(name, members, array.Options{Queues: 1, Depth: 1, Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	p, err := a.Append(array.AppendOptions{Add: add, Force: o.force})
	if cerr := a.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("array %s: members appended, but closing them: %w", name, cerr)
	}
	if err != nil && !p.Committed {
		return err
	}
	res := daemon.AppendResult{Schema: daemon.Schema, OldMembers: p.OldMembers, NewMembers: p.NewMembers, Added: p.Added,
		OldSize: p.OldSize, NewSize: p.NewSize, DataSize: p.DataSize}
	if err != nil {
		res.Error = err.Error()
	}
	return printAppend(cmd, o, name, res)
}

func printAppend(cmd *cobra.Command, o *growOptions, name string, r daemon.AppendResult) error {
	if r.NewMembers == 0 {
		// Refused after the daemon let its device go: a new daemon serves it as it was.
		return fmt.Errorf("array %s: members not appended: %s", name, r.Error)
	}
	if o.json {
		if err := writeJSON(cmd.OutOrStdout(), r); err != nil {
			return err
		}
	} else if r.Reshape {
		if _, err := fmt.Fprintf(cmd.OutOrStdout(), "uraid: array %s: reshape to %d members (was %d) started, %s added: %s serves its %s while the bytes move, and grows to %s (%d bytes) once done (uraid status %s, uraid wait %s)\n",
			name, r.NewMembers, r.OldMembers, strings.Join(r.Added, ", "), r.Device, bytesize.Format(r.OldSize), bytesize.Format(r.NewSize), r.NewSize, name, name); err != nil {
			return err
		}
	} else {
		w := cmd.OutOrStdout()
		if _, err := fmt.Fprintf(w, "uraid: array %s: %s appended: %d members (was %d), %s (%d bytes, was %s), %s of data on each member\n",
			name, strings.Join(r.Added, ", "), r.NewMembers, r.OldMembers, bytesize.Format(r.NewSize), r.NewSize,
			bytesize.Format(r.OldSize), bytesize.Format(r.DataSize)); err != nil {
			return err
		}
		if r.Note != "" {
			if _, err := fmt.Fprintf(w, "uraid: array %s: %s\n", name, r.Note); err != nil {
				return err
			}
		}
	}
	if r.Error != "" {
		return fmt.Errorf("array %s: %s", name, r.Error)
	}
	return nil
}

// blockDeviceSize is the size of the block device at path as the kernel has it.
func blockDeviceSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return 0, os.NewSyscallError("ioctl BLKGETSIZE64", err)
	}
	return int64(n), nil
}
