package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/daemon"
	"uraid/ublk"
)

// The recovery suite kills, restarts and stops array daemons under a mounted filesystem and load,
// and checks that no application sees an error and no acknowledged byte is lost.

// uraidEnv runs the CLI with extra environment and returns its output and error.
func uraidEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(uraidBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out) + stderr.String(), err
}

// exitStatus is the exit status err carries, or -1.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// recoveryArray is an array made for a recovery test, with ext4 mounted on it.
type recoveryArray struct {
	t       *testing.T
	name    string
	dev     string
	members []string
	mnt     string
}

// newRecoveryArray creates a raid10 over four loop devices, puts ext4 on it and mounts it. On
// the way out (failed or not) it unmounts and stops the array, and shows the daemon's log if
// the test failed.
func newRecoveryArray(t *testing.T, name string, env ...string) *recoveryArray {
	t.Helper()
	members, _ := memberSet(t, "loop", 4, 96<<20)
	out, err := uraidEnv(t, env, append([]string{"create", name, "--level", "10", "--chunk", "64K"}, members...)...)
	require.NoError(t, err, out)
	r := &recoveryArray{t: t, name: name, dev: strings.TrimSpace(out), members: members, mnt: t.TempDir()}
	require.True(t, strings.HasPrefix(r.dev, "/dev/ublkb"), "create printed %q", out)
	t.Cleanup(r.cleanup)
	sh(t, "mkfs.ext4", "-q", "-F", "-E", "nodiscard", r.dev)
	sh(t, "mount", r.dev, r.mnt)
	return r
}

func (r *recoveryArray) cleanup() {
	if r.t.Failed() {
		if b, err := os.ReadFile(daemon.LogPath(r.name)); err == nil {
			r.t.Logf("daemon log of %s:\n%s", r.name, b)
		}
		if b, err := os.ReadFile(daemon.RecordPath(r.name)); err == nil {
			r.t.Logf("record of %s:\n%s", r.name, b)
		}
	}
	// A quiesced device under the mount would make umount wait for ever: recover it first.
	recoverIfDead(r.t, r.name)
	cleanupUnmount(r.mnt)
	cleanupRun(uraidBin(r.t), "stop", r.name)
}

// status is the array's status from its daemon.
func (r *recoveryArray) status() daemon.Status { return daemonDetail(r.t, r.name) }

// recoverIfDead takes over the device of name's dead daemon, so that a cleanup's stop can flush
// and remove it; an array that runs, or left no device, is left as it is.
func recoverIfDead(t *testing.T, name string) {
	if e := daemon.Lookup(context.Background(), name); e.Status == nil && e.Device != nil {
		cleanupRun(uraidBin(t), "recover", name)
	}
}

// daemonDetail is uraid detail --json of name, with what only the daemon knows.
func daemonDetail(t *testing.T, name string) daemon.Status {
	t.Helper()
	var st daemon.Status
	out := uraid(t, "detail", "--json", name)
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	return st
}

func (r *recoveryArray) written() uint64 {
	var n uint64
	for _, m := range r.status().Members {
		n += m.IO.WriteBytes
	}
	return n
}

// waitQuiesced waits until the kernel has quiesced the device of the dead daemon.
func (r *recoveryArray) waitQuiesced(id uint32) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		info, err := ublk.Info(id)
		return err == nil && info.State == "quiesced"
	}, slow*10*time.Second, 5*time.Millisecond, "%s is not quiesced after its daemon died", r.dev)
	_, err := os.Stat(r.dev)
	require.NoError(r.t, err, "the block device survives its daemon")
}

