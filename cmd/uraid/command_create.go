package main

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
	"uraid/mapping"
	"uraid/raid"
	"uraid/ublk"
)

type createOptions struct {
	level  string
	layout string
	chunk  sizeFlag
	size   sizeFlag
	force  bool
	spares []string
	serve  serveFlags
}

func numCPU() int { return runtime.NumCPU() }

func newCreateCommand() *cobra.Command {
	var o createOptions
	cmd := &cobra.Command{
		Use:   "create NAME --level linear|0|1|10 [flags] MEMBER|missing...",
		Short: "Create an array, start it, and print its device",
		Long: `Create writes a superblock to every member, starts the array's daemon and prints the device
(/dev/ublkbN) once it is usable. A MEMBER path that does not exist is created as a sparse file
of --size bytes. The word missing in place of a member leaves its slot empty: a raid1 or raid10
is created degraded (every byte must keep a copy), for uraid add to fill; a file named missing
is given as ./missing. Nothing is written to any member unless every check passes: members that
carry a superblock or any signature blkid -p finds (a filesystem, swap, LUKS, LVM, md, a
partition table; unless --force, or wipefs -a them first), are mounted or in use, are named
twice or are too small are refused, and so is a host without ublk (modprobe ublk_drv) or a
--metrics-listen address in use. Should a write fail, or the array fail to start, create puts
every member back as it was and removes the member files it made.`,
		Example: `  uraid create demo --level 10 --size 1G /var/lib/uraid/demo/m{0..3}
  uraid create half --level 10 /dev/sda missing /dev/sdc /dev/sdd
  uraid create fast --level 0 --chunk 256K --discard async /dev/nvme0n1 /dev/nvme1n1`,
		Args: arrayArgs(cobra.MinimumNArgs(2), false),
		// The name is new: nothing to offer; members are files.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCreate(cmd, args[0], args[1:], &o) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.level, "level", "l", "", "RAID level: linear, 0, 1 or 10 (required)")
	fl.StringVar(&o.layout, "layout", "", "RAID10 copy layout: n2 (default), f2 or o2")
	fl.Var(&o.chunk, "chunk", "stripe unit of levels 0 and 10, a power of two from 4K (default 512K)")
	fl.Var(&o.size, "size", "bytes of each member to use; members that do not exist are created this size")
	fl.BoolVar(&o.force, "force", false, "overwrite members that carry a uraid superblock or any signature blkid finds, without looking")
	fl.StringArrayVar(&o.spares, "spare", nil, "a hot spare (raid1, raid10), which takes a failed member's place by itself; repeatable")
	o.serve.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("level", fixedWords(levelWords...))
	_ = cmd.RegisterFlagCompletionFunc("layout", fixedWords(layoutWords...))
	registerServeCompletion(cmd)
	return cmd
}

func runCreate(cmd *cobra.Command, name string, members []string, o *createOptions) error {
	if o.level == "" {
		return usageError{fmt.Errorf("--level is required: linear, 0, 1 or 10")}
	}
	level, err := mapping.ParseLevel(o.level)
	if err != nil {
		return usageError{err}
	}
	if len(o.spares) > 0 && !level.Redundant() {
		return usageError{fmt.Errorf("--spare: level %s keeps one copy of each byte, so no spare can rebuild a member; use level 1 or 10, or drop --spare", level.ShortName())}
	}
	if cmd.Flags().Changed("chunk") && o.chunk == 0 {
		return usageError{fmt.Errorf("--chunk 0: give a power of two from %s to %s, e.g. --chunk 512K, or leave --chunk out for the default (%s)",
			bytesize.Format(mapping.MinChunkBytes), bytesize.Format(mapping.MaxChunkBytes), bytesize.Format(mapping.DefaultChunkBytes))}
	}
	layout := mapping.NoLayout // raid.Create picks n2 for raid10
	if o.layout != "" {
		if layout, err = mapping.ParseLayout(o.layout); err != nil {
			return usageError{err}
		}
	}
	if err := o.serve.check(); err != nil {
		return err
	}
	// Checked again when the array starts, but by then the superblocks would be written.
	if err := o.serve.options(false).Discard.CheckMembers(members); err != nil {
		return err
	}
	// As recorded (raid.StablePath); the word missing stays a word, ./missing becomes a path.
	for i, m := range members {
		if m != raid.MissingMember {
			members[i] = raid.StablePath(m)
		}
	}
	o.spares = raid.StablePaths(o.spares)
	// The daemon's rules, checked before anything is written to a member: the name is valid, no
	// array of that name runs, and no dead one's device waits for recovery.
	if err := daemon.CheckFree(cmd.Context(), name); err != nil {
		return err
	}
	plan, err := raid.PlanCreate(raid.CreateOptions{
		Name: name, Level: level, Layout: layout, Chunk: int64(o.chunk), Size: int64(o.size),
		Members: members, Spares: o.spares, Force: o.force,
	})
	if errors.Is(err, raid.ErrBadGeometry) {
		// --level, --layout and --chunk that do not go together, or a member count the level
		// cannot have: how uraid was called, not what the members hold.
		return usageError{err}
	}
	if err != nil {
		return err
	}
	// What the array needs to be served, checked before the first write: a create that cannot
	// start leaves nothing for a retry to need --force for.
	if err := checkServe(&o.serve); err != nil {
		plan.Abort()
		return fmt.Errorf("array %s: nothing written: %w", name, err)
	}
	c, err := plan.Commit()
	if err != nil {
		return err
	}
	// The daemon is given the devices; a slot left missing makes the array start degraded.
	var paths []string
	degraded := false
	for _, m := range members {
		if m == raid.MissingMember {
			degraded = true
			continue
		}
		paths = append(paths, m)
	}
	paths = append(paths, o.spares...)
	var started atomic.Bool // the device was usable: the members are the array's now
	err = func() error {
		if o.serve.foreground {
			a, err := array.NewArray(c.Members, c.Superblocks, o.serve.options(degraded))
			if err != nil {
				c.Close()
				return err
			}
			return serveHere(cmd, a, paths, &o.serve, nil, degraded, func() { started.Store(true) })
		}
		// The daemon assembles the members itself; ours must let go of them first.
		c.Close()
		err := serveDetached(cmd, name, paths, &o.serve, degraded)
		started.Store(err == nil)
		return err
	}()
	if err == nil || started.Load() {
		return err
	}
	return undoCreate(cmd, name, c, err)
}

// checkServe is canServe; a test replaces it to reach the start of an array on a host that
// cannot serve one.
var checkServe = canServe

// canServe checks what serving a new array needs from the host: ublk, and the metrics address.
func canServe(f *serveFlags) error {
	if err := daemon.ProbeMetricsListen(f.metrics); err != nil {
		return err
	}
	return ublk.Available()
}

// undoCreate puts the members back as they were after the array failed to start, unless the
// start left a device (a daemon that died serving it): then they are the array's.
func undoCreate(cmd *cobra.Command, name string, c *raid.Created, err error) error {
	if ferr := daemon.CheckFree(cmd.Context(), name); ferr != nil {
		return fmt.Errorf("%w (the members keep their superblocks: %v)", err, ferr)
	}
	if uerr := c.Undo(); uerr != nil {
		return fmt.Errorf("%w; undoing the create failed, the members may carry its superblocks: %v", err, uerr)
	}
	return fmt.Errorf("%w (the create was undone: every member is as it was)", err)
}
