package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"uraid/array"
	"uraid/daemon"
)

// DefaultInterval is how often Scan looks for arrays that started. The run directory is a
// tmpfs holding a socket per array: a look costs a directory read. Stops, failures and
// hand-overs come at once through the streams; only a start waits for the next look.
const DefaultInterval = 2 * time.Second

// Config says what a Monitor reports and to whom.
type Config struct {
	// Out gets every event, one at a time, in each array's order. An error ends the stream it
	// came from (Watch returns it) and Scan.
	Out func(Event) error
	// Program, if set, is run for every event but daemon.EventWatching (program.go).
	Program string
	// ProgramTimeout bounds a run of Program; DefaultProgramTimeout if 0.
	ProgramTimeout time.Duration
	// Interval is the pause between two looks for new arrays (Scan); DefaultInterval if 0.
	Interval time.Duration
	// Log gets what the monitor has to say about itself: a program failing, an array it cannot
	// follow. slog.Default() if nil.
	Log *slog.Logger
}

// Monitor reports the events of arrays to Config.Out and runs Config.Program for them.
type Monitor struct {
	cfg  Config
	log  *slog.Logger
	runs *programs // nil without a program

	mu     sync.Mutex // guards arrays
	arrays map[string]*tracked
	// outMu makes Out see one event at a time.
	outMu sync.Mutex

	// lookup says what an array whose daemon went left behind: daemon.Lookup, which asks the
	// kernel; tests give their own.
	lookup func(context.Context, string) daemon.Entry
}

// tracked is what Scan knows of an array; under Monitor.mu.
type tracked struct {
	// following: a goroutine follows (or tries to follow) the array's stream.
	following bool
	// stopped: the array stopped (or the monitor has not seen it yet): the next daemon to answer
	// started it. lost: its daemon went (died, failed, handed over): the next one took over.
	stopped, lost bool
	// seen: the monitor followed the array's stream before.
	seen bool
	// device is the array's block device, from its last watching event.
	device string
}

// New returns a monitor; ctx bounds the programs it runs (they are killed when it ends).
func New(ctx context.Context, cfg Config) *Monitor {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	m := &Monitor{cfg: cfg, log: log, arrays: map[string]*tracked{}, lookup: daemon.Lookup}
	if cfg.Program != "" {
		m.runs = newPrograms(ctx, cfg.Program, cfg.ProgramTimeout, log)
	}
	return m
}

// Close waits for the program runs queued (killed if the monitor's context ended), and returns
// an error if some failed.
func (m *Monitor) Close() error {
	if m.runs == nil {
		return nil
	}
	return m.runs.close()
}

// report hands e to Out and has the program run for it. An error is Out's, as an outError.
func (m *Monitor) report(e Event, device string) error {
	m.outMu.Lock()
	err := m.cfg.Out(e)
	m.outMu.Unlock()
	if m.runs != nil && e.Type != daemon.EventWatching {
		m.runs.queue(e, device)
	}
	if err != nil {
		return outError{err}
	}
	return nil
}

// outError is Config.Out's failure: whoever reads the monitor is gone.
type outError struct{ err error }

func (e outError) Error() string { return "report event: " + e.err.Error() }
func (e outError) Unwrap() error { return e.err }

