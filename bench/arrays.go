package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	uarray "uraid/array" // named apart from this package's own type array
	"uraid/daemon"
	"uraid/mapping"
)

// System is one array implementation and configuration under test.
type System struct {
	Name    string // "md-raid10", "uraid-raid10-async"
	MD      bool
	Level   mapping.Level // RAID0 or RAID10
	Discard string        // uraid's --discard: "sync" or "async"
	// ZeroCopy is uraid's URAID_ZERO_COPY ("" for the default: zero copy
	// where the kernel has it).
	ZeroCopy string
	// BatchIO is uraid's URAID_BATCH_IO ("" for the default).
	BatchIO string
	// Learned leaves out every TRIM flag: each member's lane learns how to
	// trim it (docs/discard.md, "Learning each member"). Otherwise the
	// array is told what an admin who knew the drives would say
	// (--trim-exclusive for an Exclusive drive) and TrimGap.
	Learned bool
	// TrimGap is uraid's --trim-gap (0: not given).
	TrimGap time.Duration
	// Args are further uraid create arguments ("--queues", "1").
	Args []string
	// Env is added to uraid's environment.
	Env []string
	// Bin is the uraid that creates (and so serves) the array, when not the configured one.
	Bin string
}

func mdSystem(level mapping.Level) System {
	return System{Name: "md-" + level.String(), MD: true, Level: level}
}

func uraidSystem(level mapping.Level, mode string) System {
	return System{Name: "uraid-" + level.String() + "-" + mode, Level: level, Discard: mode}
}

// learnedSystem is uraidSystem with no TRIM flags: what a new user runs.
func learnedSystem(level mapping.Level, mode string) System {
	s := uraidSystem(level, mode)
	s.Name += "-learned"
	s.Learned = true
	return s
}

// gapSystem is uraidSystem with --trim-gap gap, hand-set.
func gapSystem(level mapping.Level, mode string, gap time.Duration) System {
	s := uraidSystem(level, mode)
	s.Name += "-gap" + gap.String()
	s.TrimGap = gap
	return s
}

// Systems lists the arrays for the given levels: md, uraid sync, uraid
// async, in that order per level. A quick run leaves out uraid sync: every
// array costs seconds to set up under emulation, and async is the mode the
// targets are about.
func Systems(levels []mapping.Level, quick bool) []System {
	var s []System
	for _, l := range levels {
		s = append(s, mdSystem(l))
		if !quick {
			s = append(s, uraidSystem(l, "sync"))
		}
		s = append(s, uraidSystem(l, "async"))
	}
	return s
}

// array is a running array over members.
type array struct {
	sys  System
	dev  string
	name string
	// members are the member devices, in the array's order.
	members []string
}

const (
	mdDevice  = "/dev/md/bench"
	arrayName = "bench"
	chunk     = "512K"
)

// create builds sys over the member devices. Unless sys learns, uraid is
// told which members stall I/O while they trim, as an admin would tell it of
// SATA SSDs it cannot recognise; md has no such setting.
func (r *Runner) create(sys System, members []string, drives []Drive) (*array, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if sys.MD {
		args := append([]string{"--create", mdDevice, "--run", "--assume-clean", "--level=" + sys.Level.ShortName(),
			fmt.Sprintf("--raid-devices=%d", len(members)), "--chunk=512", "--metadata=1.2", "--homehost=any"}, members...)
		if _, err := run(ctx, "mdadm", args...); err != nil {
			return nil, err
		}
		dev, err := resolve(mdDevice)
		if err != nil {
			return nil, err
		}
		return &array{sys: sys, dev: dev}, nil
	}
	var env []string
	if sys.ZeroCopy != "" {
		env = append(env, daemon.ZeroCopyEnv+"="+sys.ZeroCopy)
	}
	if sys.BatchIO != "" {
		env = append(env, daemon.BatchIOEnv+"="+sys.BatchIO)
	}
	env = append(env, sys.Env...)
	bin := r.cfg.URaid
	if sys.Bin != "" {
		bin = sys.Bin
	}
	out, err := runEnv(ctx, env, bin, createArgs(sys, members, drives)...)
	if err != nil {
		return nil, err
	}
	dev := strings.TrimSpace(out)
	if !strings.HasPrefix(dev, "/dev/") {
		return nil, fmt.Errorf("uraid create printed %q, want a device", dev)
	}
	return &array{sys: sys, dev: dev, name: arrayName}, nil
}

// createArgs are uraid create's arguments for sys over members, whose
// simulated drives are drives.
func createArgs(sys System, members []string, drives []Drive) []string {
	args := []string{"create", arrayName, "--level", sys.Level.ShortName(), "--chunk", chunk, "--discard", sys.Discard, "--force"}
	args = append(args, sys.Args...)
	if sys.Learned {
		return append(args, members...)
	}
	var exclusive []string
	for i, d := range drives {
		if d.Exclusive {
			exclusive = append(exclusive, members[i])
		}
	}
	if len(exclusive) > 0 {
		args = append(args, "--trim-exclusive", strings.Join(exclusive, ","))
	}
	if sys.TrimGap > 0 {
		args = append(args, "--trim-gap", sys.TrimGap.String())
	}
	return append(args, members...)
}

// resolve follows /dev/md/NAME to /dev/mdN, waiting for mdadm's node.
func resolve(p string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		dev, err := os.Readlink(p)
		if err == nil {
			if !strings.HasPrefix(dev, "/") {
				dev = "/dev/md/" + dev
			}
			return cleanPath(dev), nil
		}
		if _, serr := os.Stat(p); serr == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("md device %s did not appear: %w", p, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func cleanPath(p string) string {
	parts := strings.Split(p, "/")
	var out []string
	for _, s := range parts {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// stop takes the array down, leaving the members to be stopped.
func (r *Runner) stop(a *array) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if a.sys.MD {
		_, err := run(ctx, "mdadm", "--stop", a.dev)
		return err
	}
	_, err := run(ctx, r.cfg.URaid, "stop", a.name)
	return err
}

// drain waits until uraid has no TRIM queued or running on any member, so
// that background work of one repetition does not leak into the next. md
// has no background TRIMs.
func (r *Runner) drain(a *array) error {
	if a.sys.MD {
		return nil
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st, err := r.status(a)
		if err != nil {
			return err
		}
		busy := 0
		for _, m := range st.Members {
			busy += m.Discard.Queued + m.Discard.InFlight
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("uraid still has %d TRIMs queued after 5 minutes", busy)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *Runner) status(a *array) (uarray.Status, error) {
	var st uarray.Status
	out, err := run(context.Background(), r.cfg.URaid, "detail", "--json", a.name)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return st, fmt.Errorf("uraid detail --json: %w", err)
	}
	return st, nil
}

// withArray starts members with drives, builds sys over them, calls f, and
// tears everything down again.
func (r *Runner) withArray(sys System, drives []Drive, f func(a *array) error) (err error) {
	ms, err := r.startMembers(drives)
	if err != nil {
		return err
	}
	defer stopMembers(ms)
	a, err := r.create(sys, paths(ms), drives)
	if err != nil {
		return fmt.Errorf("%s: %w", sys.Name, err)
	}
	a.members = paths(ms)
	defer func() {
		if serr := r.stop(a); serr != nil && err == nil {
			err = serr
		}
	}()
	if err := f(a); err != nil {
		return fmt.Errorf("%s: %w", sys.Name, err)
	}
	return nil
}

func same(d Drive, n int) []Drive {
	ds := make([]Drive, n)
	for i := range ds {
		ds[i] = d
	}
	return ds
}
