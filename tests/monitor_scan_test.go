package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
	monitoring "uraid/monitor"
)

// nextOf waits for the next event of array name ("": any) whose type is among types, skipping
// the other arrays' events (arrays of earlier tests may still be going) and other types, and
// fails the test if the monitor ends first.
func (m *monitor) nextOf(name string, types ...string) array.Event {
	m.t.Helper()
	deadline := time.After(slow * time.Minute)
	for {
		select {
		case e, ok := <-m.events:
			if !ok {
				m.t.Fatalf("monitor ended waiting for %s's %v: %v", name, types, <-m.done)
			}
			if name == "" || e.Array == name {
				for _, typ := range types {
					if e.Type == typ {
						return e
					}
				}
			}
			m.t.Logf("monitor: skipping %s of %s: %s", e.Type, e.Array, e.Message)
		case <-deadline:
			m.t.Fatalf("no %v event of %s", types, name)
		}
	}
}

// TestE2EMonitorScanFollowsArraysAndPages: `uraid monitor --scan --program` started before any
// array of its own exists, as a service would be at boot, sees an array start, a member fail
// under I/O, its daemon killed and recovered, the array stop, and a second array start after
// that; it keeps running through all of it, and the program runs for each event with mdadm's
// arguments (EVENT DEVICE [MEMBER]) and the event in its environment.
func TestE2EMonitorScanFollowsArraysAndPages(t *testing.T) {
	uraidBin(t)
	dir := t.TempDir()
	pages := filepath.Join(dir, "pages")
	prog := filepath.Join(dir, "page")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho \"$1|$2|$3|$URAID_ARRAY\" >>"+pages+"\n"), 0o755))
	mon := startMonitor(t, "--scan", "--program", prog)

	name, second := "e2e-scan", "e2e-scan-2"
	ms := errorableMembers(t, 2, 64<<20)
	t.Cleanup(func() {
		for _, n := range []string{name, second} {
			recoverIfDead(t, n)
			cleanupRun(uraidBin(t), "stop", n)
		}
	})
	dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "1"}, ms.paths...)...))
	e := mon.nextOf(name, daemon.EventStarted, daemon.EventWatching)
	if e.Type == daemon.EventWatching {
		// The scan looked before the daemon said it started: it watches the array all the same.
		t.Logf("the scan found %s running before its start event", name)
	} else {
		assert.Equal(t, dev, e.Device)
		mon.nextOf(name, daemon.EventWatching)
	}

	ms.erroring(1)
	sh(t, "dd", "if=/dev/urandom", "of="+dev, "bs=64k", "count=16", "oflag=direct", "status=none")
	e = mon.nextOf(name, array.EventMemberFailed)
	assert.Equal(t, ms.paths[1], e.Path)

	// No I/O is in flight: the killed daemon's device waits, quiesced, for its successor.
	pid := daemonDetail(t, name).PID
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	e = mon.nextOf(name, monitoring.EventDaemonLost)
	assert.Equal(t, dev, e.Device)
	uraid(t, "recover", name)
	mon.nextOf(name, daemon.EventRecovered)
	// The successor does not take back the failed member: it is out (failed, or missing once the
	// superblocks no longer name its device as current).
	assert.Contains(t, []string{"failed", "missing"}, detailAnyState(t, name).Members[1].State, "the failure survives the kill")

	uraid(t, "stop", name)
	mon.nextOf(name, daemon.EventStopped)

	files, _ := memberSet(t, "file", 2, 32<<20)
	dev2 := strings.TrimSpace(uraid(t, append([]string{"create", second, "--level", "1"}, files...)...))
	e = mon.nextOf(second, daemon.EventStarted, daemon.EventWatching)
	if e.Type == daemon.EventStarted {
		assert.Equal(t, dev2, e.Device)
	}
	uraid(t, "stop", second)
	mon.nextOf(second, daemon.EventStopped)
	select {
	case err := <-mon.done:
		t.Fatalf("monitor --scan ended with the arrays: %v", err)
	default:
	}

	// The program runs after the event is printed, one run at a time per array, in order.
	want := []string{
		fmt.Sprintf("%s|%s|%s|%s", array.EventMemberFailed, dev, ms.paths[1], name),
		fmt.Sprintf("%s|%s||%s", monitoring.EventDaemonLost, dev, name),
		fmt.Sprintf("%s|%s||%s", daemon.EventStopped, dev2, second),
	}
	var got string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(pages)
		got = string(b)
		for _, w := range want {
			if !strings.Contains(got, w+"\n") {
				return false
			}
		}
		return true
	}, slow*time.Minute, 20*time.Millisecond, "the program's runs: want lines %q", want)
	assert.Less(t, strings.Index(got, want[0]), strings.Index(got, want[1]), "in order: %s", got)
	t.Logf("the program ran for:\n%s", got)
}