// Watch reports the events of the array called name until ctx is done (nil), its daemon goes
// (nil: the stream ended, after what the daemon had to say), or Out fails.
func (m *Monitor) Watch(ctx context.Context, name string) error {
	var device string
	err := daemon.NewClient(name).Events(ctx, func(ae array.Event) error {
		if ae.Device != "" && ae.Type == daemon.EventWatching {
			device = ae.Device
		}
		return m.report(stamp(ae), device)
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Scan watches every array, those running now and those that start later, until ctx is done
// (nil) or Out fails (its error). It reports array_started for an array it finds after its
// first look, and daemon_recovered for a daemon that answers after one it lost; when it first
// sees an array, it reports it degraded or failed if it is (as Oneshot). Each array's stream is
// followed by its own goroutine; Scan waits for them before it returns.
func (m *Monitor) Scan(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	interval := m.cfg.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for first := true; ; first = false {
		names, err := daemon.Running()
		if err != nil {
			m.log.Warn("cannot list running arrays", "dir", daemon.RunDir(), "err", err)
		}
		m.mu.Lock()
		for _, name := range names {
			t := m.arrays[name]
			if t == nil {
				t = &tracked{stopped: !first}
				m.arrays[name] = t
			}
			if t.following {
				continue
			}
			t.following = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.follow(ctx, name, t); err != nil {
					cancel(err)
				}
				m.mu.Lock()
				t.following = false
				m.mu.Unlock()
			}()
		}
		m.mu.Unlock()
		if first {
			m.log.Info("watching for arrays", "dir", daemon.RunDir(), "interval", interval, "running", len(names))
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			if err := context.Cause(ctx); errors.As(err, new(outError)) {
				return err
			}
			return nil
		case <-tick.C:
		}
	}
}

// follow reports the events of one connection to the array's daemon, and, when the daemon goes
// without saying why, what it left. It returns Out's error, if Out failed.
func (m *Monitor) follow(ctx context.Context, name string, t *tracked) error {
	var (
		n       int    // events on this connection
		last    string // the last one's type
		claimed bool   // the monitor reported the daemon's start itself
	)
	err := daemon.NewClient(name).Events(ctx, func(ae array.Event) error {
		n++
		m.mu.Lock()
		if ae.Type == daemon.EventWatching && ae.Device != "" {
			t.device = ae.Device
		}
		device, stopped, lost, seen := t.device, t.stopped, t.lost, t.seen
		if n == 1 {
			t.stopped, t.lost, t.seen = false, false, true
		}
		m.mu.Unlock()
		if n == 1 && (stopped || lost) {
			typ, msg := daemon.EventStarted, "started on "+device
			if lost {
				typ, msg = daemon.EventRecovered, "a new daemon serves "+device
			}
			claimed = true
			if err := m.report(own(name, typ, device, msg), device); err != nil {
				return err
			}
		}
		// A daemon that just started says so itself right after the watching event, if the
		// monitor came soon enough: the monitor has said it already.
		if n == 2 && claimed && startEvent(ae.Type) {
			return nil
		}
		last = ae.Type
		if err := m.report(stamp(ae), device); err != nil {
			return err
		}
		if n == 1 && (!seen || stopped) {
			return m.reportState(ctx, name)
		}
		return nil
	})
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.As(err, new(outError)):
		return err
	case n == 0:
		// No daemon answers on the socket: a stale one, or one going or coming. The next look
		// tries again.
		m.log.Debug("no daemon answers", "array", name, "err", err)
		return m.firstSightUnanswered(ctx, name, t)
	case err != nil:
		m.log.Warn("event stream broke", "array", name, "err", err)
	}
	m.mu.Lock()
	device := t.device
	m.mu.Unlock()
	switch last {
	case daemon.EventStopped:
		m.mark(t, true, false)
		return nil
	case daemon.EventHandedOver, daemon.EventDeviceFailed:
		// A successor is expected; it is reported when it answers.
		m.mark(t, false, true)
		return nil
	}
	e := m.lookup(ctx, name)
	switch {
	case e.Status != nil:
		// A new daemon answers already: the next look follows it.
		m.mark(t, false, true)
	case e.Record == nil || e.Leftover().State == daemon.LeftGone:
		m.mark(t, true, false)
		return m.report(own(name, daemon.EventStopped, device, "its daemon went without a stop and left nothing behind"), device)
	default:
		m.mark(t, false, true)
		l := e.Leftover()
		if l.Device != "" {
			device = l.Device
		}
		return m.report(own(name, EventDaemonLost, device, fmt.Sprintf("its daemon went without a stop: %s", l.Message)), device)
	}
	return nil
}

// reportState reports the array degraded or failed if it is, as Oneshot does: for an array the
// monitor sees for the first time, or that started, whose state no event told.
func (m *Monitor) reportState(ctx context.Context, name string) error {
	var st daemon.Status
	if err := daemon.NewClient(name).Status(ctx, &st); err != nil {
		m.log.Debug("no status", "array", name, "err", err)
		return nil
	}
	if e, ok := attention(daemon.Entry{Name: name, Status: &st}); ok {
		return m.report(e, st.Device)
	}
	return nil
}

// firstSightUnanswered reports an array the monitor sees for the first time with no daemon
// answering for it if its daemon is gone and left the device: nobody else would say so.
func (m *Monitor) firstSightUnanswered(ctx context.Context, name string, t *tracked) error {
	m.mu.Lock()
	seen := t.seen
	t.seen = true
	m.mu.Unlock()
	if seen {
		return nil
	}
	e := m.lookup(ctx, name)
	l := e.Leftover()
	switch {
	case e.Status != nil || l.DaemonRunning:
		// A daemon answers now, or is starting: the next look follows it as a first sight.
		m.mu.Lock()
		t.seen = false
		m.mu.Unlock()
	case e.Record == nil || l.State == daemon.LeftGone:
		// A stale socket: a daemon that answers later started the array.
		m.mark(t, true, false)
	default:
		m.mark(t, false, true)
		return m.report(own(name, EventDaemonLost, l.Device, "no daemon answers: "+l.Message), l.Device)
	}
	return nil
}

func (m *Monitor) mark(t *tracked, stopped, lost bool) {
	m.mu.Lock()
	t.stopped, t.lost = stopped, lost
	m.mu.Unlock()
}
