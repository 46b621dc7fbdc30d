package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/internal/testutil"
	"uraid/internal/testutil/raidtest"
	"uraid/internal/uapi"
	"uraid/mapping"
	"uraid/raid"
	"uraid/ublk"
)

// fakeDevice stands for the ublk device in tests of the daemon's lifecycle: it records what the
// daemon asked of it.
type fakeDevice struct {
	mu        sync.Mutex
	flags     ublk.Flags
	busy      error // StopUnused's answer while set
	drainErr  error
	stopped   bool
	drains    int
	endDrains int
	abandoned bool
	settled   bool
	// sizes lists the sizes UpdateSize was asked for; updateErr is its answer.
	sizes     []int64
	updateErr error
	failed    chan struct{}
	err       error
}

func newFakeDevice(reissue bool) *fakeDevice {
	f := ublk.Flags(uapi.UBLK_F_USER_RECOVERY)
	if reissue {
		f |= uapi.UBLK_F_USER_RECOVERY_REISSUE
	}
	return &fakeDevice{flags: f, failed: make(chan struct{})}
}

func (d *fakeDevice) Start(context.Context) error { return nil }
func (d *fakeDevice) UpdateSize(size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sizes = append(d.sizes, size)
	return d.updateErr
}
func (d *fakeDevice) StopUnused() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy != nil {
		return d.busy
	}
	d.stopped = true
	return nil
}
func (d *fakeDevice) Drain(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drains++
	return d.drainErr
}
func (d *fakeDevice) EndDrain() { d.mu.Lock(); d.endDrains++; d.mu.Unlock() }
func (d *fakeDevice) Abandon() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.abandoned = true
	return nil
}
func (d *fakeDevice) Settle(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.settled = true
	return nil
}
func (d *fakeDevice) FailQueue(q int, err error) error {
	d.err = err
	close(d.failed)
	return nil
}
func (d *fakeDevice) Failed() <-chan struct{}       { return d.failed }
func (d *fakeDevice) Err() error                    { return d.err }
func (d *fakeDevice) Path() string                  { return "/dev/ublkb5" }
func (d *fakeDevice) Flags() ublk.Flags             { return d.flags }
func (d *fakeDevice) ZeroCopy() ublk.ZeroCopyStatus { return ublk.ZeroCopyStatus{Mode: "copy"} }
func (d *fakeDevice) BatchIO() ublk.BatchIOStatus   { return ublk.BatchIOStatus{Reason: "fake"} }
func (d *fakeDevice) QueueCounts() []ublk.QueueCounts {
	return []ublk.QueueCounts{{Queue: 0, TID: 7, Enters: 42}}
}

// lifecycle is a served array over member files with a fake device, its loop running.
type lifecycle struct {
	t       *testing.T
	s       *served
	dev     *fakeDevice
	members []string
	sigs    chan os.Signal
	done    chan error
}

func startLifecycle(t *testing.T, dev *fakeDevice, cfg Config) *lifecycle {
	t.Helper()
	return startLifecycleOf(t, dev, cfg, mapping.RAID1)
}

// startLifecycleOf is startLifecycle with an array of two members at level.
func startLifecycleOf(t *testing.T, dev *fakeDevice, cfg Config, level mapping.Level) *lifecycle {
	t.Helper()
	useRunDir(t)
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "life", Level: level, Size: 8 << 20, Members: paths})
	require.NoError(t, err)
	cfg.Options = array.Options{Queues: 1, Depth: 4, Log: cfg.Log}
	a, err := array.NewArray(ms, sbs, cfg.Options)
	require.NoError(t, err)
	require.NoError(t, a.MarkDirty())
	rec := newRecord(a, cfg)
	rec.DeviceID, rec.Device = 5, "/dev/ublkb5"
	require.NoError(t, writeRecord(rec))
	l := &lifecycle{t: t, s: newServed(a, dev, rec, cfg), dev: dev, members: paths,
		sigs: make(chan os.Signal, 1), done: make(chan error, 1)}
	go func() { l.done <- l.s.loop(l.sigs, &Notifier{}) }()
	return l
}

// ended returns the loop's result once it has returned.
func (l *lifecycle) ended() error {
	l.t.Helper()
	return testutil.Receive(l.t, l.done, "the daemon's loop to end")
}

func (l *lifecycle) running() bool {
	select {
	case err := <-l.done:
		l.done <- err
		return false
	default:
		return true
	}
}

