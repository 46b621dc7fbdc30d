package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"uraid/array"
	"uraid/daemon"
	"uraid/raid"
)

// DefaultConfig names member files (and devices) for assemble --scan besides the block devices,
// and with ARRAY lines which arrays it assembles. It may be absent; a --config named must not be.
const DefaultConfig = "/etc/uraid.conf"

// scanPoll is how often assemble --scan --wait looks again for members that have not appeared.
const scanPoll = 250 * time.Millisecond

// sysBlock is where the scan lists block devices; tests point it elsewhere.
var sysBlock = raid.DefaultSysBlock

// scanConfig reads the configuration file; required when it was named on the command line.
func scanConfig(cmd *cobra.Command, path string) (raid.Config, error) {
	return raid.ReadConfig(path, cmd.Flags().Changed("config"))
}

// scanFound scans the block devices and the paths conf names.
func scanFound(conf raid.Config) (raid.ScanResult, int, error) {
	devs, err := raid.BlockCandidates(sysBlock)
	if err != nil {
		return raid.ScanResult{}, 0, err
	}
	paths := append(devs, conf.Paths...)
	return raid.Scan(paths), len(paths), nil
}

// wholeArray reports whether every slot of f has its current member.
func wholeArray(f raid.Found) bool {
	asm, err := raid.CheckAssembly(f.Members)
	return asm != nil && err == nil
}

// assembleScan is assemble --scan [NAME]: every array (or NAME) whose members it finds, each
// started unless it runs already.
func assembleScan(cmd *cobra.Command, o *assembleOptions, name string) error {
	if name != "" {
		if err := daemon.CheckName(name); err != nil {
			return usageError{err}
		}
		if o.recover && daemon.Recoverable(name) {
			if o.serve.foreground {
				return recoverHere(cmd, name, &o.serve, nil)
			}
			return recoverDetached(cmd, name)
		}
	} else if o.serve.foreground {
		return usageError{errors.New("--scan --foreground serves one array in this process: name it (uraid assemble --scan NAME --foreground)")}
	}
	conf, err := scanConfig(cmd, o.config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(o.wait)
	var res raid.ScanResult
	var scanned int
	var notListed []raid.Found
	var refused []error
	for {
		var err error
		if res, scanned, err = scanFound(conf); err != nil {
			return err
		}
		res, notListed, refused = conf.Select(res, o.config)
		if name == "" || time.Now().After(deadline) {
			break
		}
		if f, ok := findArray(res, name); ok && wholeArray(f) {
			break
		}
		time.Sleep(scanPoll)
	}
	errOut := cmd.ErrOrStderr()
	for p, err := range res.Unreadable {
		fmt.Fprintf(errOut, "uraid: scan: %s: %v\n", p, err)
	}
	for _, f := range notListed {
		if name == "" {
			fmt.Fprintf(errOut, "uraid: array %s (%s): not in %s's ARRAY lines, left alone (to assemble it at scan: uraid examine --scan >> %s)\n",
				f.Name, f.UUID, o.config, o.config)
		}
	}
	arrays := res.Arrays
	if name != "" {
		f, ok := findArray(res, name)
		if !ok {
			if i := slices.IndexFunc(notListed, func(f raid.Found) bool { return f.Name == name }); i >= 0 {
				return fmt.Errorf("array %s (%s): not assembled: %s has ARRAY lines and none lists it; add its line (uraid examine --scan prints it) to assemble it by scan, or assemble it by its members",
					name, notListed[i].UUID, o.config)
			}
			if len(refused) > 0 {
				return errors.Join(refused...)
			}
			return fmt.Errorf("array %s: no member found on %d block devices and files (%s); are its devices attached, or its member files listed in %s?", name, scanned, describeScan(res), o.config)
		}
		arrays = []raid.Found{f}
	} else if len(arrays) == 0 {
		if len(refused) > 0 {
			return errors.Join(refused...)
		}
		if len(notListed) == 0 {
			fmt.Fprintf(errOut, "uraid: no uraid member found on %d block devices and files\n", scanned)
		}
		return nil
	}
	if err := sameNameTwice(res.Arrays); err != nil {
		return err
	}
	if o.serve.foreground {
		f := arrays[0]
		if err := readyToAssemble(cmd.Context(), f, o.degraded); err != nil {
			return err
		}
		a, err := array.Assemble(f.Name, memberPaths(f), o.serve.options(o.degraded))
		if err != nil {
			return err
		}
		return serveHere(cmd, a, memberPaths(f), &o.serve, nil, o.degraded, nil)
	}
	errs := refused
	if name != "" {
		errs = nil
	}
	for _, f := range arrays {
		if dev, ok := runningDevice(cmd.Context(), f.Name); ok {
			fmt.Fprintf(errOut, "uraid: array %s: already running on %s\n", f.Name, dev)
			continue
		}
		if err := readyToAssemble(cmd.Context(), f, o.degraded); err != nil {
			errs = append(errs, err)
			continue
		}
		members := memberPaths(f)
		a, err := array.Assemble(f.Name, members, o.serve.options(o.degraded))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.Close()
		args := append([]string{"serve", f.Name}, o.serve.args()...)
		if o.degraded {
			args = append(args, "--degraded")
		}
		dev, err := spawn(f.Name, append(append(args, "--"), members...))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", f.Name, dev)
	}
	return errors.Join(errs...)
}

func findArray(res raid.ScanResult, name string) (raid.Found, bool) {
	for _, f := range res.Arrays {
		if f.Name == name {
			return f, true
		}
	}
	return raid.Found{}, false
}

func memberPaths(f raid.Found) []string {
	var ps []string
	for _, m := range f.Members {
		ps = append(ps, m.Path)
	}
	return ps
}

// describeScan names the arrays a scan found, for an error that did not find the one asked for.
func describeScan(res raid.ScanResult) string {
	if len(res.Arrays) == 0 {
		return "no array's"
	}
	var ns []string
	for _, f := range res.Arrays {
		ns = append(ns, f.Name)
	}
	return "found arrays " + strings.Join(ns, ", ")
}

// sameNameTwice refuses two arrays of one name: which one is meant is the operator's call.
func sameNameTwice(arrays []raid.Found) error {
	for i := 1; i < len(arrays); i++ {
		a, b := arrays[i-1], arrays[i]
		if a.Name == b.Name {
			return fmt.Errorf("two arrays are called %s: %s on %s, and %s on %s; assemble the one meant by its members (uraid assemble %s MEMBER...)",
				a.Name, a.UUID, strings.Join(memberPaths(a), " "), b.UUID, strings.Join(memberPaths(b), " "), a.Name)
		}
	}
	return nil
}

// readyToAssemble says why f cannot be assembled now: it is incomplete (and not degraded), or its
// name is taken.
func readyToAssemble(ctx context.Context, f raid.Found, degraded bool) error {
	asm, err := raid.CheckAssembly(f.Members)
	if asm == nil {
		return fmt.Errorf("array %s: not assembled: %w", f.Name, err)
	}
	if err != nil && !degraded {
		return fmt.Errorf("array %s: not assembled: %w%s", f.Name, err, raid.DegradedHint(asm, "it starts once every member is there"))
	}
	return daemon.CheckFree(ctx, f.Name)
}

// runningDevice is the device of the array called name if its daemon answers.
func runningDevice(ctx context.Context, name string) (string, bool) {
	e := daemon.Lookup(ctx, name)
	if e.Status == nil {
		return "", false
	}
	return e.Status.Device, true
}
