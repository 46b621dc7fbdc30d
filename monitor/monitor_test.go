package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/testutil"
	"uraid/ublk"
)

// fakeArray is a daemon.Array whose events the test publishes, served over a real control
// socket in a temporary run directory.
type fakeArray struct {
	name, device, state string
	members             []array.MemberStatus

	mu   sync.Mutex // guards subs
	subs map[chan array.Event]struct{}
}

func (a *fakeArray) Status() any {
	return daemon.Status{Schema: daemon.Schema, Status: array.Status{Name: a.name, Device: a.device,
		State: a.state, Members: a.members}}
}
func (a *fakeArray) Stop() error      { return nil }
func (a *fakeArray) Handover() error  { return nil }
func (a *fakeArray) FailQueue() error { return nil }

func (a *fakeArray) Subscribe() (<-chan array.Event, func()) {
	ch := make(chan array.Event, 64)
	ch <- array.Event{Time: time.Now(), Array: a.name, Type: daemon.EventWatching, Device: a.device,
		Message: "watching " + a.device + ": " + a.state}
	a.mu.Lock()
	a.subs[ch] = struct{}{}
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		delete(a.subs, ch)
		a.mu.Unlock()
	}
}

func (a *fakeArray) watchers() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.subs)
}

// publish hands an event of type typ to every watcher.
func (a *fakeArray) publish(typ, msg string, path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := array.Event{Time: time.Now(), Array: a.name, Type: typ, Path: path, Message: msg}
	if path != "" {
		one := 1
		e.Member = &one
	}
	for ch := range a.subs {
		ch <- e
	}
}

// fakeDaemon serves a fake array called name on its control socket until close.
type fakeDaemon struct {
	*fakeArray
	srv    *daemon.Server
	closed bool
}

func startFake(t *testing.T, name, device, state string) *fakeDaemon {
	t.Helper()
	srv, err := daemon.Listen(name)
	require.NoError(t, err)
	a := &fakeArray{name: name, device: device, state: state, subs: map[chan array.Event]struct{}{}}
	srv.Serve(a, prometheus.NewRegistry(), false)
	d := &fakeDaemon{fakeArray: a, srv: srv}
	t.Cleanup(func() { d.close(t) })
	return d
}

// close ends the daemon: its streams end after what they hold, its socket goes.
func (d *fakeDaemon) close(t *testing.T) {
	t.Helper()
	if !d.closed {
		d.closed = true
		require.NoError(t, d.srv.Close())
	}
}

// sink collects what a monitor reports.
type sink struct {
	mu     sync.Mutex
	events []Event
}

func (s *sink) out(e Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return nil
}

func (s *sink) all() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// of lists the types reported for array name, in order.
func (s *sink) of(name string) []string {
	var types []string
	for _, e := range s.all() {
		if e.Array == name {
			types = append(types, e.Type)
		}
	}
	return types
}

// waitTypes waits until the types reported for array name are want.
func (s *sink) waitTypes(t *testing.T, name string, want ...string) {
	t.Helper()
	testutil.WaitFor(t, name+" reports "+strings.Join(want, ", "), func() bool {
		return slices.Equal(s.of(name), want)
	})
}

// syncBuffer is a log destination the test reads while the monitor writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// scanning runs m.Scan until the test ends, and returns the function that ends it and
// waits for it.
func scanning(t *testing.T, m *Monitor) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Scan(ctx) }()
	stop := func() {
		cancel()
		require.NoError(t, testutil.Receive(t, done, "Scan to return"))
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return stop
}

func newMonitor(t *testing.T, cfg Config) (*Monitor, *sink, *syncBuffer) {
	s := &sink{}
	logs := &syncBuffer{}
	cfg.Out = s.out
	cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Millisecond
	}
	return New(context.Background(), cfg), s, logs
}

