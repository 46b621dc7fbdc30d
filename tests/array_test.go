package tests

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/testutil"
)

// memberSize keeps each member small: the guest's /tmp is RAM.
const memberSize = 192 << 20

// uraidBin is the uraid binary under test, built on the host by make test-vm.
func uraidBin(t *testing.T) string {
	t.Helper()
	needGuest(t)
	return builtBin(t, "URAID_BIN", "uraid")
}

// builtBin is the binary that make test-vm builds as what and names in the variable env; without
// it the test skips, or fails under URAID_E2E=1.
func builtBin(t *testing.T, env, what string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		if mustRunE2E() {
			t.Fatalf("%s is not set: make test-vm builds %s and sets it", env, what)
		}
		t.Skipf("%s is not set: run make test-vm", env)
	}
	return bin
}

// uraid runs the CLI and returns its stdout; a non-zero exit fails the test.
func uraid(t *testing.T, args ...string) string {
	t.Helper()
	out, err := uraidCode(t, args...)
	require.NoError(t, err, "uraid %s: %s", strings.Join(args, " "), out)
	return out
}

// commandTimeout bounds one command a test runs, far above what any takes (stop drains TRIMs
// for up to five minutes): a hung command fails its test instead of the whole suite's time limit.
const commandTimeout = 10 * time.Minute

// boundedCommand is exec.Command killed after commandTimeout; done, called once the command
// ended, releases its timer and says so in the error when the command was killed for it. A
// process in uninterruptible sleep (I/O on a device whose daemon was killed and not yet
// recovered) outlives its kill, and so can a child holding its output open: WaitDelay lets Wait
// return anyway, so that the test fails, its cleanups recover or stop the device, and the stuck
// process then ends.
func boundedCommand(name string, args ...string) (cmd *exec.Cmd, done func(error) error) {
	return boundedWithin(commandTimeout, name, args...)
}

// errUnfinished marks the error of a bounded command killed for its bound.
var errUnfinished = errors.New("did not finish")

// boundedWithin is boundedCommand with its own bound.
func boundedWithin(limit time.Duration, name string, args ...string) (cmd *exec.Cmd, done func(error) error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd = exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd, func(err error) error {
		defer cancel()
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s %s %w in %v: %w", name, strings.Join(args, " "), errUnfinished, limit, err)
		}
		return err
	}
}

// cleanupTimeout bounds a cleanup's command: above a stop's drain of its TRIMs (up to five
// minutes), far below the suite's time limit.
const cleanupTimeout = 6 * time.Minute

// cleanupRun runs a cleanup's command (an umount, a stop, a recover), bounded as boundedCommand's
// are: a cleanup of a test that failed may meet a device nobody serves, where an umount or a stop
// never returns, and must fail that test alone instead of the suite. Its error is the cleanup's
// to ignore.
func cleanupRun(name string, args ...string) { _ = cleanupWithin(cleanupTimeout, name, args...) }

// cleanupWithin runs a cleanup's command within limit, says so on stderr when it did not finish,
// and returns its error.
func cleanupWithin(limit time.Duration, name string, args ...string) error {
	cmd, done := boundedWithin(limit, name, args...)
	err := done(cmd.Run())
	if errors.Is(err, errUnfinished) {
		fmt.Fprintf(os.Stderr, "cleanup: %v\n", err)
	}
	return err
}

// cleanupUnmount unmounts path for a cleanup. An umount of a filesystem on a device nobody serves
// never returns (it waits for its I/O): after a minute it is left to itself and the mount is
// detached (umount -l), so that the test's TempDir cleanup, which removes the mount point's
// contents, finds it empty instead of waiting on the same I/O for good.
func cleanupUnmount(path string) {
	if err := cleanupWithin(time.Minute, "umount", path); errors.Is(err, errUnfinished) {
		cleanupRun("umount", "-l", path)
	}
}

// testCommand is a boundedCommand for a test that starts it and waits for it itself; the
// test's end releases its timer, and kills it if it still runs.
func testCommand(t *testing.T, name string, args ...string) *exec.Cmd {
	cmd, done := boundedCommand(name, args...)
	t.Cleanup(func() { _ = done(nil) })
	return cmd
}

func uraidCode(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd, done := boundedCommand(uraidBin(t), args...) // cleanups call it too
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return string(out) + stderr.String(), done(err)
}

// memberSet makes n members of one kind: sparse files, or loop devices over sparse files. It
// returns the member paths and the files that hold their data.
func memberSet(t *testing.T, kind string, n int, size int64) (members, backing []string) {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		f := testutil.SparseFile(t, dir, fmt.Sprintf("m%d", i), size)
		backing = append(backing, f)
		if kind == "file" {
			members = append(members, f)
			continue
		}
		dev := strings.TrimSpace(sh(t, "losetup", "--find", "--show", f))
		t.Cleanup(func() { cleanupRun("losetup", "-d", dev) })
		members = append(members, dev)
	}
	return members, backing
}

func arrayDetail(t *testing.T, name string) array.Status {
	t.Helper()
	var st array.Status
	require.NoError(t, json.Unmarshal([]byte(uraid(t, "detail", "--json", name)), &st))
	return st
}

