package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/testutil"
)

// eventArray is a daemon.Array whose event stream holds the events given.
type eventArray struct {
	events     []array.Event
	subscribed chan struct{}
}

func (a *eventArray) Status() any      { return map[string]string{} }
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
}