// TestScanArrayStartsAndStops: an array running when the scan starts is watched; one that
// starts later is reported started; a stop is reported once (the daemon's own), and the same
// array starting again is reported again; the scan carries on with no array at all.
func TestScanArrayStartsAndStops(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	m, s, _ := newMonitor(t, Config{})
	early := startFake(t, "early", "/dev/ublkb0", "clean")
	stop := scanning(t, m)
	s.waitTypes(t, "early", daemon.EventWatching)

	late := startFake(t, "late", "/dev/ublkb1", "clean")
	s.waitTypes(t, "late", daemon.EventStarted, daemon.EventWatching)
	started := s.all()[1]
	assert.Equal(t, "/dev/ublkb1", started.Device)
	assert.Equal(t, daemon.Schema, started.Schema)

	late.publish(array.EventMemberFailed, "member 1 failed", "/dev/sdb")
	late.publish(daemon.EventStopped, "stopped cleanly", "")
	late.close(t)
	s.waitTypes(t, "late", daemon.EventStarted, daemon.EventWatching, array.EventMemberFailed, daemon.EventStopped)

	late = startFake(t, "late", "/dev/ublkb2", "clean")
	s.waitTypes(t, "late", daemon.EventStarted, daemon.EventWatching, array.EventMemberFailed, daemon.EventStopped,
		daemon.EventStarted, daemon.EventWatching)
	assert.Equal(t, []string{daemon.EventWatching}, s.of("early"), "the other array's stream is untouched")

	// A daemon that goes without a word, leaving no record: the monitor says it stopped.
	early.close(t)
	s.waitTypes(t, "early", daemon.EventWatching, daemon.EventStopped)
	late.publish(daemon.EventStopped, "stopped cleanly", "")
	late.close(t)
	s.waitTypes(t, "late", daemon.EventStarted, daemon.EventWatching, array.EventMemberFailed, daemon.EventStopped,
		daemon.EventStarted, daemon.EventWatching, daemon.EventStopped)
	stop()
	require.NoError(t, m.Close())
}

// TestScanStateAtFirstSight: an array degraded when the scan first sees it, or when it starts,
// is reported degraded, as --oneshot would; one that fails later says so itself.
func TestScanStateAtFirstSight(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	m, s, _ := newMonitor(t, Config{})
	sick := startFake(t, "sick", "/dev/ublkb0", "degraded")
	sick.members = []array.MemberStatus{{Index: 0, Path: "/dev/sda", State: "active"}, {Index: 1, Path: "/dev/sdb", State: "failed"}}
	scanning(t, m)
	s.waitTypes(t, "sick", daemon.EventWatching, array.EventDegraded)
	assert.Equal(t, "degraded on /dev/ublkb0: member 1 (/dev/sdb) failed", s.all()[1].Message)

	startFake(t, "late", "/dev/ublkb1", "failed")
	s.waitTypes(t, "late", daemon.EventStarted, daemon.EventWatching, array.EventArrayFailed)
}

// TestScanLeftoverAtFirstSight: an array whose daemon died before the monitor started, leaving
// its socket and its device, is reported lost at once; the daemon that takes it over is
// reported as such.
func TestScanLeftoverAtFirstSight(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	ln, err := net.Listen("unix", daemon.SocketPath("data"))
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close()) // the socket stays, as a killed daemon's does
	m, s, _ := newMonitor(t, Config{})
	m.lookup = func(context.Context, string) daemon.Entry {
		return daemon.Entry{Name: "data", Err: daemon.ErrNotRunning,
			Record: &daemon.Record{Version: 1, Name: "data", PID: 1 << 30, DeviceID: 3, Device: "/dev/ublkb3"},
			Device: &ublk.DeviceInfo{ID: 3, State: "quiesced"}}
	}
	scanning(t, m)
	s.waitTypes(t, "data", EventDaemonLost)
	lost := s.all()[0]
	assert.Equal(t, "/dev/ublkb3", lost.Device)
	assert.Contains(t, lost.Message, "uraid recover data takes it over")

	startFake(t, "data", "/dev/ublkb3", "clean")
	s.waitTypes(t, "data", EventDaemonLost, daemon.EventRecovered, daemon.EventWatching)
}

// TestScanEndsWhenOutFails: a monitor whose reader is gone ends, with why, instead of
// following arrays for nobody.
func TestScanEndsWhenOutFails(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	startFake(t, "data", "/dev/ublkb0", "clean")
	m := New(context.Background(), Config{Interval: 5 * time.Millisecond, Log: slog.New(slog.DiscardHandler),
		Out: func(Event) error { return syscall.EPIPE }})
	err := m.Scan(context.Background())
	assert.ErrorIs(t, err, syscall.EPIPE)
}

