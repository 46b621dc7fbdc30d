package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// errorable makes n members that can be made to fail every I/O: dm-linear devices over loop
// devices, whose table erroring() swaps for dm-error.
type errorable struct {
	t       *testing.T
	paths   []string
	names   []string
	loops   []string
	sectors int64
}

func errorableMembers(t *testing.T, n int, size int64) *errorable {
	t.Helper()
	guestModule(t, "dm_mod")
	e := &errorable{t: t, sectors: size >> 9}
	e.loops, _ = memberSet(t, "loop", n, size)
	for i, loop := range e.loops {
		name := fmt.Sprintf("uraid-err-%d-%d", os.Getpid(), i)
		dmsetup(t, "create", name, "--table", fmt.Sprintf("0 %d linear %s 0", e.sectors, loop))
		t.Cleanup(func() { dmRemove(t, name) })
		blk := strings.TrimSpace(dmsetup(t, "info", "-c", "--noheadings", "-o", "blkdevname", name))
		e.paths, e.names = append(e.paths, "/dev/"+blk), append(e.names, name)
	}
	return e
}

// erroring makes member i fail every read and write from now on.
func (e *errorable) erroring(i int) {
	e.t.Helper()
	dmsetup(e.t, "suspend", e.names[i])
	dmsetup(e.t, "reload", e.names[i], "--table", fmt.Sprintf("0 %d error", e.sectors))
	dmsetup(e.t, "resume", e.names[i])
}

// guestModule loads a module of the guest's kernel.
func guestModule(t *testing.T, name string, args ...string) {
	t.Helper()
	if k := os.Getenv("URAID_VM_KERNEL"); k != "" {
		sh(t, "modprobe", append([]string{"-d", k, name}, args...)...)
	}
}

// monitor is a running `uraid monitor --json`, its events read as they come.
type monitor struct {
	t      *testing.T
	cmd    *exec.Cmd
	events chan array.Event
	done   chan error
}

func startMonitor(t *testing.T, args ...string) *monitor {
	t.Helper()
	cmd := exec.Command(uraidBin(t), append([]string{"monitor", "--json"}, args...)...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	m := &monitor{t: t, cmd: cmd, events: make(chan array.Event, 1024), done: make(chan error, 1)}
	go func() {
		// events is closed before done is sent: whoever reads them sees every event first.
		defer close(m.events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e array.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				m.done <- fmt.Errorf("monitor printed %q: %w", sc.Text(), err)
				return
			}
			m.events <- e
		}
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		m.done <- err
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return m
}

// next waits for the next event whose type is among types, skipping others (progress, say),
// and fails the test if the monitor ends first.
func (m *monitor) next(types ...string) array.Event {
	m.t.Helper()
	return m.nextOf("", types...)
}

// TestE2EMonitorSeesMemberFail: `uraid monitor --json` streams a member failing under I/O (its
// device turned into dm-error), the array running degraded, and the stop that follows, and ends
// with the array.
func TestE2EMonitorSeesMemberFail(t *testing.T) {
	uraidBin(t)
	name := "e2e-monitor"
	ms := errorableMembers(t, 2, 64<<20)
	dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "1"}, ms.paths...)...))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cleanupRun(uraidBin(t), "stop", name)
		}
	})
	mon := startMonitor(t, name)
	e := mon.next("watching")
	assert.Equal(t, name, e.Array)
	assert.Equal(t, dev, e.Device)

	ms.erroring(1)
	// Writes reach every copy: the first one to member 1 fails it, and the write still succeeds
	// on member 0.
	sh(t, "dd", "if=/dev/urandom", "of="+dev, "bs=64k", "count=16", "oflag=direct", "status=none")
	e = mon.next(array.EventMemberFailed)
	require.NotNil(t, e.Member)
	assert.Equal(t, 1, *e.Member)
	assert.Equal(t, ms.paths[1], e.Path)
	assert.NotEmpty(t, e.Error)
	assert.Equal(t, array.EventDegraded, mon.next(array.EventDegraded, array.EventArrayFailed).Type)
	assert.Equal(t, "failed", detailAnyState(t, name).Members[1].State)

	uraid(t, "stop", name)
	stopped = true
	e = mon.next("stop_draining")
	assert.Contains(t, e.Message, "TRIMs")
	assert.Equal(t, "stopped cleanly", mon.next("array_stopped").Message)
	select {
	case err := <-mon.done:
		assert.NoError(t, err, "the monitor ends with the array, exit 0")
	case <-time.After(slow * time.Minute):
		t.Fatal("the monitor did not end with the array")
	}
}
