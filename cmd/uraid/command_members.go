package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/internal/bytesize"
)

// memberTimeout bounds a membership change: it returns once made, the rebuild runs on.
const memberTimeout = 2 * time.Minute

// maxRateFlag is a rate in bytes per second, written as a size with an optional "/s": 50M,
// 50M/s, 1G/s.
type maxRateFlag int64

func (f *maxRateFlag) String() string {
	if *f == 0 {
		return "0"
	}
	return bytesize.Format(int64(*f)) + "/s"
}

func (f *maxRateFlag) Set(s string) error {
	v, err := parseSize(strings.TrimSuffix(strings.TrimSuffix(s, "/s"), "/S"))
	if err != nil {
		return fmt.Errorf("rate %q: use bytes per second with an optional K, M, G or T suffix, e.g. 50M (MiB/s)", s)
	}
	*f = maxRateFlag(v)
	return nil
}

func (f *maxRateFlag) Type() string { return "rate" }

// absPath makes a device path the daemon opens independent of this command's directory.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func changeMember(cmd *cobra.Command, name, op string, c daemon.MemberChange) error {
	if err := daemon.CheckName(name); err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), memberTimeout)
	defer cancel()
	res, err := daemon.NewClient(name).ChangeMember(ctx, op, c)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "uraid: array %s: %s\n", name, res)
	return err
}

func newFailCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "fail NAME MEMBER",
		Short: "Take a member of a RAID1 or RAID10 out of service, as an I/O error would",
		Long: `Fail stops all reads and writes to MEMBER, as if it had returned an I/O error; a hot spare,
if the array has one, takes its place and is rebuilt. It refuses a member that holds the last
copy of some data, and arrays without redundancy. The member's device stays open until uraid
remove lets go of it.`,
		Example: `  uraid fail demo /dev/sdb`,
		Args:    usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeMember(cmd, args[0], daemon.OpFail, daemon.MemberChange{Member: args[1]})
		},
	}
}

func newRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME MEMBER",
		Short: "Let go of a failed member or a spare; its slot is left empty for uraid add",
		Long: `Remove closes a failed member's device (or a spare's) and leaves its slot empty. An active
member must be failed first (uraid fail).`,
		Example: `  uraid fail demo /dev/sdb && uraid remove demo /dev/sdb`,
		Args:    usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeMember(cmd, args[0], daemon.OpRemove, daemon.MemberChange{Member: args[1]})
		},
	}
}

func newAddCommand() *cobra.Command {
	var force bool
	var rate maxRateFlag
	cmd := &cobra.Command{
		Use:   "add NAME MEMBER",
		Short: "Add a device to a RAID1 or RAID10: back into its slot, into an empty slot, or as a spare",
		Long: `Add puts MEMBER into the running array and returns; a rebuild then runs in the background
(uraid status shows it, uraid wait waits for it):
  - a member of this array that left (failed, removed) comes back to its slot and gets only the
    regions written while it was away;
  - a blank device fills an empty or failed slot and is rebuilt: live regions are copied from
    the other copies, trimmed regions are trimmed;
  - with every slot in service, it becomes a hot spare.
A device that carries another array's superblock or any signature blkid -p finds (a filesystem,
swap, LUKS, LVM, md, a partition table) is refused unless --force (or wipefs -a it first), and so
are devices too small, in use (opened exclusively elsewhere) or in the array already.`,
		Example: `  uraid add demo /dev/sdd
  uraid add demo --max-rate 50M /dev/sdd`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeMember(cmd, args[0], daemon.OpAdd,
				daemon.MemberChange{Member: absPath(args[1]), Force: force, MaxRateBytesPS: int64(rate)})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite a device that carries a superblock or any signature blkid finds")
	cmd.Flags().Var(&rate, "max-rate", "cap the rebuild at RATE bytes per second while the array is otherwise idle, e.g. 50M (default: no cap)")
	return cmd
}

func newReplaceCommand() *cobra.Command {
	var force bool
	var rate maxRateFlag
	cmd := &cobra.Command{
		Use:   "replace NAME OLD NEW",
		Short: "Rebuild a member onto a new device while it still serves, then swap them",
		Long: `Replace copies active member OLD onto the blank device NEW while OLD goes on serving (every
write reaches both), then puts NEW in OLD's place and lets OLD go: the array keeps its
redundancy throughout. It returns once the copy has started (uraid wait waits for it). NEW is
checked as for uraid add; a failed OLD is not replaced but re-added: uraid add NAME NEW.`,
		Example: `  uraid replace demo /dev/sdb /dev/sde`,
		Args:    usageArgs(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeMember(cmd, args[0], daemon.OpReplace,
				daemon.MemberChange{Member: args[1], New: absPath(args[2]), Force: force, MaxRateBytesPS: int64(rate)})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite a NEW that carries a superblock or any signature blkid finds")
	cmd.Flags().Var(&rate, "max-rate", "cap the copy at RATE bytes per second while the array is otherwise idle, e.g. 50M (default: no cap)")
	return cmd
}