// kill kills the array's daemon with SIGKILL, waits until it is gone and the device quiesced.
func (r *recoveryArray) kill(pid int) {
	r.t.Helper()
	require.NoError(r.t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(r.t, func() bool { return !processAlive(pid) }, slow*10*time.Second, 5*time.Millisecond)
	r.waitQuiesced(r.deviceID())
}

func (r *recoveryArray) deviceID() uint32 {
	var id uint32
	_, err := fmt.Sscanf(r.dev, "/dev/ublkb%d", &id)
	require.NoError(r.t, err)
	return id
}

// load is what runs on the mounted array while its daemon is killed or replaced: fio writing
// with verify, and a writer that fsyncs every file it writes.
type load struct {
	t       *testing.T
	fio     *exec.Cmd
	fioOut  bytes.Buffer
	fioDone chan error

	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	synced map[string][32]byte // files whose fsync returned, and their contents
	errs   []error
}

// startLoad starts fio (size bytes, random writes of 4 to 64 KiB, direct, crc32c verify at the
// end) and the fsync writer in dir.
func startLoad(t *testing.T, dir string, size string) *load {
	t.Helper()
	l := &load{t: t, fioDone: make(chan error, 1), stop: make(chan struct{}), synced: map[string][32]byte{}}
	l.fio = testCommand(t, "fio", "--name=verify", "--directory="+dir, "--filename=fio.dat", "--size="+size,
		"--rw=randwrite", "--bsrange=4k-64k", "--ioengine=io_uring", "--iodepth=16", "--direct=1",
		"--verify=crc32c", "--verify_fatal=1", "--randseed=11", "--output-format=json")
	l.fio.Stdout, l.fio.Stderr = &l.fioOut, &l.fioOut
	require.NoError(t, l.fio.Start())
	go func() { l.fioDone <- l.fio.Wait() }()
	syncDir := filepath.Join(dir, "synced")
	require.NoError(t, os.Mkdir(syncDir, 0o755))
	l.wg.Add(1)
	go l.writer(syncDir)
	return l
}

// syncedKept bounds the fsync writer's files (about 28 KiB each, 7 MiB in all): it deletes the oldest beyond it.
const syncedKept = 256

func (l *load) writer(dir string) {
	defer l.wg.Done()
	d, err := os.Open(dir)
	if err != nil {
		l.fail(err)
		return
	}
	defer d.Close()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		if i >= syncedKept {
			// Bounded space, however long the load runs on a slow machine: the oldest file goes,
			// out of the checked set before its name, so that a kill mid-way checks nothing
			// half-deleted.
			old := filepath.Join(dir, fmt.Sprintf("f%05d", i-syncedKept))
			l.mu.Lock()
			delete(l.synced, old)
			l.mu.Unlock()
			if err := os.Remove(old); err != nil {
				l.fail(fmt.Errorf("fsync writer, %s: %w", old, err))
				return
			}
		}
		b := make([]byte, 16<<10+i%7*4096)
		_, _ = rand.Read(b)
		p := filepath.Join(dir, fmt.Sprintf("f%05d", i))
		f, err := os.Create(p)
		if err == nil {
			_, err = f.Write(b)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			err = d.Sync() // the file's name is durable too
		}
		if err != nil {
			l.fail(fmt.Errorf("fsync writer, %s: %w", p, err))
			return
		}
		l.mu.Lock()
		l.synced[p] = sha256.Sum256(b)
		l.mu.Unlock()
	}
}

func (l *load) fail(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

// running reports whether fio is still at work.
func (l *load) running() bool {
	select {
	case err := <-l.fioDone:
		l.fioDone <- err
		return false
	default:
		return true
	}
}

// finish waits for fio, stops the writer and checks that neither saw an error, that fio verified
// everything it wrote, and that every fsync'd file reads back as written (from the device: the
// caches are dropped first).
func (l *load) finish() {
	t := l.t
	t.Helper()
	var fioErr error
	select {
	case fioErr = <-l.fioDone:
	case <-time.After(slow * 2 * time.Minute):
		_ = l.fio.Process.Kill()
		t.Fatalf("fio did not finish; it said:\n%s", l.fioOut.String())
	}
	close(l.stop)
	l.wg.Wait()
	require.NoError(t, fioErr, "fio:\n%s", l.fioOut.String())
	var res struct {
		Jobs []struct {
			Error int `json:"error"`
			Write struct {
				IOBytes int64 `json:"io_bytes"`
			} `json:"write"`
			Read struct {
				IOBytes int64 `json:"io_bytes"`
			} `json:"read"`
		} `json:"jobs"`
	}
	out := l.fioOut.String()
	if i := strings.IndexByte(out, '{'); i > 0 {
		out = out[i:] // fio may warn before the JSON
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), l.fioOut.String())
	require.Len(t, res.Jobs, 1)
	assert.Zero(t, res.Jobs[0].Error, "fio saw an error")
	assert.Positive(t, res.Jobs[0].Write.IOBytes)
	assert.Equal(t, res.Jobs[0].Write.IOBytes, res.Jobs[0].Read.IOBytes, "fio read back (verified) all it wrote")

	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.errs, "the fsync writer saw an error")
	require.NotEmpty(t, l.synced)
	dropCaches(t)
	for p, want := range l.synced {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, want, sha256.Sum256(b), "%s: an fsync'd file changed", p)
	}
	t.Logf("fio wrote and verified %d MiB; %d files fsync'd and verified", res.Jobs[0].Write.IOBytes>>20, len(l.synced))
}

// waitResynced waits until the resync that an unclean end calls for has run to its end: the
// regions whose writes were in flight when the daemon died are back in step.
func (r *recoveryArray) waitResynced() daemon.Status {
	r.t.Helper()
	var st daemon.Status
	require.Eventually(r.t, func() bool {
		st = r.status()
		return st.Regions != nil && st.Regions.NeedResync == 0 && st.Sync != nil && st.Sync.Last != nil &&
			st.Sync.Last.Action == "resync"
	}, slow*2*time.Minute, 20*time.Millisecond, "no resync ran to its end after the unclean end")
	require.Empty(r.t, st.Sync.Last.Error, "the resync failed")
	require.False(r.t, st.Sync.Last.Cancelled)
	assert.Empty(r.t, st.Resync)
	return st
}

