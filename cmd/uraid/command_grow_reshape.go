package main

// command_grow_reshape.go: uraid grow NAME --add DEV... without --copies, on a stopped raid0 or
// raid10 (n2, o2): the array is reshaped offline to more members (array.Reshape); a running one
// reshapes online through its daemon (daemon.AppendMembers). A linear array's --add is an append
// (command_grow.go): runAdd sends each level its way.

import (
	"fmt"
	"log/slog"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
	"uraid/mapping"
	"uraid/raid"
)

// reshapeResult is what grow --add --json prints of a reshape.
type reshapeResult struct {
	Schema       int   `json:"schema"`
	OldMembers   int   `json:"old_members"`
	NewMembers   int   `json:"new_members"`
	OldSize      int64 `json:"old_size"`
	NewSize      int64 `json:"new_size"`
	Resumed      bool  `json:"resumed"`
	Steps        int   `json:"steps"`
	LiveBytes    int64 `json:"live_bytes"`
	ReadBytes    int64 `json:"read_bytes"`
	WriteBytes   int64 `json:"write_bytes"`
	DiscardBytes int64 `json:"discard_bytes"`
}

// runAdd sends --add without --copies where the array's level takes it. A running array goes to
// its daemon, which appends to a linear array and reshapes a raid0 or raid10 online (others are
// refused there); a stopped raid0 or raid10 is reshaped in place, any other stopped array appends
// in place (or is refused there, with the reason).
func runAdd(cmd *cobra.Command, o *growOptions, name string, members []string) error {
	if _, running := runningDevice(cmd.Context(), name); running {
		return runAppend(cmd, o, name, members)
	}
	found, err := growMembers(cmd, name, slices.Clone(members), "--add DEV")
	if err != nil {
		return err
	}
	f, err := os.Open(found[0])
	if err != nil {
		return err
	}
	sb, err := raid.ReadSuperblock(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", found[0], err)
	}
	if sb.Level == mapping.RAID0 || sb.Level == mapping.RAID10 {
		if o.maxRate != 0 {
			return usageError{fmt.Errorf("--max-rate paces the online reshape of a running array; array %s is stopped and reshapes at once: leave it out", name)}
		}
		return runReshape(cmd, o, name, members)
	}
	return runAppend(cmd, o, name, members)
}

// runReshape widens a stopped raid0 or raid10 by the devices at --add, or resumes a reshape of it
// that was cut short. runAdd sent a running one to its daemon, which reshapes it online.
func runReshape(cmd *cobra.Command, o *growOptions, name string, members []string) error {
	if err := daemon.CheckFree(cmd.Context(), name); err != nil {
		return err
	}
	add := make([]string, len(o.add))
	for i, d := range o.add {
		add[i] = absPath(d)
	}
	scanned := len(members) == 0
	members, err := growMembers(cmd, name, members, "--add DEV")
	if err != nil {
		return err
	}
	if scanned {
		// A scan of an array mid-reshape finds its new members too: they are named once, as added.
		members = slices.DeleteFunc(members, func(m string) bool { return slices.Contains(add, m) })
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := array.Reshape(name, members, add, array.ReshapeOptions{Force: o.force, Log: log})
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), reshapeResult{Schema: daemon.Schema, OldMembers: r.OldMembers, NewMembers: r.NewMembers,
			OldSize: r.OldSize, NewSize: r.NewSize, Resumed: r.Resumed, Steps: r.Steps, LiveBytes: r.LiveBytes,
			ReadBytes: r.ReadBytes, WriteBytes: r.WriteBytes, DiscardBytes: r.DiscardBytes})
	}
	verb := "reshaped"
	if r.Resumed {
		verb = "reshape resumed and finished:"
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "uraid: array %s: %s from %d to %d members, %s (%d bytes) to %s (%d bytes); moved %s of %s live (read %d, wrote %d bytes, discarded %d)\n",
		name, verb, r.OldMembers, r.NewMembers, bytesize.Format(r.OldSize), r.OldSize, bytesize.Format(r.NewSize), r.NewSize,
		bytesize.Format(r.ReadBytes), bytesize.Format(r.LiveBytes), r.ReadBytes, r.WriteBytes, r.DiscardBytes)
	return err
}