func writeRandomFile(t *testing.T, path string, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestE2EArrayLifecycle runs every level over sparse files and over loop devices: create, ext4
// mounted -o discard, files with known checksums, half deleted (discards reach the members),
// fstrim, a clean e2fsck, stop, assemble, and every remaining file intact.
func TestE2EArrayLifecycle(t *testing.T) {
	uraidBin(t)
	for _, kind := range []string{"file", "loop"} {
		for _, level := range []string{"linear", "0", "1", "10"} {
			t.Run(kind+"-raid"+level, func(t *testing.T) { arrayLifecycle(t, kind, level, "sync") })
		}
	}
	t.Run("loop-raid10-async", func(t *testing.T) { arrayLifecycle(t, "loop", "10", "async") })
}

func arrayLifecycle(t *testing.T, kind, level, mode string) {
	name := "e2e-" + kind + "-" + level + "-" + mode
	members, backing := memberSet(t, kind, 4, memberSize)
	args := []string{"create", name, "--level", level, "--discard", mode}
	if level == "0" || level == "10" {
		args = append(args, "--chunk", "64K")
	}
	dev := strings.TrimSpace(uraid(t, append(args, members...)...))
	require.True(t, strings.HasPrefix(dev, "/dev/ublkb"), "create printed %q", dev)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cleanupRun("umount", "-l", dev)
			cleanupRun(uraidBin(t), "stop", name)
		}
	})

	sh(t, "mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev)
	mnt := t.TempDir()
	sh(t, "mount", "-o", "discard", dev, mnt)
	sums := map[string]string{}
	for i := range 24 {
		f := filepath.Join(mnt, fmt.Sprintf("f%02d", i))
		sums[f] = writeRandomFile(t, f, 1<<20+i*4096)
	}
	sh(t, "sync")
	before := arrayDetail(t, name)
	allocBefore := testutil.Allocated(t, backing...)
	for i := 0; i < 24; i += 2 {
		f := filepath.Join(mnt, fmt.Sprintf("f%02d", i))
		require.NoError(t, os.Remove(f))
		delete(sums, f)
	}
	sh(t, "sync")
	// ext4 sends -o discard TRIMs from a worker after the journal commit.
	var after array.Status
	require.Eventually(t, func() bool {
		after = arrayDetail(t, name)
		return after.Discard.Requests > before.Discard.Requests
	}, slow*10*time.Second, 200*time.Millisecond, "deleting files sent no discard to the array")
	assert.Equal(t, mode, after.DiscardMode)
	var trimmed int64
	for _, m := range after.Members {
		trimmed += m.Discard.IssuedBytes
	}
	assert.Positive(t, trimmed, "no member was trimmed")
	uraid(t, "detail", name) // the text view works too
	require.Eventually(t, func() bool { return testutil.Allocated(t, backing...) < allocBefore }, slow*10*time.Second,
		200*time.Millisecond, "member space did not drop after deletes")

	out := sh(t, "fstrim", "-v", mnt)
	assert.Contains(t, out, "trimmed")
	sh(t, "umount", mnt)
	sh(t, "e2fsck", "-fn", dev)
	uraid(t, "stop", name)
	stopped = true
	_, err := os.Stat(dev)
	assert.True(t, os.IsNotExist(err), "%s still exists after stop", dev)
	out = uraid(t, "examine", "--json", members[0])
	assert.Contains(t, out, `"state": "clean"`)

	dev = strings.TrimSpace(uraid(t, append([]string{"assemble", name}, members...)...))
	stopped = false
	sh(t, "mount", dev, mnt)
	for f, want := range sums {
		assert.Equal(t, want, fileSum(t, f), f)
	}
	sh(t, "umount", mnt)
	sh(t, "e2fsck", "-fn", dev)
	uraid(t, "stop", name)
	stopped = true
}

// TestE2EArrayRefusals checks the refusals only a kernel can show — a mounted member, a member
// of a running array — and that each leaves every member byte for byte unchanged.
func TestE2EArrayRefusals(t *testing.T) {
	uraidBin(t)
	// Small members: every check below hashes them whole.
	members, backing := memberSet(t, "loop", 3, 16<<20)
	// members[0] carries a mounted filesystem.
	sh(t, "mkfs.ext4", "-q", "-F", members[0])
	mnt := t.TempDir()
	sh(t, "mount", members[0], mnt)
	t.Cleanup(func() { cleanupUnmount(mnt) })

	// members[0] is left out: its mounted filesystem writes to it on its own.
	snap := func() []string {
		var s []string
		for _, f := range backing[1:] {
			s = append(s, fileSum(t, f))
		}
		return s
	}
	before := snap()
	out, err := uraidCode(t, "create", "bad", "--level", "1", "--force", members[0], members[1])
	require.Error(t, err)
	assert.Contains(t, out, "mounted at "+mnt)
	assert.Equal(t, before, snap())

	dev := strings.TrimSpace(uraid(t, "create", "busy", "--level", "1", members[1], members[2]))
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", "busy") })
	require.True(t, strings.HasPrefix(dev, "/dev/ublkb"))
	before = snap()
	out, err = uraidCode(t, "create", "bad2", "--level", "0", "--force", members[2], members[1])
	require.Error(t, err)
	assert.Contains(t, out, "in use")
	assert.Equal(t, before, snap(), "a refused create changed a member of a running array")

	// A second array of a running array's name is refused before anything is written.
	fresh, freshBacking := memberSet(t, "file", 2, 16<<20)
	freshBefore := []string{fileSum(t, freshBacking[0]), fileSum(t, freshBacking[1])}
	out, err = uraidCode(t, "create", "busy", "--level", "1", fresh[0], fresh[1])
	require.Error(t, err)
	assert.Contains(t, out, "already running")
	assert.Equal(t, freshBefore, []string{fileSum(t, freshBacking[0]), fileSum(t, freshBacking[1])})
	uraid(t, "stop", "busy")
}