// waitWritten waits until the array has written n more bytes to its members than it had at
// from: the load is well under way.
func (r *recoveryArray) waitWritten(from, n uint64) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return r.written() >= from+n }, slow*time.Minute, 20*time.Millisecond,
		"the load did not get going")
}

// TestE2ERecoverKilledDaemonUnderLoad kills the daemon of a mounted raid10 under load: the device
// stays, quiesced, the load waits instead of failing, create and assemble refuse the name and
// point at recover, and uraid recover takes the same device over. fio ends without an error and
// verifies what it wrote, every fsync'd file reads back, the filesystem is clean, and the array
// says it restarted uncleanly.
func TestE2ERecoverKilledDaemonUnderLoad(t *testing.T) {
	uraidBin(t)
	r := newRecoveryArray(t, "rk")
	st := r.status()
	assert.True(t, st.Recovery.Enabled, "arrays run with user recovery")
	assert.True(t, st.Recovery.Reissue, "6.12 reissues what a dead daemon held")
	l := startLoad(t, r.mnt, "48M")
	r.waitWritten(r.written(), 8<<20)
	require.True(t, l.running(), "fio finished before the daemon could be killed mid-run")
	t.Logf("killing the daemon with requests in flight (reads, writes): %s", strings.TrimSpace(string(must2(os.ReadFile("/sys/block/"+filepath.Base(r.dev)+"/inflight")))))
	r.kill(st.PID)

	// What a user sees while no daemon serves.
	out, err := uraidCode(t, "status", "--test")
	assert.Equal(t, 2, exitStatus(err), out) // --test: not answering is unusable
	assert.Contains(t, out, "quiesced")
	assert.Contains(t, out, "uraid recover rk")
	assert.Contains(t, must(uraidCode(t, "list")), "quiesced")
	out, err = uraidCode(t, append([]string{"assemble", "rk"}, r.members...)...)
	assert.Equal(t, 1, exitStatus(err), out)
	assert.Contains(t, out, "uraid recover rk")
	fresh, _ := memberSet(t, "file", 2, 16<<20)
	before := []string{fileSum(t, fresh[0]), fileSum(t, fresh[1])}
	out, err = uraidCode(t, "create", "rk", "--level", "1", fresh[0], fresh[1])
	assert.Equal(t, 1, exitStatus(err), out)
	assert.Contains(t, out, "uraid recover rk")
	assert.Equal(t, before, []string{fileSum(t, fresh[0]), fileSum(t, fresh[1])}, "a refused create wrote to a member")

	began := time.Now()
	out = uraid(t, "recover", "rk")
	t.Logf("uraid recover took %v", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, r.dev, strings.TrimSpace(out), "the device keeps its number")
	l.finish()

	st = r.status()
	assert.True(t, st.Unclean, "writes in flight when the daemon died may have reached some copies only")
	assert.Equal(t, 1, st.Recovery.Count)
	assert.Contains(t, st.Recovery.LastExit, "died")
	assert.Contains(t, must(uraidCode(t, "status", "rk")), "active, unclean")
	st = r.waitResynced()
	t.Logf("resync after the kill: %d bytes in %.1fs", st.Sync.Last.DoneBytes, st.Sync.Last.Seconds)
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-fn", r.dev)
	uraid(t, "stop", "rk")
	_, err = os.Stat(r.dev)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(daemon.RecordPath("rk"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the record goes with the device")
}

// delayedWrites is the number of writes dm-delay holds on the delayed devices called names
// (their status: reads, writes and flushes waiting out their delay), or -1 if it cannot say.
func delayedWrites(names []string) int {
	out, err := exec.Command("dmsetup", "status").Output()
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		// "NAME: 0 65536 delay 0 1 0"
		name, rest, ok := strings.Cut(line, ": ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		var start, length, r, w, fl int
		var target string
		if _, err := fmt.Sscan(rest, &start, &length, &target, &r, &w, &fl); err != nil {
			return -1
		}
		n += w
	}
	return n
}

// uraidNext is a second build of uraid (make test-vm links it with another version), to hand a
// running array over to.
func uraidNext(t *testing.T) string {
	t.Helper()
	return builtBin(t, "URAID_BIN_NEXT", "a second uraid")
}

// TestE2ERestartUnderLoad upgrades the daemon of a mounted raid10 under load to another build and
// back: each restart keeps the device, the load never sees an error, and since the old daemon
// drained before it left, the array stays clean.
func TestE2ERestartUnderLoad(t *testing.T) {
	bin, next := uraidBin(t), uraidNext(t)
	nextVersion := strings.TrimSpace(strings.TrimPrefix(sh(t, next, "version"), "uraid"))
	require.NotEqual(t, strings.TrimSpace(strings.TrimPrefix(sh(t, bin, "version"), "uraid")), nextVersion,
		"the two builds must differ")
	r := newRecoveryArray(t, "rr")
	l := startLoad(t, r.mnt, "48M")
	r.waitWritten(r.written(), 6<<20)
	require.True(t, l.running(), "fio finished before the restart")

	for i, b := range []string{next, bin} {
		old := r.status()
		began := time.Now()
		out := sh(t, b, "restart", "rr")
		t.Logf("uraid restart to %s took %v", filepath.Base(b), time.Since(began).Round(time.Millisecond))
		assert.Equal(t, r.dev, strings.TrimSpace(out), "the device keeps its number")
		st := r.status()
		assert.NotEqual(t, old.PID, st.PID, "a new daemon serves")
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", st.PID))
		require.NoError(t, err)
		assert.Equal(t, b, exe, "the new daemon runs the binary restart was run from")
		assert.Equal(t, strings.TrimSpace(strings.TrimPrefix(sh(t, b, "version"), "uraid")), st.Version)
		assert.False(t, st.Unclean, "a drained hand-over leaves the copies in step")
		require.NotNil(t, st.Regions)
		assert.Zero(t, st.Regions.NeedResync, "no region needs a resync after a clean hand-over")
		assert.Nil(t, st.Sync.Last, "the successor ran no resync")
		assert.Equal(t, i+1, st.Recovery.Count)
		assert.Contains(t, st.Recovery.LastExit, "handed over")
		assert.False(t, processAlive(old.PID), "the old daemon has exited")
	}
	l.finish()
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-fn", r.dev)
	uraid(t, "stop", "rr")
}

// TestE2ERecoverKilledDuringRecovery kills the recovering daemon itself, at each point a test hook
// can stop it (members open; queues fetching, device not yet live), and recovers again: the load
// carries on and verifies as after a single kill.
func TestE2ERecoverKilledDuringRecovery(t *testing.T) {
	bin := uraidBin(t)
	r := newRecoveryArray(t, "rc")
	l := startLoad(t, r.mnt, "32M")
	r.waitWritten(r.written(), 6<<20)
	require.True(t, l.running(), "fio finished before the daemon could be killed mid-run")
	r.kill(r.status().PID)

	for _, point := range []string{"recover-members", "recover-fetching"} {
		_ = os.Remove(daemon.PausedPath("rc"))
		cmd := exec.Command(bin, "recover", "rc")
		cmd.Env = append(os.Environ(), "URAID_TEST_PAUSE="+point)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		var pid int
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(daemon.PausedPath("rc"))
			var got string
			return err == nil && func() bool { _, err := fmt.Sscan(string(b), &got, &pid); return err == nil }() && got == point
		}, slow*time.Minute, 5*time.Millisecond, "the recovering daemon did not reach %s", point)
		r.kill(pid)
		err := cmd.Wait()
		assert.Error(t, err, "recover reports the death of its daemon: %s", out.String())
		assert.Contains(t, out.String(), "exited before it was ready")
		t.Logf("killed the recovering daemon %d at %s", pid, point)
	}
	out := uraid(t, "recover", "rc")
	assert.Equal(t, r.dev, strings.TrimSpace(out))
	l.finish()
	st := r.status()
	assert.True(t, st.Unclean)
	r.waitResynced()
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-fn", r.dev)
	uraid(t, "stop", "rc")
}