// A stop is refused, and changes nothing, while the device is open; once it is not, the array
// stops, the members are clean and the record is gone.
func TestStopRefusedWhileBusy(t *testing.T) {
	dev := newFakeDevice(true)
	dev.busy = fmt.Errorf("ublk dev 5: /dev/ublkb5 %w: mounted at /mnt/data", ublk.ErrBusy)
	log, logged := testutil.Logger()
	l := startLifecycle(t, dev, Config{Log: log})

	err := l.s.Stop()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing to stop")
	assert.Contains(t, err.Error(), "mounted at /mnt/data")
	l.sigs <- syscall.SIGTERM // the signal handler refuses the same way
	require.Error(t, l.s.Stop(), "still busy")
	assert.True(t, l.running())
	// Whoever sent the signal reads no answer: the daemon's log has it (the guest suite looks
	// for these words in a foreground daemon's stderr).
	require.Eventually(t, func() bool { return strings.Contains(logged.String(), "refusing to stop") }, 10*time.Second, time.Millisecond)
	assert.Contains(t, logged.String(), "level=WARN")
	assert.Contains(t, logged.String(), "mounted at /mnt/data")
	assert.Contains(t, logged.String(), "array=life")
	_, err = ReadRecord("life")
	require.NoError(t, err, "a refused stop keeps the record")
	assert.Equal(t, raid.StateDirty, raidtest.Superblock(t, l.members[0]).State)

	dev.mu.Lock()
	dev.busy = nil
	dev.mu.Unlock()
	require.NoError(t, l.s.Stop())
	require.NoError(t, l.ended())
	assert.True(t, dev.stopped)
	_, err = ReadRecord("life")
	assert.ErrorIs(t, err, ErrNoRecord)
	for _, m := range l.members {
		assert.Equal(t, raid.StateClean, raidtest.Superblock(t, m).State)
	}
}

// SIGTERM on an unused device stops the array like POST /stop.
func TestSignalStops(t *testing.T) {
	dev := newFakeDevice(true)
	l := startLifecycle(t, dev, Config{})
	l.sigs <- syscall.SIGTERM
	require.NoError(t, l.ended())
	assert.True(t, dev.stopped)
}

// A hand-over drains the device, marks the members clean and records that it handed over, leaves
// the device without stopping it and lets go of the members; a supervised daemon then asks its
// supervisor for the successor.
func TestHandover(t *testing.T) {
	for _, supervised := range []bool{false, true} {
		t.Run(fmt.Sprint("supervised=", supervised), func(t *testing.T) {
			dev := newFakeDevice(true)
			l := startLifecycle(t, dev, Config{Supervised: supervised})
			require.NoError(t, l.s.Handover())
			err := l.ended()
			if supervised {
				assert.ErrorIs(t, err, ErrRestartMe)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, 1, dev.drains)
			assert.Zero(t, dev.endDrains)
			assert.True(t, dev.abandoned)
			assert.False(t, dev.stopped, "a hand-over never stops the device")
			rec, err := ReadRecord("life")
			require.NoError(t, err)
			assert.True(t, rec.Handover)
			assert.False(t, rec.Unclean)
			for _, m := range l.members {
				assert.Equal(t, raid.StateClean, raidtest.Superblock(t, m).State, "drained and flushed, the members are as a clean stop leaves them")
			}
			// The members are free for the successor.
			a, err := array.Assemble("life", l.members, array.Options{Queues: 1, Depth: 4})
			require.NoError(t, err)
			require.NoError(t, a.Close())
		})
	}
}

// Without reissue, a hand-over would fail the requests that arrive meanwhile: it is refused and
// the daemon serves on. A drain that does not finish is undone.
func TestHandoverRefused(t *testing.T) {
	dev := newFakeDevice(false)
	l := startLifecycle(t, dev, Config{})
	err := l.s.Handover()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "UBLK_F_USER_RECOVERY_REISSUE")
	assert.Zero(t, dev.drains)

	l.s.flags |= uapi.UBLK_F_USER_RECOVERY_REISSUE // as a device that has it
	dev.drainErr = errors.New("ublk drain: the target still holds requests: context deadline exceeded")
	err = l.s.Handover()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "still holds requests")
	assert.Equal(t, 1, dev.endDrains, "a failed drain serves the held-back requests again")
	assert.False(t, dev.abandoned)
	assert.True(t, l.running())
	rec, err := ReadRecord("life")
	require.NoError(t, err)
	assert.False(t, rec.Handover)
	require.NoError(t, l.s.Stop())
	require.NoError(t, l.ended())
}

