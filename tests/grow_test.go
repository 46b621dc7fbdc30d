package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestE2EGrow is an array outliving its first disks: a raid10 of four file members, ext4 mounted
// with -o discard and files on it, has every member replaced by one twice as large (each rebuild
// waited for), then uraid grow --size max. On Linux 6.16 and later the device grows while the
// filesystem stays mounted and resize2fs grows it online; on older kernels the array grows, grow
// says the device keeps its size until it is made again, and the documented path (unmount, stop,
// assemble) shows the new size, where resize2fs grows it. Every file verifies, the new space is
// trimmed in the region map and nothing is resynced, and e2fsck is clean.
func TestE2EGrow(t *testing.T) {
	needGuest(t)
	uraidBin(t)
	start := time.Now()
	const small, large = 48 << 20, 96 << 20
	paths, _ := memberSet(t, "file", 4, small)
	r := &rebuildArray{t: t, name: "grow10", mnt: t.TempDir()}
	out := uraid(t, append([]string{"create", r.name, "--level", "10", "--chunk", "64K"}, paths...)...)
	r.dev = strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(r.dev, "/dev/ublkb"), "create printed %q", out)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(daemon.LogPath(r.name)); err == nil {
				t.Logf("daemon log of %s:\n%s", r.name, b)
			}
		}
		cleanupUnmount(r.mnt)
		cleanupRun(uraidBin(t), "stop", r.name)
	})
	oldSize := deviceBytes(t, r.dev)
	sh(t, "mkfs.ext4", "-q", "-F", r.dev)
	sh(t, "mount", "-o", "discard", r.dev, r.mnt)
	sums := map[string]string{}
	for i := range 8 {
		p := filepath.Join(r.mnt, fmt.Sprintf("file%d", i))
		sums[p] = writeRandomFile(t, p, 2<<20)
	}

	// Every member is replaced by a larger one while the filesystem stays mounted.
	dir := t.TempDir()
	var bigger []string
	for i, old := range paths {
		p := testutil.SparseFile(t, dir, fmt.Sprintf("big%d", i), large)
		assert.Contains(t, uraid(t, "replace", r.name, old, p), "rebuilding")
		r.waitWhole(fmt.Sprintf("replace of member %d", i))
		bigger = append(bigger, p)
	}
	assert.Equal(t, oldSize, deviceBytes(t, r.dev), "replacing members alone does not grow the array")

	out = uraid(t, "grow", r.name, "--size", "max", "--json")
	var res daemon.GrowResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	t.Logf("grow: %+v", res)
	assert.Equal(t, oldSize, res.OldSize)
	// 95 MiB of data on each member, in whole 64 KiB chunks, two copies over four members.
	assert.Equal(t, int64(2*(large-(1<<20))), res.NewSize)
	st := r.status()
	require.NotNil(t, st.Regions)
	assert.Equal(t, 0, st.Regions.NeedResync, "the new space is never resynced")
	newRegions := int((res.NewSize - oldSize) / st.Regions.RegionBytes)
	assert.GreaterOrEqual(t, st.Regions.Trimmed, newRegions, "the new regions are trimmed in the map: %+v", st.Regions)
	assert.Equal(t, res.NewSize, st.SizeBytes)

	major, minor, _ := parseRelease(kernelRelease(t))
	if major > 6 || major == 6 && minor >= 16 {
		require.True(t, res.DeviceGrown, "Linux %d.%d resizes a live ublk device: %+v", major, minor, res)
		assert.Equal(t, res.NewSize, deviceBytes(t, r.dev), "the device grew without a stop")
		sh(t, "resize2fs", r.dev) // online, mounted
	} else {
		require.False(t, res.DeviceGrown, "%+v", res)
		assert.Contains(t, res.Note, "uraid stop "+r.name)
		assert.Equal(t, oldSize, deviceBytes(t, r.dev), "the device keeps its size until it is made again")
		// The documented path: unmount, stop, assemble, mount, resize2fs.
		sh(t, "umount", r.mnt)
		uraid(t, "stop", r.name)
		r.dev = strings.TrimSpace(uraid(t, append([]string{"assemble", r.name}, bigger...)...))
		assert.Equal(t, res.NewSize, deviceBytes(t, r.dev))
		sh(t, "mount", "-o", "discard", r.dev, r.mnt)
		sh(t, "resize2fs", r.dev)
	}
	fsBlocks := strings.TrimSpace(sh(t, "stat", "-f", "-c", "%b %S", r.mnt))
	var blocks, bs int64
	_, err := fmt.Sscan(fsBlocks, &blocks, &bs)
	require.NoError(t, err)
	assert.Greater(t, blocks*bs, oldSize, "the filesystem grew past the old array: %s", fsBlocks)
	// The new space takes data.
	sums[filepath.Join(r.mnt, "after")] = writeRandomFile(t, filepath.Join(r.mnt, "after"), 96<<20)
	dropCaches(t)
	for p, want := range sums {
		assert.Equal(t, want, fileSum(t, p), p)
	}
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-f", "-n", r.dev)
	assert.Equal(t, 0, r.status().Regions.NeedResync)
	t.Logf("grow life on Linux %s took %s", kernelRelease(t), time.Since(start).Round(time.Millisecond))
}

