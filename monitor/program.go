package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// programQueueLen bounds the events waiting for one array's program: an array whose program
// falls this far behind loses the newest runs, and the log says so.
const programQueueLen = 256

// DefaultProgramTimeout bounds a run of the program when Config.ProgramTimeout is 0.
const DefaultProgramTimeout = time.Minute

// programWaitDelay is how long a killed program's output may stay open (held by a process it
// started) before the monitor stops reading it.
const programWaitDelay = time.Second

// outputTail bounds what the log keeps of a failed run's output.
const outputTail = 2048

// runner runs the program for one array's events, one at a time, in order.
type runner struct {
	queue chan job
	done  chan struct{}
}

type job struct {
	e      Event
	device string // the array's block device, as far as the monitor knows it
}

// programs are the runners of a monitor, one per array, each with its goroutine until close.
type programs struct {
	path    string
	timeout time.Duration
	log     *slog.Logger
	// ctx ends the runs: a run in progress is killed, the ones queued are skipped.
	ctx context.Context

	mu      sync.Mutex // guards byArray, closed, runs and failed
	byArray map[string]*runner
	closed  bool
	runs    int
	failed  int
}

func newPrograms(ctx context.Context, path string, timeout time.Duration, log *slog.Logger) *programs {
	if timeout <= 0 {
		timeout = DefaultProgramTimeout
	}
	return &programs{path: path, timeout: timeout, log: log, ctx: ctx, byArray: map[string]*runner{}}
}

// queue has the program run for e, after the runs queued before for the same array; it never
// waits.
func (p *programs) queue(e Event, device string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	r := p.byArray[e.Array]
	if r == nil {
		r = &runner{queue: make(chan job, programQueueLen), done: make(chan struct{})}
		p.byArray[e.Array] = r
		go p.serve(r)
	}
	select {
	case r.queue <- job{e: e, device: device}:
	default:
		p.runs++
		p.failed++
		p.log.Error("program not run: too many events wait for it", "array", e.Array, "event", e.Type, "waiting", programQueueLen)
	}
}

func (p *programs) serve(r *runner) {
	defer close(r.done)
	for j := range r.queue {
		if p.ctx.Err() != nil {
			p.log.Warn("program not run: the monitor is ending", "array", j.e.Array, "event", j.e.Type)
			continue
		}
		err := p.run(j)
		p.mu.Lock()
		p.runs++
		if err != nil {
			p.failed++
		}
		p.mu.Unlock()
		if err != nil {
			p.log.Error("program failed", "program", p.path, "array", j.e.Array, "event", j.e.Type, "err", err)
		}
	}
}

// close lets the runners finish what is queued (unless ctx ended) and waits for them. It
// returns an error if some run failed.
func (p *programs) close() error {
	p.mu.Lock()
	p.closed = true
	rs := make([]*runner, 0, len(p.byArray))
	for _, r := range p.byArray {
		close(r.queue)
		rs = append(rs, r)
	}
	p.mu.Unlock()
	for _, r := range rs {
		<-r.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed > 0 {
		return fmt.Errorf("program %s: %d of %d runs failed (the log says why)", p.path, p.failed, p.runs)
	}
	return nil
}

// Args are the program's arguments for e, in mdadm's order: the event, the array's device
// (its name when the monitor does not know the device), and the member concerned, if any.
func Args(e Event, device string) []string {
	if e.Device != "" {
		device = e.Device
	}
	if device == "" {
		device = e.Array
	}
	args := []string{e.Type, device}
	if e.Path != "" {
		args = append(args, e.Path)
	}
	return args
}

// Env is what the program finds in its environment about e, besides the monitor's own.
func Env(e Event, device string) ([]string, error) {
	b, err := e.JSON()
	if err != nil {
		return nil, err
	}
	args := Args(e, device)
	var slot string
	if e.Member != nil {
		slot = strconv.Itoa(*e.Member)
	}
	// Every variable is set, empty if need be, so that none leaks in from the monitor's own
	// environment.
	return []string{"URAID_EVENT=" + e.Type, "URAID_ARRAY=" + e.Array, "URAID_DEVICE=" + args[1],
		"URAID_MEMBER=" + e.Path, "URAID_MEMBER_SLOT=" + slot, "URAID_EVENT_JSON=" + string(b)}, nil
}

// run runs the program for j and says why it failed: its exit, a signal, or the timeout.
func (p *programs) run(j job) error {
	env, err := Env(j.e, j.device)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.path, Args(j.e, j.device)...)
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so that a timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = programWaitDelay
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err = cmd.Run()
	switch {
	case err == nil:
		p.log.Debug("program ran", "array", j.e.Array, "event", j.e.Type, "took", time.Since(began))
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("still running after %v: killed (output: %q)", p.timeout, out.String())
	case p.ctx.Err() != nil:
		return fmt.Errorf("killed: the monitor is ending (output: %q)", out.String())
	}
	return fmt.Errorf("%w (output: %q)", err, out.String())
}

// tail keeps the last outputTail bytes written to it.
type tail struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - outputTail; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b.Bytes()))
}
