package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/raid"
)

type zeroSuperblockOptions struct {
	force bool
}

func newZeroSuperblockCommand() *cobra.Command {
	var o zeroSuperblockOptions
	cmd := &cobra.Command{
		Use:   "zero-superblock DEVICE...",
		Short: "Erase the uraid superblock of devices that are no longer wanted as members",
		Long: `Zero-superblock overwrites the uraid superblock of each DEVICE (the 4 KiB block at offset
4 KiB) with zeros, so that it is no member of any array and create, add and assemble --scan see
a blank device. Nothing else on it is touched. Every device is checked before any is written:
a member of a running array (or of one whose daemon died and whose device waits for uraid
recover) is refused, stop the array first; so is a device that carries no uraid superblock,
unless --force.`,
		Example: `  uraid zero-superblock /dev/sdb /dev/sdc`,
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE:    func(cmd *cobra.Command, args []string) error { return runZeroSuperblock(cmd, args, &o) },
	}
	cmd.Flags().BoolVar(&o.force, "force", false, "zero the superblock block of a device that carries no uraid superblock too")
	return cmd
}

func runZeroSuperblock(cmd *cobra.Command, devices []string, o *zeroSuperblockOptions) error {
	for _, d := range devices {
		name, how, err := daemon.HolderOf(cmd.Context(), d)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s does not exist: nothing erased; check the device name", d)
		}
		if err != nil {
			return fmt.Errorf("%s: find the array it may belong to: %w", d, err)
		}
		if name != "" {
			return fmt.Errorf("%s is a member of array %s (%s): nothing erased; stop the array first (uraid stop %s)", d, name, how, name)
		}
	}
	zs, err := raid.ZeroSuperblocks(devices, o.force)
	for _, z := range zs {
		what := z.Note
		if z.SB != nil {
			what = fmt.Sprintf("member %d of array %s (%s)", z.SB.Index, z.SB.Name, z.SB.ArrayUUID)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "uraid: %s: superblock erased (%s)\n", z.Path, what)
	}
	return err
}