// TestE2EGrowKilledBeforeResize kills the daemon after a grow committed the larger size to the
// members and before it told the kernel (a test hook stops it there): uraid recover's successor
// finds the device smaller than its array and grows it (Linux 6.16 and later), or says the
// device keeps its size until it is made again. Either way the filesystem grows, every file
// verifies and e2fsck is clean.
func TestE2EGrowKilledBeforeResize(t *testing.T) {
	needGuest(t)
	bin := uraidBin(t)
	const small, large = 48 << 20, 96 << 20
	members, _ := memberSet(t, "file", 2, small)
	out, err := uraidEnv(t, []string{"URAID_TEST_PAUSE=grow-committed"}, append([]string{"create", "growkill", "--level", "1"}, members...)...)
	require.NoError(t, err, out)
	r := &recoveryArray{t: t, name: "growkill", dev: strings.TrimSpace(out), members: members, mnt: t.TempDir()}
	require.True(t, strings.HasPrefix(r.dev, "/dev/ublkb"), "create printed %q", out)
	t.Cleanup(r.cleanup)
	oldSize := deviceBytes(t, r.dev)
	sh(t, "mkfs.ext4", "-q", "-F", r.dev)
	sh(t, "mount", r.dev, r.mnt)
	sums := map[string]string{}
	for i := range 4 {
		p := filepath.Join(r.mnt, fmt.Sprintf("file%d", i))
		sums[p] = writeRandomFile(t, p, 2<<20)
	}
	sh(t, "sync")
	for _, m := range members {
		require.NoError(t, os.Truncate(m, large))
	}

	_ = os.Remove(daemon.PausedPath(r.name))
	grow := exec.Command(bin, "grow", r.name, "--size", "max")
	var growOut strings.Builder
	grow.Stdout, grow.Stderr = &growOut, &growOut
	require.NoError(t, grow.Start())
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(daemon.PausedPath(r.name))
		var point string
		_, serr := fmt.Sscan(string(b), &point, &pid)
		return err == nil && serr == nil && point == "grow-committed"
	}, slow*time.Minute, 5*time.Millisecond, "the daemon did not reach grow-committed")
	r.kill(pid)
	assert.Error(t, grow.Wait(), "grow reports the death of its daemon: %s", growOut.String())
	assert.Equal(t, oldSize, deviceBytes(t, r.dev), "the kernel was not told before the kill")

	assert.Equal(t, r.dev, strings.TrimSpace(uraid(t, "recover", r.name)))
	st := arrayDetail(t, r.name)
	assert.Equal(t, int64(large-(1<<20)), st.SizeBytes, "the successor serves the committed size")
	log, err := os.ReadFile(daemon.LogPath(r.name))
	require.NoError(t, err)
	major, minor, _ := parseRelease(kernelRelease(t))
	if major > 6 || major == 6 && minor >= 16 {
		assert.Equal(t, st.SizeBytes, deviceBytes(t, r.dev), "the successor grew the device")
		assert.Contains(t, string(log), "grew from", "the started event says the device grew")
		sh(t, "resize2fs", r.dev) // online, mounted
	} else {
		assert.Equal(t, oldSize, deviceBytes(t, r.dev), "the device keeps its size until it is made again")
		assert.Contains(t, string(log), "uraid stop "+r.name, "the started event says what to do")
		sh(t, "umount", r.mnt)
		uraid(t, "stop", r.name)
		r.dev = strings.TrimSpace(uraid(t, append([]string{"assemble", r.name}, members...)...))
		assert.Equal(t, st.SizeBytes, deviceBytes(t, r.dev))
		sh(t, "mount", r.dev, r.mnt)
		sh(t, "resize2fs", r.dev)
	}
	sums[filepath.Join(r.mnt, "after")] = writeRandomFile(t, filepath.Join(r.mnt, "after"), 40<<20)
	dropCaches(t)
	for p, want := range sums {
		assert.Equal(t, want, fileSum(t, p), p)
	}
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-f", "-n", r.dev)
}

