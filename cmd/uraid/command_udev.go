package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/raid"
)

// newUdevInfoCommand is what the udev rules (packaging/udev/69-uraid.rules) import for a block
// device, as KEY=value lines: for an array's own device (/dev/ublkbN) the array it serves, from
// the record its daemon wrote before the device existed; for a member, the array it belongs to.
// Anything else prints nothing, and it exits 0 either way: udev must go on with the device.
func newUdevInfoCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "udev-info DEVNODE",
		Short:  "Print what udev needs to know of a block device (for the udev rules)",
		Hidden: true,
		Args:   usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			dev := args[0]
			if strings.HasPrefix(filepath.Base(dev), "ublkb") {
				rec, err := daemon.RecordOfDevice(dev)
				if err != nil || rec == nil {
					return nil
				}
				_, err = fmt.Fprintf(out, "URAID_NAME=%s\nURAID_UUID=%s\n", rec.Name, rec.UUID)
				return err
			}
			res := raid.Scan([]string{dev})
			if len(res.Arrays) != 1 {
				return nil
			}
			f := res.Arrays[0]
			sb := f.Members[0].SB
			_, err := fmt.Fprintf(out, "URAID_MEMBER_ARRAY=%s\nURAID_MEMBER_ARRAY_UUID=%s\nURAID_MEMBER_ROLE=%s\nURAID_MEMBER_INDEX=%d\n",
				f.Name, f.UUID, sb.Role, sb.Index)
			return err
		},
	}
}