// TestScanDaemonLostAndRecovered: a daemon that goes and leaves its device is reported lost,
// with what uraid list says of it; the daemon that takes over is reported as such, and the
// daemon's own word for its start, when the monitor hears it, is not reported twice.
func TestScanDaemonLostAndRecovered(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	m, s, _ := newMonitor(t, Config{})
	m.lookup = func(context.Context, string) daemon.Entry {
		return daemon.Entry{Name: "data", Err: daemon.ErrNotRunning,
			Record: &daemon.Record{Version: 1, Name: "data", PID: 1 << 30, DeviceID: 3, Device: "/dev/ublkb3"}}
	}
	d := startFake(t, "data", "/dev/ublkb3", "clean")
	scanning(t, m)
	s.waitTypes(t, "data", daemon.EventWatching)
	d.close(t)
	s.waitTypes(t, "data", daemon.EventWatching, EventDaemonLost)
	lost := s.all()[1]
	assert.Equal(t, "/dev/ublkb3", lost.Device)
	assert.Contains(t, lost.Message, "its daemon went without a stop")

	d = startFake(t, "data", "/dev/ublkb3", "degraded")
	testutil.WaitFor(t, "the monitor to follow the new daemon", func() bool { return d.watchers() == 1 })
	d.publish(daemon.EventRecovered, "took over /dev/ublkb3", "")
	d.publish(array.EventDegraded, "degraded", "")
	s.waitTypes(t, "data", daemon.EventWatching, EventDaemonLost, daemon.EventRecovered, daemon.EventWatching, array.EventDegraded)

	// A hand-over: the successor is reported when it answers, nothing in between.
	d.publish(daemon.EventHandedOver, "left the device to a successor", "")
	d.close(t)
	d = startFake(t, "data", "/dev/ublkb3", "clean")
	s.waitTypes(t, "data", daemon.EventWatching, EventDaemonLost, daemon.EventRecovered, daemon.EventWatching, array.EventDegraded,
		daemon.EventHandedOver, daemon.EventRecovered, daemon.EventWatching)
}

// programLines waits for n runs of testdata/program.sh and returns what they wrote.
func programLines(t *testing.T, out string, n int) []string {
	t.Helper()
	var lines []string
	testutil.WaitFor(t, "the program to run", func() bool {
		b, _ := os.ReadFile(out)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(b) > 0 && len(lines) >= n
	})
	require.Len(t, lines, n, "runs of the program")
	return lines
}

func program(t *testing.T) (path, out string) {
	path, err := filepath.Abs("testdata/program.sh")
	require.NoError(t, err)
	out = filepath.Join(t.TempDir(), "runs")
	t.Setenv("URAID_TEST_OUT", out)
	return path, out
}

// TestProgramArgsAndEnv: the program gets mdadm's arguments, EVENT DEVICE [MEMBER], and the
// event in its environment, one run per event but the watching one, in order.
func TestProgramArgsAndEnv(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	path, out := program(t)
	m, _, logs := newMonitor(t, Config{Program: path})
	d := startFake(t, "data", "/dev/ublkb4", "clean")
	scanning(t, m)
	testutil.WaitFor(t, "the monitor to follow the array", func() bool { return d.watchers() == 1 })
	d.publish(array.EventMemberFailed, "member 1 (/dev/sdb) failed", "/dev/sdb")
	d.publish(array.EventDegraded, "degraded", "")
	lines := programLines(t, out, 2)

	assert.True(t, strings.HasPrefix(lines[0], "args=3|member_failed|/dev/ublkb4|/dev/sdb event=member_failed array=data device=/dev/ublkb4 member=/dev/sdb slot=1 json="), lines[0])
	var e Event
	require.NoError(t, json.Unmarshal([]byte(lines[0][strings.Index(lines[0], "json=")+5:]), &e))
	assert.Equal(t, daemon.Schema, e.Schema)
	assert.Equal(t, "member 1 (/dev/sdb) failed", e.Message)
	assert.True(t, strings.HasPrefix(lines[1], "args=2|array_degraded|/dev/ublkb4| event=array_degraded array=data device=/dev/ublkb4 member= slot= json="), lines[1])
	assert.NotContains(t, logs.String(), "program failed")
}

// TestProgramFailsOrHangs: a program that fails, or hangs past its timeout (killed, with what
// it started), is logged with why, and the runs after it go on, in order.
func TestProgramFailsOrHangs(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	path, out := program(t)
	m, s, logs := newMonitor(t, Config{Program: path, ProgramTimeout: 300 * time.Millisecond})
	d := startFake(t, "data", "/dev/ublkb4", "clean")
	stop := scanning(t, m)
	testutil.WaitFor(t, "the monitor to follow the array", func() bool { return d.watchers() == 1 })
	d.publish(array.EventSyncStarted, "fail, please", "")
	d.publish(array.EventSyncProgress, "hang, please", "")
	d.publish(array.EventSyncFinished, "done", "")
	lines := programLines(t, out, 1)
	assert.Contains(t, lines[0], "event=sync_finished")
	s.waitTypes(t, "data", daemon.EventWatching, array.EventSyncStarted, array.EventSyncProgress, array.EventSyncFinished)

	log := logs.String()
	assert.Contains(t, log, `msg="program failed"`)
	assert.Contains(t, log, "event=sync_started err=\"exit status 3 (output: \\\"failing as asked\\\")\"")
	assert.Contains(t, log, "event=sync_progress err=\"still running after 300ms: killed (output: \\\"hanging as asked\\\")\"")
	stop()
	err := m.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 of 3 runs failed")

	b, err := os.ReadFile(out + ".hung")
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	testutil.WaitFor(t, "the hung program's child to be killed with it", func() bool { return gone(pid) })
}