// deviceBytes is a block device's size as the kernel has it now.
func deviceBytes(t *testing.T, dev string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(sh(t, "blockdev", "--getsize64", dev)), 10, 64)
	require.NoError(t, err)
	return n
}

// TestE2EGrowCopies gives a raid1 of two loop devices a third copy while fio writes and verifies
// through it: the daemon hands the device over with the change made (fio's requests wait in the
// kernel and go to the new daemon), fio sees no error, and the new copy, rebuilt from the live
// data, is then made the only one and verified block by block. Then the two old copies' slots are
// dropped (their members failed and removed), and one of them comes back as a second copy.
func TestE2EGrowCopies(t *testing.T) {
	needGuest(t)
	uraidBin(t)
	members, _ := memberSet(t, "loop", 3, 64<<20)
	name := "copies1"
	dev := strings.TrimSpace(uraid(t, "create", name, "--level", "1", members[0], members[1]))
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })
	pid := arrayDetail(t, name).PID
	fio := testCommand(t, "fio", fioVerifyJob(dev, "48M")...)
	out := &strings.Builder{}
	fio.Stdout, fio.Stderr = out, out
	require.NoError(t, fio.Start())

	var res daemon.CopiesResult
	got := uraid(t, "grow", name, "--copies", "3", "--add", members[2], "--json")
	require.NoError(t, json.Unmarshal([]byte(got), &res), got)
	assert.Equal(t, daemon.CopiesResult{Schema: daemon.Schema, Old: 2, New: 3, Spares: []string{members[2]}}, res)
	if b, err := os.ReadFile(daemon.LogPath(name)); assert.NoError(t, err) {
		assert.Contains(t, string(b), "event=array_copies_changed", "the change is an event, logged before the hand-over")
	}
	require.NoError(t, fio.Wait(), out.String())
	require.Contains(t, out.String(), "err= 0", out.String())
	uraid(t, "wait", name)
	st := arrayDetail(t, name)
	assert.NotEqual(t, pid, st.PID, "a new daemon serves the device")
	require.Len(t, st.Members, 3)
	for _, m := range st.Members {
		assert.Equal(t, "active", m.State, "%+v", m)
	}
	assert.Equal(t, members[2], st.Members[2].Path)

	// The new copy alone holds every block fio wrote.
	uraid(t, "fail", name, members[0])
	uraid(t, "fail", name, members[1])
	vout := sh(t, "fio", fioVerifyJob(dev, "48M", "--verify_only")...)
	assert.Contains(t, vout, "err= 0", vout)

	// Fewer copies: the failed members' slots go, the new copy moves to slot 0.
	uraid(t, "remove", name, members[0])
	uraid(t, "remove", name, members[1])
	assert.Contains(t, uraid(t, "grow", name, "--copies", "1"), "1 copies (was 3); slot 0 dropped; slot 1 dropped")
	st = arrayDetail(t, name)
	require.Len(t, st.Members, 1)
	assert.Equal(t, members[2], st.Members[0].Path)
	assert.Equal(t, "active", st.Members[0].State)

	// And more again, onto a device that was a member (--force: it carries the array's
	// superblock of its old slot).
	assert.Contains(t, uraid(t, "grow", name, "--copies", "2", "--add", members[0], "--force"), "fills a new slot")
	uraid(t, "wait", name)
	st = arrayDetail(t, name)
	require.Len(t, st.Members, 2)
	assert.Equal(t, "active", st.Members[1].State, "%+v", st.Members[1])
	uraid(t, "fail", name, members[2])
	vout = sh(t, "fio", fioVerifyJob(dev, "48M", "--verify_only")...)
	assert.Contains(t, vout, "err= 0", vout)
}