// TestE2EStopRefusedWhileInUse: stop refuses, with exit 1, a message naming what holds the device
// and no change, while the array is mounted or a process has the device open, and also for the
// device a dead daemon left under a mount; SIGTERM to a foreground daemon refuses the same way.
// Once nothing holds it, the stop goes through.
func TestE2EStopRefusedWhileInUse(t *testing.T) {
	bin := uraidBin(t)
	members, _ := memberSet(t, "file", 2, 64<<20)
	dev := strings.TrimSpace(uraid(t, "create", "rs", "--level", "1", members[0], members[1]))
	mnt := t.TempDir()
	t.Cleanup(func() {
		cleanupUnmount(mnt)
		cleanupRun(bin, "stop", "rs")
	})
	sh(t, "mkfs.ext4", "-q", "-F", dev)
	sh(t, "mount", dev, mnt)
	f := filepath.Join(mnt, "kept")
	sum := writeRandomFile(t, f, 1<<20)

	out, err := uraidCode(t, "stop", "rs")
	assert.Equal(t, 1, exitStatus(err), out)
	assert.Contains(t, out, "refusing to stop")
	assert.Contains(t, out, "mounted at "+mnt)
	assert.Equal(t, raidClean(t, members[0]), false, "a refused stop marks nothing clean")
	writeRandomFile(t, filepath.Join(mnt, "after"), 64<<10) // the array serves on
	sh(t, "sync")

	// A dead daemon's device under a mount is no orphan to throw away: stop says recover.
	st := arrayDetail(t, "rs")
	require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !processAlive(st.PID) }, slow*10*time.Second, 5*time.Millisecond)
	out, err = uraidCode(t, "stop", "rs")
	assert.Equal(t, 1, exitStatus(err), out)
	assert.Contains(t, out, "mounted at "+mnt)
	assert.Contains(t, out, "uraid recover rs")
	uraid(t, "recover", "rs")
	assert.Equal(t, sum, fileSum(t, f))

	sh(t, "umount", mnt)
	held, err := os.Open(dev)
	require.NoError(t, err)
	out, err = uraidCode(t, "stop", "rs")
	assert.Equal(t, 1, exitStatus(err), out)
	assert.Contains(t, out, fmt.Sprintf("(pid %d)", os.Getpid()), "the message names the process that holds the device")
	require.NoError(t, held.Close())
	uraid(t, "stop", "rs")
	_, err = os.Stat(dev)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.True(t, raidClean(t, members[0]))

	// The same from a foreground daemon's SIGTERM, as systemd stops it.
	cmd := exec.Command(bin, "assemble", "rs", "--foreground", members[0], members[1])
	var stderr lockedBuffer
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	line := make([]byte, 64)
	n, err := stdout.Read(line)
	require.NoError(t, err)
	dev = strings.TrimSpace(string(line[:n]))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	sh(t, "mount", dev, mnt)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "refusing to stop") }, slow*10*time.Second,
		5*time.Millisecond, "the daemon did not refuse SIGTERM: %s", stderr.String())
	assert.Contains(t, stderr.String(), "mounted at "+mnt)
	select {
	case err := <-exited:
		t.Fatalf("the daemon exited on SIGTERM with its device mounted: %v", err)
	default:
	}
	assert.Equal(t, sum, fileSum(t, f), "the filesystem carries on")
	sh(t, "umount", mnt)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-exited, "once unmounted, SIGTERM stops the array: %s", stderr.String())
	assert.True(t, raidClean(t, members[0]))
}

