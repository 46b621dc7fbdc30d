package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"uraid/daemon"
	"uraid/internal/bytesize"
	"uraid/raid"
)

// examined is a member's superblock as examine prints it in JSON.
type examined struct {
	Schema          int       `json:"schema"`
	Path            string    `json:"path"`
	Name            string    `json:"name"`
	UUID            string    `json:"uuid"`
	MemberUUID      string    `json:"member_uuid"`
	Level           string    `json:"level"`
	Layout          string    `json:"layout,omitempty"`
	ChunkBytes      uint64    `json:"chunk_bytes"`
	MemberCount     uint32    `json:"member_count"`
	Index           uint32    `json:"index"`
	DataOffsetBytes uint64    `json:"data_offset_bytes"`
	DataSizeBytes   uint64    `json:"data_size_bytes"`
	Events          uint64    `json:"events"`
	State           string    `json:"state"`
	CreateTime      time.Time `json:"create_time"`
	UpdateTime      time.Time `json:"update_time"`
	// Reshape is a reshape under way (grow --add cut short), which assemble resumes.
	Reshape *examinedReshape `json:"reshape,omitempty"`
}

// examinedReshape is the reshape state a member's superblock carries.
type examinedReshape struct {
	OldMembers  uint32 `json:"old_members"`
	CursorBytes int64  `json:"cursor_bytes"`
	BackupBytes int64  `json:"backup_bytes"`
	Done        bool   `json:"done"`
}

func examineOf(path string, sb *raid.Superblock) examined {
	e := examined{Schema: daemon.Schema, Path: path, Name: sb.Name, UUID: sb.ArrayUUID.String(),
		MemberUUID: sb.MemberUUID.String(), Level: sb.Level.ShortName(), ChunkBytes: sb.ChunkSize,
		MemberCount: sb.Members, Index: sb.Index, DataOffsetBytes: sb.DataOffset, DataSizeBytes: sb.DataSize,
		Events: sb.Events, State: sb.State.String(),
		CreateTime: time.Unix(0, sb.CreateTime).UTC(), UpdateTime: time.Unix(0, sb.UpdateTime).UTC()}
	if sb.Level.HasLayout() {
		e.Layout = sb.Layout.String()
	}
	if r := sb.Reshape; r != nil {
		e.Reshape = &examinedReshape{OldMembers: r.OldMembers, CursorBytes: r.State.Cursor, BackupBytes: r.State.Backup.Length(), Done: r.State.Done}
	}
	return e
}

func newExamineCommand() *cobra.Command {
	var asJSON, scan bool
	var config string
	cmd := &cobra.Command{
		Use:   "examine MEMBER | examine --scan [--config FILE]",
		Short: "Print the superblock of a member disk or file, or an ARRAY line for every array found",
		Long: `Examine prints the superblock of a member disk or file. --scan reads every block device
and the files --config (default /etc/uraid.conf) names, as assemble --scan does, and prints an
ARRAY line for every array whose members it finds, in the configuration file's format:

  ARRAY NAME UUID=... [devices=FILE,...]

devices= lists the members that are files (block devices are found without it), so that
uraid examine --scan >> /etc/uraid.conf makes assemble --scan start exactly these arrays.`,
		Example: `  uraid examine /dev/sdb
  uraid examine --scan >> /etc/uraid.conf`,
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if scan && len(args) > 0 {
				return fmt.Errorf("--scan reads every block device and the files --config names: give no MEMBER, or leave out --scan to examine %s", args[0])
			}
			if scan {
				return nil
			}
			if cmd.Flags().Changed("config") {
				return fmt.Errorf("--config goes with --scan")
			}
			return cobra.ExactArgs(1)(cmd, args)
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if scan {
				if asJSON {
					return usageError{fmt.Errorf("--scan prints configuration lines: leave out --json")}
				}
				return examineScan(cmd, config)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			sb, err := raid.ReadSuperblock(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			e := examineOf(args[0], sb)
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, e)
			}
			row := func(k string, v any) { fmt.Fprintf(out, "%15s : %v\n", k, v) }
			row("Member", e.Path)
			row("Array Name", e.Name)
			row("Array UUID", e.UUID)
			row("Member UUID", e.MemberUUID)
			row("Raid Level", levelName(e.Level))
			if e.Layout != "" {
				row("Layout", e.Layout)
			}
			if e.ChunkBytes > 0 {
				row("Chunk Size", bytesize.Format(int64(e.ChunkBytes)))
			}
			row("Raid Devices", e.MemberCount)
			row("Device Role", fmt.Sprintf("member %d", e.Index))
			row("Data Offset", fmt.Sprintf("%d bytes", e.DataOffsetBytes))
			row("Data Size", fmt.Sprintf("%s (%d bytes)", bytesize.Format(int64(e.DataSizeBytes)), e.DataSizeBytes))
			row("Events", e.Events)
			row("State", e.State)
			row("Creation Time", e.CreateTime.Format(time.RFC3339))
			row("Update Time", e.UpdateTime.Format(time.RFC3339))
			if r := e.Reshape; r != nil {
				row("Reshape", fmt.Sprintf("%d to %d members, new layout below %d bytes, backup of %d bytes, done %v (uraid assemble or grow --add resumes it)",
					r.OldMembers, e.MemberCount, r.CursorBytes, r.BackupBytes, r.Done))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the superblock as JSON")
	cmd.Flags().BoolVar(&scan, "scan", false, "print an ARRAY line for every array found on the block devices and the files --config names")
	cmd.Flags().StringVar(&config, "config", DefaultConfig, "with --scan: file naming member files to read besides the block devices")
	return cmd
}

// examineScan prints the ARRAY line of every array a scan finds, whether or not the
// configuration lists it already; what it could not read goes to stderr.
func examineScan(cmd *cobra.Command, config string) error {
	conf, err := scanConfig(cmd, config)
	if err != nil {
		return err
	}
	res, scanned, err := scanFound(conf)
	if err != nil {
		return err
	}
	for p, err := range res.Unreadable {
		fmt.Fprintf(cmd.ErrOrStderr(), "uraid: scan: %s: %v\n", p, err)
	}
	if len(res.Arrays) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "uraid: no uraid member found on %d block devices and files\n", scanned)
	}
	for _, f := range res.Arrays {
		fmt.Fprintln(cmd.OutOrStdout(), raid.ArrayLine(f))
	}
	return nil
}