// gone reports whether process pid has exited (a zombie nobody reaped has).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// TestWatchRunsProgram: monitor NAME runs the program too, and Close waits for the runs its
// events queued after the array's stream ended.
func TestWatchRunsProgram(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	path, out := program(t)
	m, s, _ := newMonitor(t, Config{Program: path})
	d := startFake(t, "data", "/dev/ublkb4", "clean")
	done := make(chan error, 1)
	go func() { done <- m.Watch(context.Background(), "data") }()
	testutil.WaitFor(t, "the monitor to follow the array", func() bool { return d.watchers() == 1 })
	d.publish(array.EventSyncStarted, "check started", "")
	d.publish(daemon.EventStopped, "stopped cleanly", "")
	d.close(t)
	require.NoError(t, testutil.Receive(t, done, "Watch to end with the daemon"))
	assert.Equal(t, []string{daemon.EventWatching, array.EventSyncStarted, daemon.EventStopped}, s.of("data"))
	require.NoError(t, m.Close())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2, "Close waited for both runs")
	assert.Contains(t, lines[0], "event=sync_started")
	assert.Contains(t, lines[1], "args=2|array_stopped|/dev/ublkb4|")
}

// TestOneshot: the arrays that need attention are reported once, with the program run for
// each; well arrays are not.
func TestOneshot(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	path, out := program(t)
	m, s, _ := newMonitor(t, Config{Program: path})
	startFake(t, "well", "/dev/ublkb0", "clean")
	deg := startFake(t, "deg", "/dev/ublkb1", "degraded")
	deg.members = []array.MemberStatus{{Index: 0, Path: "/dev/sda", State: "active"}, {Index: 1, Path: "/dev/sdb", State: "missing"}}
	require.NoError(t, m.Oneshot(context.Background()))
	require.NoError(t, m.Close())
	got := s.all()
	require.Len(t, got, 1, "only the degraded array: %v", got)
	assert.Equal(t, array.EventDegraded, got[0].Type)
	assert.Equal(t, "deg", got[0].Array)
	assert.Equal(t, "degraded on /dev/ublkb1: member 1 (/dev/sdb) missing", got[0].Message)
	lines := programLines(t, out, 1)
	assert.Contains(t, lines[0], "args=2|array_degraded|/dev/ublkb1| event=array_degraded array=deg")
}

// TestAttention: which entries of the inventory oneshot reports, and how.
func TestAttention(t *testing.T) {
	dead := 1 << 30
	for _, tc := range []struct {
		name  string
		entry daemon.Entry
		want  string // type; empty: not reported
		msg   string
	}{
		{"clean", daemon.Entry{Name: "a", Status: &daemon.Status{Status: array.Status{Name: "a", State: "clean"}}}, "", ""},
		{"active", daemon.Entry{Name: "a", Status: &daemon.Status{Status: array.Status{Name: "a", State: "active"}}}, "", ""},
		{"failed", daemon.Entry{Name: "a", Status: &daemon.Status{Status: array.Status{Name: "a", State: "failed", Device: "/dev/ublkb0"},
			Failure: "ublk queue 0 stopped"}}, array.EventArrayFailed, "failed on /dev/ublkb0: ublk queue 0 stopped"},
		{"lost", daemon.Entry{Name: "a", Err: daemon.ErrNotRunning,
			Record: &daemon.Record{Version: 1, Name: "a", PID: dead, DeviceID: 1, Device: "/dev/ublkb1"},
			Device: &ublk.DeviceInfo{ID: 1, State: "quiesced"}}, EventDaemonLost, "uraid recover a takes it over"},
		{"orphan", daemon.Entry{Device: &ublk.DeviceInfo{ID: 5, State: "dead"}}, EventDaemonLost, "uraid stop /dev/ublkb5 removes it"},
		{"stale record", daemon.Entry{Name: "a", Err: daemon.ErrNotRunning,
			Record:    &daemon.Record{Version: 1, Name: "a", PID: dead, DeviceID: 1, Device: "/dev/ublkb1"},
			DeviceErr: errENODEV}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := attention(tc.entry)
			if tc.want == "" {
				assert.False(t, ok, "%+v", e)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.want, e.Type)
			assert.Equal(t, daemon.Schema, e.Schema)
			assert.Contains(t, e.Message, tc.msg)
		})
	}
}

var errENODEV = unix.ENODEV