func raidClean(t *testing.T, member string) bool {
	t.Helper()
	return strings.Contains(uraid(t, "examine", "--json", member), `"state": "clean"`)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestE2EOrphanWithoutRecord: a device whose daemon and record are both gone is listed as an
// orphan and removed by its path.
func TestE2EOrphanWithoutRecord(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "file", 2, 32<<20)
	dev := strings.TrimSpace(uraid(t, "create", "ro", "--level", "1", members[0], members[1]))
	st := arrayDetail(t, "ro")
	require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !processAlive(st.PID) }, slow*10*time.Second, 5*time.Millisecond)
	require.NoError(t, os.Remove(daemon.RecordPath("ro")))
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", dev) })

	out := uraid(t, "list")
	assert.Regexp(t, `-\s+`+dev+`\s+-\s+\S+ orphan \(no daemon, no record\): uraid stop `+dev, out)
	out, err := uraidCode(t, "status", "--test")
	assert.Equal(t, 2, exitStatus(err), out) // --test: an orphan is unusable
	assert.Contains(t, out, dev+" : ")
	out, err = uraidCode(t, "stop", dev)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool {
		_, err := os.Stat(dev)
		return errors.Is(err, os.ErrNotExist)
	}, slow*5*time.Second, 5*time.Millisecond)
	assert.NotContains(t, uraid(t, "list"), dev)
}

// delayed is a set of members that can be made slow: dm-delay over loop devices.
type delayed struct {
	t            *testing.T
	paths, names []string
	loops        []string
	sectors      int64
}

// delayedMembers makes n members of size bytes, without delay until setDelay.
func delayedMembers(t *testing.T, n int, size int64) *delayed {
	t.Helper()
	if k := os.Getenv("URAID_VM_KERNEL"); k != "" {
		sh(t, "modprobe", "-d", k, "dm_delay")
	}
	d := &delayed{t: t, sectors: size >> 9}
	d.loops, _ = memberSet(t, "loop", n, size)
	for i := range d.loops {
		name := fmt.Sprintf("uraid-delay-%d-%d", os.Getpid(), i)
		dmsetup(t, "create", name, "--table", d.table(i, 0))
		t.Cleanup(func() { dmRemove(t, name) })
		// The guest has no udev to make /dev/mapper links; devtmpfs has the dm-N node.
		blk := strings.TrimSpace(dmsetup(t, "info", "-c", "--noheadings", "-o", "blkdevname", name))
		d.paths, d.names = append(d.paths, "/dev/"+blk), append(d.names, name)
	}
	return d
}

func (d *delayed) table(i int, delay time.Duration) string {
	return fmt.Sprintf("0 %d delay %s 0 0 %s 0 %d", d.sectors, d.loops[i], d.loops[i], delay.Milliseconds())
}

// setDelay makes every write to the members take delay (reads stay fast). A write the array has
// sent to one is then surely held by its daemon for that long. The switch waits for the writes
// already delayed.
func (d *delayed) setDelay(delay time.Duration) {
	d.t.Helper()
	for i, name := range d.names {
		dmsetup(d.t, "suspend", name)
		dmsetup(d.t, "reload", name, "--table", d.table(i, delay))
		dmsetup(d.t, "resume", name)
	}
}