// TestE2EGrowAppend is a linear array that outgrows its one disk: ext4 mounted on a linear array
// of one loop device, files on it, grow --add a second. The daemon hands the device over with the
// member appended and its successor serves both; on Linux 6.16 and later it grows the device at
// once and resize2fs grows the mounted filesystem; on older kernels grow says the device keeps its
// size until it is made again, and the documented path (unmount, stop, assemble) shows the new
// size. Every file verifies, the new space takes data, and e2fsck is clean.
func TestE2EGrowAppend(t *testing.T) {
	needGuest(t)
	uraidBin(t)
	start := time.Now()
	members, _ := memberSet(t, "loop", 2, 96<<20)
	name, mnt := "append1", t.TempDir()
	dev := strings.TrimSpace(uraid(t, "create", name, "--level", "linear", members[0]))
	require.True(t, strings.HasPrefix(dev, "/dev/ublkb"), "create printed %q", dev)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(daemon.LogPath(name)); err == nil {
				t.Logf("daemon log of %s:\n%s", name, b)
			}
		}
		cleanupUnmount(mnt)
		cleanupRun(uraidBin(t), "stop", name)
	})
	pid := arrayDetail(t, name).PID
	oldSize := deviceBytes(t, dev)
	sh(t, "mkfs.ext4", "-q", "-F", dev)
	sh(t, "mount", "-o", "discard", dev, mnt)
	sums := map[string]string{}
	for i := range 8 {
		p := filepath.Join(mnt, fmt.Sprintf("file%d", i))
		sums[p] = writeRandomFile(t, p, 8<<20)
	}

	out := uraid(t, "grow", name, "--add", members[1], "--json")
	var res daemon.AppendResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	t.Logf("grow --add: %+v", res)
	assert.Equal(t, 1, res.OldMembers)
	assert.Equal(t, 2, res.NewMembers)
	assert.Equal(t, []string{members[1]}, res.Added)
	assert.Equal(t, oldSize, res.OldSize)
	assert.Equal(t, 2*oldSize, res.NewSize, "the array grows by the member's data size")
	assert.Equal(t, dev, res.Device)
	if b, err := os.ReadFile(daemon.LogPath(name)); assert.NoError(t, err) {
		assert.Contains(t, string(b), "event=array_members_appended", "the append is an event, logged before the hand-over")
	}
	st := arrayDetail(t, name)
	assert.NotEqual(t, pid, st.PID, "a new daemon serves the device")
	require.Len(t, st.Members, 2)
	assert.Equal(t, members[1], st.Members[1].Path)
	assert.Equal(t, "active", st.Members[1].State)
	assert.Equal(t, res.NewSize, st.SizeBytes)

	major, minor, _ := parseRelease(kernelRelease(t))
	if major > 6 || major == 6 && minor >= 16 {
		require.True(t, res.DeviceGrown, "Linux %d.%d resizes a live ublk device: %+v", major, minor, res)
		assert.Equal(t, res.NewSize, res.DeviceSize)
		assert.Equal(t, res.NewSize, deviceBytes(t, dev), "the device grew without a stop")
		sh(t, "resize2fs", dev) // online, mounted
	} else {
		require.False(t, res.DeviceGrown, "%+v", res)
		assert.Contains(t, res.Note, "uraid stop "+name)
		assert.Equal(t, oldSize, deviceBytes(t, dev), "the device keeps its size until it is made again")
		// The documented path: unmount, stop, assemble, mount, resize2fs.
		sh(t, "umount", mnt)
		uraid(t, "stop", name)
		dev = strings.TrimSpace(uraid(t, "assemble", name, members[0], members[1]))
		assert.Equal(t, res.NewSize, deviceBytes(t, dev))
		sh(t, "mount", "-o", "discard", dev, mnt)
		sh(t, "resize2fs", dev)
	}
	fsBlocks := strings.TrimSpace(sh(t, "stat", "-f", "-c", "%b %S", mnt))
	var blocks, bs int64
	_, err := fmt.Sscan(fsBlocks, &blocks, &bs)
	require.NoError(t, err)
	assert.Greater(t, blocks*bs, oldSize, "the filesystem grew past the old array: %s", fsBlocks)
	// The new space, on the new member, takes data.
	sums[filepath.Join(mnt, "after")] = writeRandomFile(t, filepath.Join(mnt, "after"), 96<<20)
	dropCaches(t)
	for p, want := range sums {
		assert.Equal(t, want, fileSum(t, p), p)
	}
	sh(t, "umount", mnt)
	sh(t, "e2fsck", "-f", "-n", dev)
	t.Logf("linear append on Linux %s took %s", kernelRelease(t), time.Since(start).Round(time.Millisecond))
}

