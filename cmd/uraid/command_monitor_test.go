package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/testutil"
	"uraid/monitor"
)

// eventArray is a daemon.Array whose event stream holds the events given.
type eventArray struct {
	events     []array.Event
	subscribed chan struct{}
	// status is what GET /status answers; empty if nil.
	status map[string]string
}

func (a *eventArray) Status() any {
	if a.status == nil {
		return map[string]string{}
	}
	return a.status
}
func (a *eventArray) Stop() error      { return nil }
func (a *eventArray) Handover() error  { return nil }
func (a *eventArray) FailQueue() error { return nil }
func (a *eventArray) Subscribe() (<-chan array.Event, func()) {
	ch := make(chan array.Event, len(a.events))
	for _, e := range a.events {
		ch <- e
	}
	close(a.subscribed)
	return ch, func() {}
}

// TestMonitorCLI: monitor prints a daemon's events, as text or JSON, and exits 0 once the
// daemon goes; with no array running it says how to name one.
func TestMonitorCLI(t *testing.T) {
	when := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	one := 1
	events := []array.Event{
		{Time: when, Array: "mon", Type: array.EventMemberFailed, Member: &one, Path: "/dev/sdb", Error: "EIO", Message: "member 1 (/dev/sdb) failed: EIO"},
		{Time: when, Array: "mon", Type: array.EventSyncFinished, Action: array.SyncRebuild, Outcome: array.OutcomeOK, Message: "rebuild done"},
	}
	for _, asJSON := range []bool{false, true} {
		t.Setenv("URAID_RUN_DIR", t.TempDir())
		srv, err := daemon.Listen("mon")
		require.NoError(t, err)
		a := &eventArray{events: events, subscribed: make(chan struct{})}
		srv.Serve(a, prometheus.NewRegistry(), false)
		args := []string{"monitor", "mon"}
		if asJSON {
			args = append(args, "--json")
		}
		type result struct {
			code     int
			out, err string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errOut := runCLI(t, args...)
			done <- result{code, out, errOut}
		}()
		testutil.Receive(t, a.subscribed, "monitor to connect")
		require.NoError(t, srv.Close()) // the daemon goes: the stream ends after what it holds
		r := testutil.Receive(t, done, "monitor to end with the daemon")
		require.Equal(t, 0, r.code, r.err)
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		require.Len(t, lines, 2, r.out)
		if asJSON {
			var e array.Event
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &e))
			assert.Equal(t, "/dev/sdb", e.Path)
			assert.Equal(t, 1, *e.Member)
			assert.True(t, strings.HasPrefix(lines[0], `{"schema":1,"time":`), "the schema comes first: %s", lines[0])
			assert.Contains(t, lines[1], `"outcome":"ok"`)
		} else {
			assert.Contains(t, lines[0], " mon member_failed member=1: member 1 (/dev/sdb) failed: EIO")
			assert.Contains(t, lines[1], " mon sync_finished outcome=ok: rebuild done")
		}
	}

	t.Setenv("URAID_RUN_DIR", t.TempDir())
	code, _, errOut := runCLI(t, "monitor")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no array is running")
	code, _, errOut = runCLI(t, "monitor", "absent")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "array is not running")

	for _, args := range [][]string{
		{"monitor", "--scan", "--oneshot"},
		{"monitor", "--scan", "mon"},
		{"monitor", "--oneshot", "mon"},
		{"monitor", "--interval", "1s"},
	} {
		code, _, errOut = runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	code, _, errOut = runCLI(t, "monitor", "--oneshot", "--program", "/nonexistent/page-me")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "--program: exec: \"/nonexistent/page-me\": stat /nonexistent/page-me: no such file or directory (give the path")
}

// lockedBuffer is a command's output that the test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestMonitorScanCLI: monitor --scan waits for arrays with none running, reports one that
// starts, and ends without error when interrupted.
func TestMonitorScanCLI(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	root := newRootCommand()
	var out, errOut lockedBuffer
	root.SetArgs([]string{"monitor", "--scan", "--json", "--interval", "5ms"})
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	testutil.WaitFor(t, "monitor --scan to look for arrays", func() bool {
		return strings.Contains(errOut.String(), `msg="watching for arrays"`)
	})

	srv, err := daemon.Listen("late")
	require.NoError(t, err)
	defer srv.Close()
	when := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := &eventArray{subscribed: make(chan struct{}), events: []array.Event{
		{Time: when, Array: "late", Type: daemon.EventWatching, Device: "/dev/ublkb7", Message: "watching /dev/ublkb7: clean"}}}
	srv.Serve(a, prometheus.NewRegistry(), false)
	testutil.WaitFor(t, "monitor --scan to report the array started", func() bool {
		return strings.Count(out.String(), "\n") == 2
	})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Contains(t, lines[0], `"array":"late","type":"array_started","device":"/dev/ublkb7"`)
	assert.Contains(t, lines[1], `"type":"watching"`)
	cancel()
	require.NoError(t, testutil.Receive(t, done, "monitor --scan to end when interrupted"), errOut.String())
}

// TestMonitorOneshotCLI: monitor --oneshot prints the degraded array, not the well one, and
// exits 0; with nothing to report it prints nothing.
func TestMonitorOneshotCLI(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	code, out, errOut := runCLI(t, "monitor", "--oneshot")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out)

	for name, state := range map[string]string{"well": "clean", "sick": "degraded"} {
		srv, err := daemon.Listen(name)
		require.NoError(t, err)
		defer srv.Close()
		srv.Serve(&eventArray{subscribed: make(chan struct{}),
			status: map[string]string{"name": name, "state": state, "device": "/dev/ublkb1"}}, prometheus.NewRegistry(), false)
	}
	code, out, errOut = runCLI(t, "monitor", "--oneshot", "--json")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1, out)
	var e monitor.Event
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &e))
	assert.Equal(t, daemon.Schema, e.Schema)
	assert.Equal(t, "sick", e.Array)
	assert.Equal(t, array.EventDegraded, e.Type)
	assert.Equal(t, "/dev/ublkb1", e.Device)
}