// TestE2EInFlightWriteAcrossKill kills a daemon while it holds a write (its members delay
// writes, so the write is surely the daemon's when it dies). With reissue the write completes,
// once the device is recovered, and reads back; without it (the test hook that creates the
// device as a kernel without UBLK_F_USER_RECOVERY_REISSUE would) the write fails with EIO at
// once, as documented, and restart is refused. Either way, a write issued while no daemon serves
// waits, and completes once one does.
func TestE2EInFlightWriteAcrossKill(t *testing.T) {
	uraidBin(t)
	for _, reissue := range []bool{true, false} {
		t.Run(fmt.Sprint("reissue=", reissue), func(t *testing.T) {
			var env []string
			if !reissue {
				env = []string{"URAID_TEST_NO_REISSUE=1"}
			}
			dm := delayedMembers(t, 2, 32<<20)
			members := dm.paths
			name := fmt.Sprintf("rf%t", reissue)
			out, err := uraidEnv(t, env, "create", name, "--level", "1", members[0], members[1])
			require.NoError(t, err, out)
			dev := strings.TrimSpace(out)
			t.Cleanup(func() {
				cleanupRun(uraidBin(t), "recover", name)
				cleanupRun(uraidBin(t), "stop", name)
			})
			st := arrayDetail(t, name)
			info, err := ublk.Info(uint32FromDev(t, dev))
			require.NoError(t, err)
			assert.Equal(t, reissue, info.Flags.Reissue())
			assert.Equal(t, reissue, daemonDetail(t, name).Recovery.Reissue)
			if !reissue {
				out, err := uraidCode(t, "restart", name)
				assert.Equal(t, 1, exitStatus(err), out)
				assert.Contains(t, out, "UBLK_F_USER_RECOVERY_REISSUE")
				assert.Equal(t, st.PID, arrayDetail(t, name).PID, "a refused restart leaves the daemon serving")
			}

			f, err := os.OpenFile(dev, os.O_RDWR|unix.O_DIRECT, 0)
			require.NoError(t, err)
			defer f.Close()
			first, second := alignedBuf(4096), alignedBuf(4096)
			fillBlock(first, 1, 1)
			fillBlock(second, 2, 1)
			done := make(chan error, 2)
			// Long enough that the kill surely lands while the write waits, on a busy machine too.
			dm.setDelay(3 * time.Second)
			go func() { _, err := f.WriteAt(first, 1<<20); done <- err }()
			require.Eventually(t, func() bool {
				return delayedWrites(dm.names) > 0
			}, slow*10*time.Second, time.Millisecond, "the write never reached a member")
			require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
			require.Eventually(t, func() bool {
				info, err := ublk.Info(uint32FromDev(t, dev))
				return err == nil && info.State == "quiesced"
			}, slow*10*time.Second, 5*time.Millisecond)
			if !reissue {
				err := <-done
				require.Error(t, err, "without reissue, the write the dead daemon held fails")
				assert.ErrorIs(t, err, syscall.EIO)
			}
			dm.setDelay(0)
			go func() { _, err := f.WriteAt(second, 2<<20); done <- err }()

			out = uraid(t, "recover", name)
			assert.Equal(t, dev, strings.TrimSpace(out))
			n := 2
			if !reissue {
				n = 1
			}
			for range n {
				select {
				case err := <-done:
					require.NoError(t, err, "a write across the recovery failed")
				case <-time.After(slow * time.Minute):
					t.Fatal("a write across the recovery never completed")
				}
			}
			got := alignedBuf(4096)
			_, err = f.ReadAt(got, 2<<20)
			require.NoError(t, err)
			assert.Equal(t, second, got, "the write issued while no daemon served")
			if reissue {
				_, err = f.ReadAt(got, 1<<20)
				require.NoError(t, err)
				assert.Equal(t, first, got, "the write the dead daemon held, reissued")
			}
			require.NoError(t, f.Close())
			uraid(t, "stop", name)
		})
	}
}

func uint32FromDev(t *testing.T, dev string) uint32 {
	t.Helper()
	var id uint32
	_, err := fmt.Sscanf(dev, "/dev/ublkb%d", &id)
	require.NoError(t, err)
	return id
}

// supervisor runs a command again whenever it exits with a failure, as systemd's
// Restart=on-failure does, with NOTIFY_SOCKET set as for a Type=notify unit.
type supervisor struct {
	t      *testing.T
	mu     sync.Mutex
	exits  []int
	log    lockedBuffer
	notify *net.UnixConn
	msgs   chan string
	done   chan struct{}
}

func startSupervisor(t *testing.T, env []string, args ...string) *supervisor {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	s := &supervisor{t: t, notify: conn, msgs: make(chan string, 64), done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.msgs <- string(buf[:n])
		}
	}()
	go func() {
		defer close(s.done)
		for {
			cmd := exec.Command(uraidBin(t), args...)
			cmd.Env = append(append(os.Environ(), env...), "NOTIFY_SOCKET="+sock)
			cmd.Stdout, cmd.Stderr = &s.log, &s.log
			err := cmd.Run()
			code := 0
			if err != nil {
				code = exitStatus(err)
			}
			s.mu.Lock()
			s.exits = append(s.exits, code)
			s.mu.Unlock()
			if code == 0 || code == -1 || len(s.exitCodes()) > 8 {
				return
			}
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		if s.t.Failed() {
			s.t.Logf("supervised daemon's output:\n%s", s.log.String())
		}
	})
	return s
}