// TestE2EArrayKilledDaemon kills an array's daemon with SIGKILL: stop removes the device it left,
// and the members assemble again with the data written before the kill.
func TestE2EArrayKilledDaemon(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "file", 2, 64<<20)
	dev := strings.TrimSpace(uraid(t, "create", "killed", "--level", "1", members[0], members[1]))
	data := writeRandomFileTo(t, dev, 1<<20)
	st := arrayDetail(t, "killed")
	require.Positive(t, st.PID)
	require.NoError(t, syscallKill(st.PID))
	require.Eventually(t, func() bool { return !processAlive(st.PID) }, slow*10*time.Second, 50*time.Millisecond,
		"the daemon outlived SIGKILL")

	out, err := uraidCode(t, "stop", "killed")
	require.NoError(t, err, out)
	assert.Contains(t, out, "had died")
	_, err = os.Stat(dev)
	assert.True(t, os.IsNotExist(err), "%s survived stop after the kill", dev)
	assert.Contains(t, uraid(t, "examine", members[0]), "dirty", "a killed array is not clean")

	dev = strings.TrimSpace(uraid(t, "assemble", "killed", members[0], members[1]))
	defer uraid(t, "stop", "killed")
	got := make([]byte, len(data))
	f, err := os.Open(dev)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, data, got, "data written before the kill")
}

// TestE2EArrayForegroundMetrics serves an array in the foreground as systemd would, reads its
// Prometheus metrics, and stops it with SIGTERM.
func TestE2EArrayForegroundMetrics(t *testing.T) {
	bin := uraidBin(t)
	members, _ := memberSet(t, "file", 2, 64<<20)
	cmd := exec.Command(bin, "create", "fg", "--level", "0", "--chunk", "64K", "--foreground", members[0], members[1])
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line := make([]byte, 64)
	n, err := stdout.Read(line)
	require.NoError(t, err)
	dev := strings.TrimSpace(string(line[:n]))
	require.True(t, strings.HasPrefix(dev, "/dev/ublkb"), "foreground create printed %q", dev)

	sh(t, "blkdiscard", "-o", "0", "-l", "1048576", dev)
	m, err := daemon.NewClient("fg").Metrics(t.Context())
	require.NoError(t, err)
	assert.Contains(t, string(m), `uraid_array_discard_requests_total{array="fg"} 1`)
	assert.Contains(t, string(m), `uraid_member_discard_issued_bytes_total{array="fg",member="0"`)
	assert.Contains(t, string(m), `uraid_array_state{array="fg",state="active"} 1`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a foreground array stopped by SIGTERM exits 0")
	_, err = os.Stat(dev)
	assert.True(t, os.IsNotExist(err))
	assert.Contains(t, uraid(t, "examine", members[1]), "clean")
}

func writeRandomFileTo(t *testing.T, dev string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt(b, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	return b
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; its parent (init in the guest) just has not reaped it yet.
	return !strings.Contains(string(b), ") Z ")
}

// TestE2EArrayDegradedExitCode runs a mirror with a member missing: status and detail say so and
// exit 0 (they reported), and with --test exit 1 (degraded, as mdadm --detail --test), for scripts.
func TestE2EArrayDegradedExitCode(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "file", 2, 64<<20)
	uraid(t, "create", "deg", "--level", "1", members[0], members[1])
	uraid(t, "stop", "deg")
	out, err := uraidCode(t, "assemble", "deg", members[0])
	require.Error(t, err, "a mirror without a member must not start without --degraded")
	assert.Contains(t, out, "--degraded")
	uraid(t, "assemble", "deg", "--degraded", members[0])
	defer uraid(t, "stop", "deg")
	for _, args := range [][]string{{"status"}, {"status", "deg"}, {"detail", "deg"}, {"detail", "--json", "deg"}} {
		out, err := uraidCode(t, args...)
		require.NoError(t, err, "uraid %v: %s", args, out)
		assert.Contains(t, out, "degraded")
		out, err = uraidCode(t, append(args, "--test")...)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "uraid %v --test: %s", args, out)
		assert.Equal(t, 1, ee.ExitCode(), "uraid %v --test", args)
		assert.Contains(t, out, "degraded")
	}
	assert.Contains(t, must(uraidCode(t, "status")), "[U_]")
}

func must(s string, _ error) string { return s }
