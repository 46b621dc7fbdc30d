package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Config is what a run uses: the tools, the sizes, the repetitions.
type Config struct {
	SimSSD, URaid string // binaries, built on the host
	Reps          int
	Quick         bool
	// MemberSize is each simulated SSD's size in bytes; the data lives in
	// RAM, so four of them must fit in memory with room to spare.
	MemberSize int64
	// Drive is the simulated SSD of every scenario but (e) and (f).
	Drive Drive
	// AllowBusy keeps figures measured while the guest's CPU speed moved
	// (see ErrBusy) instead of refusing the run.
	AllowBusy bool
	// PeerUblk is the reference ublk server's command (bench/peer-ublksrv.sh builds it), which
	// scenario (j) measures beside uraid; empty to measure uraid alone.
	PeerUblk string
	// CostEnv, when set, adds to scenario (j) uraid run with these environment variables
	// ("GOMAXPROCS=4"), beside uraid as it runs by default: how a runtime setting is chosen by
	// measurement.
	CostEnv []string
	// CostAlt, when set, is another uraid build that scenario (j) measures beside the default
	// one, named uraid-LEVEL@alt: a change's counts before and after, in one guest.
	CostAlt string
	Log     io.Writer
}

// Drive is a simulated SSD's settings, as simssd flags.
type Drive struct {
	TrimLatency, B2BLatency, B2BWindow time.Duration
	Exclusive                          bool
	MaxDiscard                         string // simssd --max-discard, "" for no limit
	// NBD serves the drive with nbdkit (memory plugin, the delay filter's
	// delay-trim at TrimLatency; with Exclusive, the noparallel filter's
	// serialize=requests: one command at a time, so reads wait behind its
	// TRIMs) through the kernel's nbd client, instead of simssd: a block
	// device uraid knows nothing of, as a SATA SSD behind a USB bridge.
	NBD bool
}

func (d Drive) String() string {
	s := fmt.Sprintf("trim %v, back-to-back %v within %v", d.TrimLatency, d.B2BLatency, d.B2BWindow)
	if d.MaxDiscard != "" {
		s += ", max discard " + d.MaxDiscard
	}
	if d.Exclusive {
		s += ", SATA-like (reads and writes wait while a TRIM runs; not rotational)"
	}
	if d.NBD {
		s = fmt.Sprintf("NBD (nbdkit memory), TRIM %v", d.TrimLatency)
		if d.Exclusive {
			s += ", one command at a time (noparallel serialize=requests)"
		}
	}
	return s
}

// Fast is a drive with instant TRIMs: the I/O path alone.
var Fast = Drive{}

// Runner runs scenarios and collects their results.
type Runner struct {
	cfg     Config
	results []Result
	busy    bool // a repetition ran while the guest's CPU was not its own
}

// Busy reports whether figures were kept although the guest's CPU speed
// moved while they were measured (see ErrBusy).
func (r *Runner) Busy() bool { return r.busy }

// NewRunner checks cfg.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Reps < 1 {
		return nil, fmt.Errorf("bench: %d repetitions, need at least 1", cfg.Reps)
	}
	for _, bin := range []string{cfg.SimSSD, cfg.URaid, "mdadm", "fio", "mkfs.ext4"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("bench: %s: %w (build with make build, install with tests/vm/vm setup)", bin, err)
		}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Runner{cfg: cfg}, nil
}

// Results returns what has been measured so far.
func (r *Runner) Results() []Result { return r.results }

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// add records one repetition's value, merging with earlier repetitions.
func (r *Runner) add(res Result, v float64) {
	for i := range r.results {
		x := &r.results[i]
		if x.Scenario == res.Scenario && x.Case == res.Case && x.System == res.System && x.Metric == res.Metric {
			x.Values = append(x.Values, v)
			x.Median = median(x.Values)
			return
		}
	}
	res.Values = []float64{v}
	res.Median = v
	r.results = append(r.results, res)
}

// run executes a command and returns its stdout, with stderr in the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	return runEnv(ctx, nil, name, args...)
}

// runEnv is run with env added to the environment.
func runEnv(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Machine describes where the run happens.
func Machine() map[string]string {
	m := map[string]string{}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cpus := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "processor") {
				cpus++
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
			}
		}
		m["cpus"] = fmt.Sprint(cpus)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		m["memory"] = strings.Join(strings.Fields(line)[1:], " ")
	}
	if out, err := run(context.Background(), "fio", "--version"); err == nil {
		m["fio"] = strings.TrimSpace(out)
	}
	// mdadm prints its version on stderr.
	if out, err := exec.Command("mdadm", "--version").CombinedOutput(); err == nil {
		m["mdadm"] = strings.TrimSpace(string(out))
	}
	return m
}
