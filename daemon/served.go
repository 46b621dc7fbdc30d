package daemon

// served.go owns a daemon once its device serves: the served array and device as the control
// socket sees them (status, events, stop and hand-over requests) and the loop that ends in a
// stop, a hand-over (handover.go) or the device's failure.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"uraid/array"
	"uraid/ublk"
)

// settleTimeout bounds a failed daemon's wait for its other queues to finish what the array holds
// of theirs before it exits.
const settleTimeout = 10 * time.Second

// Version is the daemon's build, as status reports it; the command sets it.
var Version = "(devel)"

// device is what a daemon needs of its ublk device; *ublk.Device has it.
type device interface {
	Start(context.Context) error
	StopUnused() error
	Drain(context.Context) error
	EndDrain()
	Abandon() error
	Settle(context.Context) error
	FailQueue(int, error) error
	Failed() <-chan struct{}
	Err() error
	Path() string
	Flags() ublk.Flags
	ZeroCopy() ublk.ZeroCopyStatus
	BatchIO() ublk.BatchIOStatus
	UpdateSize(int64) error
	QueueCounts() []ublk.QueueCounts
}

// served is an array with its device, as the control socket sees it. Its lifecycle (stop,
// hand-over, failure) runs on the goroutine of serve; the socket's handlers ask it through
// requests.
type served struct {
	a     *array.Array
	dev   device
	flags ublk.Flags // the device's, which do not change
	cfg   Config
	// log is cfg's logger, its records tagged with array=.
	log *slog.Logger
	// metrics serves GET /metrics over TCP too; nil without --metrics-listen.
	metrics *metricsServer

	mu  sync.Mutex // guards rec and failure
	rec *Record
	// failure is why the device failed, once it has.
	failure string

	requests chan request
	// events is the array's event stream with the daemon's; started is the first of the
	// daemon's, published once the device serves.
	events  *hub
	started array.Event
}

// request is a stop or a hand-over asked through the control socket.
type request struct {
	handover bool
	// change, with handover, changes the array in the hand-over (its copies, its members).
	change change
	reply  chan error
}

func newServed(a *array.Array, dev device, rec *Record, cfg Config) *served {
	s := &served{a: a, dev: dev, flags: dev.Flags(), rec: rec, cfg: cfg, log: cfg.logger().With("array", a.Name),
		requests: make(chan request), events: newHub(cfg.logger())}
	s.events.notify = (&statusNotifier{}).event
	a.OnMembershipChange(s.recordMembers)
	a.OnReshaped(s.reshaped)
	return s
}

// reshaped tells the kernel the array's size once its reshape is done, as a grow does: the
// device grows on a kernel that can resize a running one (6.16), and keeps its size until it is
// made again on one that cannot, which the event says. From the reshape's job.
func (s *served) reshaped(size int64) {
	msg := fmt.Sprintf("reshaped: %d bytes", size)
	switch err := s.dev.UpdateSize(size); {
	case errors.Is(err, ublk.ErrNotSupported):
		msg += fmt.Sprintf("; this kernel cannot resize a running ublk device (Linux 6.16 can): %s keeps its size until it is made again: unmount it, uraid stop %s, uraid assemble --scan %s",
			s.dev.Path(), s.a.Name, s.a.Name)
	case err != nil:
		msg += fmt.Sprintf("; telling the kernel failed (%v): %s keeps its size until it is made again (uraid stop %s, uraid assemble --scan %s)",
			err, s.dev.Path(), s.a.Name, s.a.Name)
	default:
		msg += fmt.Sprintf("; %s grew to it", s.dev.Path())
	}
	s.log.Info(msg)
	s.event(EventGrown, msg)
}

func (s *served) Status() any { return s.status() }

func (s *served) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Schema: Schema, Status: s.a.Status(s.dev.Path(), os.Getpid()), Version: Version, Failure: s.failure}
	if s.failure != "" {
		st.State = array.StateNameFailed
	}
	zc := s.dev.ZeroCopy()
	st.ZeroCopy, st.ZeroCopyMode, st.ZeroCopyReason, st.CopyBufferBytes = zc.On, zc.Mode, zc.Reason, zc.BufferBytes
	bio := s.dev.BatchIO()
	st.BatchIO, st.BatchIOReason = bio.On, bio.Reason
	st.Cost = costOf(s.dev.QueueCounts())
	st.Recovery = RecoveryStatus{Enabled: s.flags.UserRecovery(), Reissue: s.flags.Reissue(), Count: s.rec.Recoveries, LastExit: s.rec.LastExit}
	return st
}

// Subscribe streams the array's events from now on until the returned function is called. The
// stream opens with what the array is doing, so that a watcher knows it is watching.
func (s *served) Subscribe() (<-chan array.Event, func()) {
	st := s.status()
	msg := fmt.Sprintf("watching %s: %s", st.Device, st.State)
	if st.Sync != nil && st.Sync.Action != array.SyncIdle {
		msg += fmt.Sprintf(", %s at %d of %d bytes", st.Sync.Action, st.Sync.DoneBytes, st.Sync.TotalBytes)
	}
	return s.events.Subscribe(&array.Event{Time: time.Now(), Array: s.a.Name, Type: EventWatching, Device: st.Device, Message: msg})
}

// event publishes one of the daemon's events.
func (s *served) event(typ, msg string) {
	s.events.daemonEvent(s.a, typ, s.dev.Path(), msg)
}

// Stop asks the serving goroutine for a safe stop and returns its verdict.
func (s *served) Stop() error { return s.ask(request{}) }