// TestE2EGrowReshape widens a running raid10 of four loop devices to six, online, with ext4
// mounted on it, files on it and fio writing and verifying a file: uraid grow --add hands the
// device over with the reshape committed, the new daemon serves while the bytes move (paced by
// --max-rate), the daemon is killed with SIGKILL in the middle of the reshape, and uraid recover
// takes the device over and resumes it online. fio sees no error and verifies; uraid wait waits
// for the end; on Linux 6.16 and later the device grows and resize2fs grows the mounted
// filesystem, on older kernels the documented path (unmount, stop, assemble) does. Every file
// verifies, fio's file verifies again, and e2fsck is clean.
func TestE2EGrowReshape(t *testing.T) {
	needGuest(t)
	uraidBin(t)
	start := time.Now()
	members, _ := memberSet(t, "loop", 6, 64<<20)
	name, mnt := "reshape10", t.TempDir()
	dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "10", "--chunk", "64K"}, members[:4]...)...))
	require.True(t, strings.HasPrefix(dev, "/dev/ublkb"), "create printed %q", dev)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(daemon.LogPath(name)); err == nil {
				t.Logf("daemon log of %s:\n%s", name, b)
			}
		}
		cleanupUnmount(mnt)
		exec.Command(uraidBin(t), "recover", name).Run() // if a daemon was left dead
		cleanupRun(uraidBin(t), "stop", name)
	})
	pid := arrayDetail(t, name).PID
	oldSize := deviceBytes(t, dev)
	sh(t, "mkfs.ext4", "-q", "-F", dev)
	sh(t, "mount", "-o", "discard", dev, mnt)
	sums := map[string]string{}
	for i := range 8 {
		p := filepath.Join(mnt, fmt.Sprintf("file%d", i))
		sums[p] = writeRandomFile(t, p, 4<<20)
	}
	fioFile := filepath.Join(mnt, "fio.dat")
	fio := testCommand(t, "fio", fioVerifyJob(fioFile, "32M", "--rate=4M")...)
	fout := &strings.Builder{}
	fio.Stdout, fio.Stderr = fout, fout
	require.NoError(t, fio.Start())

	out := uraid(t, "grow", name, "--add", members[4], "--add", members[5], "--max-rate", "8M", "--json")
	var res daemon.AppendResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	t.Logf("grow --add: %+v", res)
	require.True(t, res.Reshape, "%+v", res)
	assert.Equal(t, 4, res.OldMembers)
	assert.Equal(t, 6, res.NewMembers)
	assert.Equal(t, oldSize, res.OldSize)
	assert.Equal(t, oldSize/2*3, res.NewSize, "the array grows by half")
	if b, err := os.ReadFile(daemon.LogPath(name)); assert.NoError(t, err) {
		assert.Contains(t, string(b), "event=reshape_started", "the reshape is an event, logged before the hand-over")
	}

	// In the middle of the reshape, the daemon is killed; recover takes it up.
	var st array.Status
	testutil.WaitForNoError(t, slow*time.Minute, "the reshape under way", func() error {
		st = arrayDetail(t, name)
		if st.Sync == nil || st.Sync.Action != array.SyncReshape || st.Sync.DoneBytes == 0 {
			return fmt.Errorf("sync %+v", st.Sync)
		}
		return nil
	})
	assert.NotEqual(t, pid, st.PID, "a new daemon serves the device")
	require.NotNil(t, st.Sync.Reshape)
	assert.Equal(t, oldSize, st.SizeBytes, "the old size while the bytes move")
	assert.Contains(t, uraid(t, "status", name), "reshape = ")
	require.Less(t, st.Sync.DoneBytes, st.Sync.TotalBytes, "the reshape ended before the kill: slower --max-rate")
	require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !processAlive(st.PID) }, slow*10*time.Second, 5*time.Millisecond)
	assert.Equal(t, dev, strings.TrimSpace(uraid(t, "recover", name)))
	require.NoError(t, fio.Wait(), fout.String())
	require.Contains(t, fout.String(), "err= 0", fout.String())
	uraid(t, "wait", name)
	st = arrayDetail(t, name)
	require.Len(t, st.Members, 6)
	for _, m := range st.Members {
		assert.Equal(t, "active", m.State, "%+v", m)
	}
	require.NotNil(t, st.Sync)
	assert.Equal(t, array.SyncIdle, st.Sync.Action, "%+v", st.Sync)
	assert.Equal(t, res.NewSize, st.SizeBytes)

	major, minor, _ := parseRelease(kernelRelease(t))
	if major > 6 || major == 6 && minor >= 16 {
		assert.Equal(t, res.NewSize, deviceBytes(t, dev), "the device grew without a stop")
		sh(t, "resize2fs", dev) // online, mounted
	} else {
		assert.Equal(t, oldSize, deviceBytes(t, dev), "the device keeps its size until it is made again")
		sh(t, "umount", mnt)
		uraid(t, "stop", name)
		dev = strings.TrimSpace(uraid(t, append([]string{"assemble", name}, members...)...))
		assert.Equal(t, res.NewSize, deviceBytes(t, dev))
		sh(t, "mount", "-o", "discard", dev, mnt)
		sh(t, "resize2fs", dev)
	}
	sums[filepath.Join(mnt, "after")] = writeRandomFile(t, filepath.Join(mnt, "after"), 48<<20)
	dropCaches(t)
	for p, want := range sums {
		assert.Equal(t, want, fileSum(t, p), p)
	}
	vout := sh(t, "fio", fioVerifyJob(fioFile, "32M", "--verify_only")...)
	assert.Contains(t, vout, "err= 0", vout)
	sh(t, "umount", mnt)
	sh(t, "e2fsck", "-f", "-n", dev)
	t.Logf("online reshape on Linux %s took %s", kernelRelease(t), time.Since(start).Round(time.Millisecond))
}
