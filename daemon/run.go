package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"uraid/raid"
	"uraid/ublk"
)

// Serving defaults: one queue per CPU as the kernel's blk-mq expects, deep enough for NVMe.
const (
	DefaultQueues = 0 // one per CPU
	DefaultDepth  = 128
)

// startTimeout bounds how long a device may take to appear before the start counts as failed.
const startTimeout = 60 * time.Second

// State is what a running daemon leaves in RunDir()/NAME.json, so that `uraid stop` can clean up
// after a daemon that was killed.
type State struct {
	Name     string   `json:"name"`
	PID      int      `json:"pid"`
	DeviceID uint32   `json:"device_id"`
	Device   string   `json:"device"`
	Members  []string `json:"members"`
}

// StatePath is where the daemon of the array called name records its State.
func StatePath(name string) string { return filepath.Join(RunDir(), name+".json") }

// ReadState reads the State a daemon left, running or not.
func ReadState(name string) (State, error) {
	var st State
	b, err := os.ReadFile(StatePath(name))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// served is an array with its device, as the control socket sees it.
type served struct {
	a   *raid.Array
	dev *ublk.Device

	stopOnce sync.Once
	stopReq  chan struct{} // closed when someone asks for a stop
	stopped  chan struct{} // closed when the stop is done
	stopErr  error
}

func (s *served) Status() any { return status(s.a, s.dev) }

// status is the array's status with how its device moves data.
func status(a *raid.Array, dev *ublk.Device) raid.Status {
	st := a.Status(dev.Path(), os.Getpid())
	zc := dev.ZeroCopy()
	st.ZeroCopy, st.ZeroCopyMode, st.ZeroCopyReason, st.CopyBufferBytes = zc.On, zc.Mode, zc.Reason, zc.BufferBytes
	return st
}

// ZeroCopyEnv chooses the daemon's zero-copy mode (auto, off or register; see ublk.ZeroCopy), for
// tests and for measuring the copy against zero copy.
const ZeroCopyEnv = "URAID_ZERO_COPY"

func zeroCopyOption() (ublk.ZeroCopy, error) {
	zc, err := ublk.ParseZeroCopy(os.Getenv(ZeroCopyEnv))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ZeroCopyEnv, err)
	}
	return zc, nil
}

// Stop asks the main goroutine to stop the array and waits until it has.
func (s *served) Stop() error {
	s.stopOnce.Do(func() { close(s.stopReq) })
	<-s.stopped
	return s.stopErr
}

// Run serves a as a ublk device until SIGTERM, SIGINT or a stop through the control socket, then
// stops in the order that loses nothing: remove the device (the kernel drains in-flight I/O),
// finish queued TRIMs, flush the members, mark them clean. n and onReady (if not nil) hear when
// the device is usable.
func Run(a *raid.Array, queues, depth int, n *Notifier, onReady func(device string)) (err error) {
	name := a.Name
	ready := false
	defer func() {
		if !ready {
			a.Close()
			n.Failed(err)
		}
	}()
	srv, err := Listen(name)
	if err != nil {
		return err
	}
	defer srv.Close()

	zc, err := zeroCopyOption()
	if err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}
	dev, err := ublk.New(a, ublk.Options{Queues: queues, Depth: depth, ZeroCopy: zc})
	if err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}
	if err := a.MarkDirty(); err != nil {
		return fmt.Errorf("array %s: mark members in use: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	err = dev.Start(ctx)
	cancel()
	if err != nil {
		_ = a.MarkClean() // nothing was written through the device
		return fmt.Errorf("array %s: %w", name, err)
	}
	st := State{Name: name, PID: os.Getpid(), DeviceID: dev.ID(), Device: dev.Path()}
	for _, m := range a.Members() {
		if m != nil {
			st.Members = append(st.Members, m.Path)
		}
	}
	if b, err := json.MarshalIndent(st, "", "  "); err == nil {
		_ = os.WriteFile(StatePath(name), b, 0o600) // only a convenience for cleanup after a kill
	}
	defer os.Remove(StatePath(name))

	s := &served{a: a, dev: dev, stopReq: make(chan struct{}), stopped: make(chan struct{})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(func() raid.Status { return status(a, dev) }))
	srv.Serve(s, reg)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	ready = true
	n.Ready(dev.Path())
	if onReady != nil {
		onReady(dev.Path())
	}

	select {
	case <-sigs:
	case <-s.stopReq:
	}
	n.Stopping()
	s.stopErr = stop(a, dev)
	close(s.stopped)
	return s.stopErr
}

func stop(a *raid.Array, dev *ublk.Device) error {
	var errs []error
	if err := dev.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("remove device: %w", err))
	}
	// TRIMs acknowledged in async mode are finished before the array lets go of its members: a
	// clean stop leaves nothing pending.
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
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("array %s: stop: %w", a.Name, err)
	}
	return nil
}