func (s *supervisor) exitCodes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.exits...)
}

// ready waits for the next READY=1 the supervised daemon sends. A recovery that has not made the
// daemon ready within a minute is stuck (it takes seconds), and its successors give up after
// three: the state of the devices and the kernel's stacks are logged then, while they still show
// what holds it, without failing a merely slow machine.
func (s *supervisor) ready() {
	s.t.Helper()
	early := time.After(time.Minute)
	for {
		select {
		case m := <-s.msgs:
			if strings.Contains(m, "READY=1") {
				return
			}
		case <-early:
			s.t.Logf("no READY=1 from the supervised daemon after a minute; ublk devices:\n%s\n%s", ublkDevices(), kernelStacks())
		case <-time.After(slow * time.Minute):
			s.t.Fatalf("no READY=1 from the supervised daemon; it said:\n%s\nublk devices:\n%s", s.log.String(), ublkDevices())
		}
	}
}

// TestE2ESupervisedFailureAndRestart runs an array as the systemd unit does (assemble
// --foreground --recover, restarted on failure). A queue that fails makes the daemon fail the
// array and exit 1; the supervisor's restart recovers the device, and status says why the last
// daemon ended. uraid restart makes the daemon exit 75 and the supervisor starts the new one. The
// mounted filesystem and its load carry on through both.
func TestE2ESupervisedFailureAndRestart(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "loop", 2, 96<<20)
	uraid(t, append([]string{"create", "sv", "--level", "1"}, members...)...)
	uraid(t, "stop", "sv")
	sv := startSupervisor(t, []string{"URAID_TEST_HOOKS=1"},
		append([]string{"assemble", "sv", "--foreground", "--recover", "--discard", "async"}, members...)...)
	sv.ready()
	mnt := t.TempDir()
	dev := arrayDetail(t, "sv").Device
	t.Cleanup(func() {
		cleanupUnmount(mnt)
		cleanupRun(uraidBin(t), "stop", "sv")
	})
	sh(t, "mkfs.ext4", "-q", "-F", dev)
	sh(t, "mount", dev, mnt)
	l := startLoad(t, mnt, "24M")
	r := &recoveryArray{t: t, name: "sv", dev: dev}
	r.waitWritten(r.written(), 4<<20)

	first := r.status()
	require.NoError(t, daemon.NewClient("sv").FailQueue(context.Background()))
	sv.ready()
	st := r.status()
	assert.NotEqual(t, first.PID, st.PID)
	assert.Equal(t, "async", st.DiscardMode, "the recovered daemon serves with the recorded options")
	assert.Equal(t, 1, st.Recovery.Count)
	assert.Contains(t, st.Recovery.LastExit, "failure injected")
	assert.True(t, st.Unclean)
	m, err := daemon.NewClient("sv").Metrics(context.Background())
	require.NoError(t, err)
	assert.Contains(t, string(m), `uraid_array_recoveries_total{array="sv"} 1`)
	assert.Contains(t, string(m), `uraid_array_last_exit_info{array="sv",reason="daemon`)
	assert.Equal(t, []int{1}, sv.exitCodes(), "a failed device ends the daemon with a failure")

	out := uraid(t, "restart", "sv")
	assert.Equal(t, dev, strings.TrimSpace(out))
	sv.ready()
	assert.Equal(t, []int{1, 75}, sv.exitCodes(), "a supervised hand-over exits 75 for the supervisor to restart")
	assert.Equal(t, 2, r.status().Recovery.Count)
	l.finish()
	sh(t, "umount", mnt)
	sh(t, "e2fsck", "-fn", dev)
	uraid(t, "stop", "sv")
	select {
	case <-sv.done:
	case <-time.After(slow * time.Minute):
		t.Fatal("the supervised daemon did not exit after stop")
	}
	assert.Equal(t, []int{1, 75, 0}, sv.exitCodes())
}

func must2(b []byte, _ error) []byte { return b }

