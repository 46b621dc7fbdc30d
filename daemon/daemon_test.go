package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// The test binary doubles as a daemon for Spawn: TestMain runs the child's part when asked to.
func TestMain(m *testing.M) {
	switch os.Getenv("DAEMON_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "ready":
		NewNotifier().Ready("/dev/ublkb7")
		os.Exit(0)
	case "fail":
		NewNotifier().Failed(errors.New("member /x: not a uraid member"))
		os.Exit(1)
	case "die":
		fmt.Fprintln(os.Stderr, "child dies without a word")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "log":
		// A detached daemon's start: its logger, one record, ready.
		if j := os.Getenv("DAEMON_TEST_JOURNAL"); j != "" {
			journalSocket = j
		}
		log, err := NewDaemonLogger(LogText)
		if err != nil {
			os.Exit(1)
		}
		log.Warn("member failed", "array", "sp", "env", os.Getenv(logFileEnv))
		NewNotifier().Ready("/dev/ublkb7")
		os.Exit(0)
	}
}

type fakeArray struct {
	stops  atomic.Int32
	err    error
	once   sync.Once
	events *hub
}

func (a *fakeArray) hub() *hub {
	a.once.Do(func() { a.events = newHub(slog.New(slog.DiscardHandler)) })
	return a.events
}
func (a *fakeArray) Subscribe() (<-chan array.Event, func()) { return a.hub().Subscribe(nil) }

func (a *fakeArray) Status() any      { return map[string]any{"name": "t0", "state": "clean"} }
func (a *fakeArray) Stop() error      { a.stops.Add(1); return a.err }
func (a *fakeArray) Handover() error  { return errors.New("no hand-over here") }
func (a *fakeArray) FailQueue() error { return nil }

func useRunDir(t *testing.T) string {
	d := t.TempDir()
	t.Setenv("URAID_RUN_DIR", d)
	return d
}

func TestServeStatusMetricsStop(t *testing.T) {
	useRunDir(t)
	s, err := Listen("t0")
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "uraid_test_total", Help: "test"})
	c.Add(3)
	reg.MustRegister(c)
	a := &fakeArray{}
	s.Serve(a, reg, false)

	fi, err := os.Stat(SocketPath("t0"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	ctx := context.Background()
	cl := NewClient("t0")
	var st map[string]string
	require.NoError(t, cl.Status(ctx, &st))
	assert.Equal(t, "clean", st["state"])
	m, err := cl.Metrics(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(m), "uraid_test_total 3")
	require.NoError(t, cl.Stop(ctx))
	assert.EqualValues(t, 1, a.stops.Load())

	names, err := Running()
	require.NoError(t, err)
	assert.Equal(t, []string{"t0"}, names)
	require.NoError(t, s.Close())
	_, err = os.Stat(SocketPath("t0"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	names, err = Running()
	require.NoError(t, err)
	assert.Empty(t, names)
}

func TestStopErrorReachesClient(t *testing.T) {
	useRunDir(t)
	s, err := Listen("t1")
	require.NoError(t, err)
	s.Serve(&fakeArray{err: errors.New("flush member 2: input/output error")}, prometheus.NewRegistry(), false)
	defer s.Close()
	err = NewClient("t1").Stop(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "flush member 2: input/output error")
}

func TestListenRefusesRunningAndReplacesStale(t *testing.T) {
	dir := useRunDir(t)
	s, err := Listen("t2")
	require.NoError(t, err)
	s.Serve(&fakeArray{}, prometheus.NewRegistry(), false)
	_, err = Listen("t2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already running")
	require.NoError(t, s.Close())

	// A daemon killed with SIGKILL leaves its socket file; nobody answers on it.
	ln, err := net.Listen("unix", filepath.Join(dir, "t3.sock"))
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	_, err = os.Stat(filepath.Join(dir, "t3.sock"))
	require.NoError(t, err, "the stale socket should still exist")
	s, err = Listen("t3")
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

func TestClientNotRunning(t *testing.T) {
	useRunDir(t)
	_, err := NewClient("absent").StatusJSON(context.Background())
	assert.ErrorIs(t, err, ErrNotRunning)
	assert.Contains(t, err.Error(), "uraid list")
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"demo", "md0", "a.b_c-d", strings.Repeat("x", 32)} {
		assert.NoError(t, CheckName(ok), ok)
	}
	for _, bad := range []string{"", "-x", ".hidden", "a/b", "a b", strings.Repeat("x", 33), "ä"} {
		assert.Error(t, CheckName(bad), bad)
	}
}

func TestSpawn(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		child, want, wantErr string
		timeout              time.Duration
	}{
		{"ready", "/dev/ublkb7", "", 10 * time.Second},
		{"fail", "", "member /x: not a uraid member", 10 * time.Second},
		{"die", "", "daemon exited before it was ready", 10 * time.Second},
		{"hang", "", "not ready after", 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.child, func(t *testing.T) {
			noJournal(t, useRunDir(t))
			t.Setenv("DAEMON_TEST_CHILD", tt.child)
			dev, err := Spawn("sp", exe, []string{"-test.run=^$"}, tt.timeout)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, dev)
		})
	}
}