// A device that fails (a queue stopped serving) fails the array: status and metrics say why,
// the record keeps it for the successor, the device is left for it, and the daemon ends with an
// error so that its supervisor starts the successor.
func TestDeviceFailure(t *testing.T) {
	dev := newFakeDevice(true)
	log, logged := testutil.Logger()
	l := startLifecycle(t, dev, Config{Log: log})
	defer l.s.a.Close()
	require.NoError(t, l.s.FailQueue())
	err := l.ended()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failure injected")
	assert.True(t, dev.settled, "the other queues finish what the array holds")
	assert.False(t, dev.abandoned, "no queue is closed before the daemon exits")
	assert.False(t, dev.stopped)
	assert.Regexp(t, `level=ERROR msg="device failed; exiting so that a new daemon takes the device over" array=life reason="ublk queue 0: failure injected`, logged.String())

	st := l.s.status()
	assert.Equal(t, array.StateNameFailed, st.State)
	assert.Contains(t, st.Failure, "failure injected")
	assert.True(t, st.Unclean, "writes in flight may have reached some copies only")
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(l.s.status))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var text strings.Builder
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&text, mf)
		require.NoError(t, err)
	}
	assert.Contains(t, text.String(), `uraid_array_state{array="life",state="failed"} 1`)
	assert.Contains(t, text.String(), `uraid_array_device_failed{array="life",reason="ublk queue 0: failure injected (URAID_TEST_HOOKS)"} 1`)

	rec, err := ReadRecord("life")
	require.NoError(t, err)
	assert.Contains(t, rec.Failure, "failure injected")
	assert.True(t, rec.Unclean)
	assert.Equal(t, "daemon "+fmt.Sprint(rec.PID)+" failed: "+rec.Failure, predecessorExit(&rec))
}

func TestRecordRoundTrip(t *testing.T) {
	useRunDir(t)
	r := &Record{Name: "rt", UUID: "u", PID: 42, DeviceID: 3, Device: "/dev/ublkb3", Members: []string{"/a", "/b"},
		Options: recordOptions(array.Options{Queues: 2, Depth: 64, Degraded: true, Discard: array.DiscardOptions{
			Mode: "async", InFlight: 3, MemberInFlight: map[string]int{"/a": 1}, Exclusive: []string{"/b"}, MinGap: 5 * time.Millisecond}}),
		Reissue: true, Recoveries: 2, LastExit: "daemon 41 died"}
	require.NoError(t, writeRecord(r))
	got, err := ReadRecord("rt")
	require.NoError(t, err)
	assert.Equal(t, RecordVersion, got.Version)
	got.Updated = r.Updated
	assert.Equal(t, *r, got)
	assert.Equal(t, array.Options{Queues: 2, Depth: 64, Degraded: true, Discard: array.DiscardOptions{
		Mode: "async", InFlight: 3, MemberInFlight: map[string]int{"/a": 1}, Exclusive: []string{"/b"}, MinGap: 5 * time.Millisecond}},
		got.Options.raidOptions())
	leftovers, _ := filepath.Glob(filepath.Join(RunDir(), ".*tmp*"))
	assert.Empty(t, leftovers, "no temporary file is left")

	require.NoError(t, removeRecord("rt"))
	_, err = ReadRecord("rt")
	assert.ErrorIs(t, err, ErrNoRecord)
	require.NoError(t, removeRecord("rt"), "removing a record twice is no error")
}

func TestRecordRefusals(t *testing.T) {
	dir := useRunDir(t)
	for _, c := range []struct{ body, want string }{
		{`{"version": 99, "name": "bad"}`, "newer than this uraid"},
		{`{"version": 1, "name": "other"}`, `names array "other"`},
		{`{"version": 1, "na`, "damaged"},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(c.body), 0o600))
		_, err := ReadRecord("bad")
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	// An unversioned record of an older uraid still names a device to clean up.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.json"), []byte(`{"name":"old","pid":7,"device_id":2,"device":"/dev/ublkb2","members":["/m"]}`), 0o600))
	r, err := ReadRecord("old")
	require.NoError(t, err)
	assert.Equal(t, 0, r.Version)
	assert.Equal(t, uint32(2), r.DeviceID)
}

func TestProcessIdentity(t *testing.T) {
	me := os.Getpid()
	start := processStart(me)
	require.NotZero(t, start)
	assert.True(t, processRunning(me, start))
	assert.True(t, processRunning(me, 0))
	assert.False(t, processRunning(me, start+1), "a pid whose start time differs is another process")
	assert.False(t, processRunning(0, 0))
	assert.False(t, processRunning(1<<30, 0))
}