// stallDump arms a watchdog for a step that should take well under after: if the step has not
// called the returned stop by then, the test logs every process with its state and kernel wait
// channel, the kernel stacks of every process and of kernel threads in uninterruptible sleep, and
// the ends of the daemons' logs, so that a hang in the guest says where it is instead of only
// running into the suite's time limit. It changes nothing: on a merely slow machine the test
// goes on.
func stallDump(t *testing.T, what string, after time.Duration) (stop func()) {
	var mu sync.Mutex
	done := false
	timer := time.AfterFunc(after, func() {
		ps, _ := exec.Command("ps", "-eo", "pid,stat,wchan:32,args").CombinedOutput()
		var b strings.Builder
		fmt.Fprintf(&b, "%s: no progress after %v\n%s", what, after, ps)
		for _, line := range strings.Split(string(ps), "\n") {
			f := strings.Fields(line)
			if len(f) < 4 {
				continue
			}
			args := strings.Join(f[3:], " ")
			if !strings.HasPrefix(f[1], "D") && strings.HasPrefix(args, "[") { // kernel threads, unless stuck
				continue
			}
			if stack, err := os.ReadFile("/proc/" + f[0] + "/stack"); err == nil {
				fmt.Fprintf(&b, "--- %s %s:\n%s", f[0], args, stack)
			}
		}
		logs, _ := filepath.Glob(filepath.Join(filepath.Dir(daemon.LogPath("x")), "*.log"))
		for _, l := range logs {
			if data, err := os.ReadFile(l); err == nil {
				if len(data) > 64<<10 {
					data = data[len(data)-64<<10:]
				}
				fmt.Fprintf(&b, "--- %s (its end):\n%s\n", l, data)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !done { // a test that has ended must not log
			t.Log(b.String())
		}
	})
	return func() {
		timer.Stop()
		mu.Lock()
		done = true
		mu.Unlock()
	}
}

// ublkDevices describes every ublk device for a failure's log: its state, its server and whether
// that server still runs, and every process holding its character device open. A device that
// stays live after its server died has not been released: the holders say by whom.
func ublkDevices() string {
	ids, err := ublk.List()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, id := range ids {
		info, err := ublk.Info(id)
		if err != nil {
			fmt.Fprintf(&b, "  ublk %d: %v\n", id, err)
			continue
		}
		_, serr := os.Stat(fmt.Sprintf("/proc/%d", info.PID))
		fmt.Fprintf(&b, "  ublk %d: %s, server pid %d (running: %v), held by: %s\n", id, info.State, info.PID, serr == nil,
			holders(fmt.Sprintf("/dev/ublkc%d", id)))
	}
	// The kernel's side: a hung task, an io_uring that cannot exit, the driver's own messages.
	cmd, done := boundedCommand("dmesg")
	out, err := cmd.Output()
	if err = done(err); err != nil {
		fmt.Fprintf(&b, "  dmesg: %v\n", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fmt.Fprintf(&b, "the kernel's last messages:\n  %s\n", strings.Join(lines[max(len(lines)-40, 0):], "\n  "))
	return b.String()
}

// kernelStacks is every process with its state and wait channel, and the kernel stacks of the
// tasks that wait in the block layer, the ublk driver or io_uring (a kernel worker quiescing a
// device, an io_uring that cannot exit) or in uninterruptible sleep; then the block layer's view
// of each ublk disk: its requests in flight, per hardware queue, and those waiting to be requeued.
func kernelStacks() string {
	var b strings.Builder
	ps, _ := exec.Command("ps", "-eLo", "pid,tid,stat,wchan:32,comm").CombinedOutput()
	b.Write(ps)
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	for _, task := range tasks {
		stack, err := os.ReadFile(task + "/stack")
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(task + "/stat")
		// The state follows the parenthesized command, which may hold spaces.
		st := string(stat)
		if i := strings.LastIndexByte(st, ')'); i >= 0 && i+3 <= len(st) {
			st = st[i+2 : i+3]
		}
		s := string(stack)
		if st != "D" && !strings.Contains(s, "ublk") && !strings.Contains(s, "io_uring") && !strings.Contains(s, "io_ring") &&
			!strings.Contains(s, "blk_mq") {
			continue
		}
		comm, _ := os.ReadFile(task + "/comm")
		fmt.Fprintf(&b, "--- %s (%s) %s:\n%s", task, strings.TrimSpace(string(comm)), st, s)
	}
	disks, _ := filepath.Glob("/sys/kernel/debug/block/ublkb*")
	for _, d := range disks {
		inflight, _ := os.ReadFile("/sys/block/" + filepath.Base(d) + "/inflight")
		fmt.Fprintf(&b, "--- %s: inflight (reads writes) %s", filepath.Base(d), inflight)
		files, _ := filepath.Glob(d + "/*")
		more, _ := filepath.Glob(d + "/hctx*/*")
		for _, f := range append(files, more...) {
			switch filepath.Base(f) {
			case "state", "requeue_list", "busy", "dispatch", "dispatched", "queued", "run", "tags":
			default:
				continue
			}
			if data, err := os.ReadFile(f); err == nil && len(bytes.TrimSpace(data)) > 0 {
				fmt.Fprintf(&b, "%s:\n%s\n", strings.TrimPrefix(f, d+"/"), bytes.TrimSpace(data))
			}
		}
	}
	return b.String()
}

// holders lists the processes with path open, as "pid (comm)".
func holders(path string) string {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var out []string
	seen := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == path {
			pid := strings.Split(fd, "/")[2]
			if !seen[pid] {
				seen[pid] = true
				comm, _ := os.ReadFile("/proc/" + pid + "/comm")
				out = append(out, fmt.Sprintf("%s (%s)", pid, strings.TrimSpace(string(comm))))
			}
		}
	}
	if len(out) == 0 {
		return "nobody"
	}
	return strings.Join(out, ", ")
}