// Handover asks the serving goroutine to hand the device over.
func (s *served) Handover() error { return s.ask(request{handover: true}) }

// FailQueue fails queue 0 of the device, for tests (envHooks).
func (s *served) FailQueue() error {
	return s.dev.FailQueue(0, fmt.Errorf("ublk queue 0: failure injected (%s)", envHooks))
}

func (s *served) ask(r request) error {
	r.reply = make(chan error, 1)
	s.requests <- r
	return <-r.reply
}

// serve answers on the control socket and waits for a stop, a hand-over or a failure.
func (s *served) serve(srv *Server, sigs <-chan os.Signal, n *Notifier, onReady func(string)) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s.status))
	srv.Serve(s, reg, os.Getenv(envHooks) == "1")
	if s.metrics != nil {
		s.metrics.serve(reg, s.log)
	}
	n.Ready(s.dev.Path())
	if onReady != nil {
		onReady(s.dev.Path())
	}
	s.event(s.started.Type, s.started.Message)
	s.events.pump(s.a)
	defer s.events.stopPump()
	return s.loop(sigs, n)
}

// loop is serve's lifecycle, after the device is up.
func (s *served) loop(sigs <-chan os.Signal, n *Notifier) error {
	// The socket's handlers may still be asking once the loop is done: answer them.
	defer func() {
		go func() {
			for r := range s.requests {
				r.reply <- fmt.Errorf("array %s: the daemon is exiting", s.a.Name)
			}
		}()
	}()
	for {
		select {
		case sig := <-sigs:
			err := s.stop(n)
			if err == nil {
				return nil
			}
			// Whoever sent the signal has no answer to read; the log and systemd's status
			// have it.
			s.log.Warn("stop on signal failed", "signal", sig.String(), "err", err)
			sdNotify("STATUS=" + err.Error())
		case r := <-s.requests:
			if r.handover {
				left, err := s.handover(r.change)
				r.reply <- err
				if left {
					n.Stopping()
					if s.cfg.Supervised {
						return ErrRestartMe
					}
					return nil
				}
				continue
			}
			err := s.stop(n)
			r.reply <- err
			if err == nil {
				return nil
			}
		case <-s.dev.Failed():
			return s.fail(s.dev.Err())
		}
	}
}

// stop removes the device if nothing has it open, then finishes queued TRIMs, flushes and marks
// the members clean, and drops the record. A device in use is left serving, with an error that
// says what holds it.
func (s *served) stop(n *Notifier) error {
	a := s.a
	if err := s.dev.StopUnused(); errors.Is(err, ublk.ErrBusy) {
		return fmt.Errorf("array %s: refusing to stop: %w; unmount it (or end what holds it) first", a.Name, err)
	} else if err != nil {
		n.Stopping()
		return s.finishStop(fmt.Errorf("remove device: %w", err))
	}
	n.Stopping()
	return s.finishStop(nil)
}

func (s *served) finishStop(devErr error) error {
	a := s.a
	var errs []error
	if devErr != nil {
		errs = append(errs, devErr)
	}
	// TRIMs acknowledged in async mode are finished before the array lets go of its members: a
	// clean stop leaves nothing pending.
	q, qb, inflight := a.PendingDiscards()
	s.event(EventStopDraining, fmt.Sprintf("stopping: waiting for the members' TRIMs to finish (%d queued, %d bytes, %d in flight), then flushing and marking them clean", q, qb, inflight))
	a.DrainDiscards()
	if err := a.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("flush members: %w", err))
	}
	if len(errs) == 0 {
		if err := a.MarkClean(); err != nil {
			errs = append(errs, fmt.Errorf("mark members clean: %w", err))
		}
	}
	if err := a.Close(); err != nil {
		errs = append(errs, err)
	}
	s.mu.Lock()
	id := s.rec.DeviceID
	s.mu.Unlock()
	// The record goes with the device, and only then: a device left behind keeps it.
	if devErr == nil || deviceGone(id) {
		if err := removeRecord(a.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("array %s: stop: %w", a.Name, err)
		s.event(EventStopped, err.Error())
		return err
	}
	s.event(EventStopped, "stopped cleanly")
	return nil
}

// fail handles a device that stopped serving: the status says why, the record keeps it for the
// successor, and the device is left to the kernel to quiesce (with user recovery) for it. The
// members stay open until the process exits: the array may still be finishing requests on them.
func (s *served) fail(cause error) error {
	a := s.a
	reason := "device failed"
	if cause != nil {
		reason = cause.Error()
	}
	a.SetUnclean(true) // writes in flight may have reached some copies only
	s.mu.Lock()
	s.failure = reason
	s.rec.Failure, s.rec.Unclean = reason, true
	werr := writeRecord(s.rec)
	s.mu.Unlock()
	if werr != nil {
		s.log.Error("record not written", "err", werr)
	}
	s.log.Error("device failed; exiting so that a new daemon takes the device over", "reason", reason)
	s.event(EventDeviceFailed, reason+"; exiting so that a new daemon takes the device over")
	// The other queues finish the requests the array holds of theirs, so that the kernel has
	// their results; then the daemon exits with every queue still open, for the kernel to tear
	// them down together (closing them one by one while the device is live can leave it never
	// quiescing on 6.12: see ublk.Device.Settle). One stuck on a dead member must not keep the
	// daemon from exiting: the kernel reissues (or fails) what it holds.
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := s.dev.Settle(ctx); err != nil {
		s.log.Warn("queues still busy; exiting anyway", "waited", settleTimeout.String(), "err", err)
	}
	return fmt.Errorf("array %s: %s", a.Name, reason)
}
