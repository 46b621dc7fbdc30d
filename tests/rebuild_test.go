package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
	"uraid/internal/testutil"
)

// The rebuild suite fails members of mirrored arrays under load, rebuilds them through the CLI
// (fail, remove, add, replace, hot spares), kills the daemon in the middle of a rebuild, and
// proves every rebuilt copy by making it the only one left.

// dmMember is a member that can be switched to fail every I/O: device-mapper over a loop device,
// linear while healthy, the error target once broken.
type dmMember struct {
	t       *testing.T
	name    string
	path    string // /dev/dm-N
	loop    string
	sectors int64
}

func newDMMember(t *testing.T, tag string, size int64) *dmMember {
	t.Helper()
	if k := os.Getenv("URAID_VM_KERNEL"); k != "" {
		_ = exec.Command("modprobe", "-d", k, "dm_mod").Run() // may be built in
	}
	loops, _ := memberSet(t, "loop", 1, size)
	d := &dmMember{t: t, name: fmt.Sprintf("uraid-rb-%d-%s", os.Getpid(), tag), loop: loops[0], sectors: size >> 9}
	dmsetup(t, "create", d.name, "--table", d.linear())
	t.Cleanup(func() { dmRemove(t, d.name) })
	// The guest has no udev to make /dev/mapper links; devtmpfs has the dm-N node.
	d.path = "/dev/" + strings.TrimSpace(dmsetup(t, "info", "-c", "--noheadings", "-o", "blkdevname", d.name))
	return d
}

func (d *dmMember) linear() string { return fmt.Sprintf("0 %d linear %s 0", d.sectors, d.loop) }

// load swaps the device's table; I/O in flight finishes first.
func (d *dmMember) load(table string) {
	d.t.Helper()
	dmsetup(d.t, "suspend", d.name)
	dmsetup(d.t, "reload", d.name, "--table", table)
	dmsetup(d.t, "resume", d.name)
}

// breakIt makes every read and write of the device fail with EIO.
func (d *dmMember) breakIt() { d.load(fmt.Sprintf("0 %d error", d.sectors)) }

type rebuildArray struct {
	t    *testing.T
	name string
	dev  string
	mnt  string
}

// loadDir is a new directory on the mounted array for one load.
func (r *rebuildArray) loadDir(name string) string {
	r.t.Helper()
	d := filepath.Join(r.mnt, name)
	require.NoError(r.t, os.Mkdir(d, 0o755))
	return d
}

func (r *rebuildArray) status() daemon.Status {
	r.t.Helper()
	var st daemon.Status
	out, err := uraidCode(r.t, "detail", "--json", r.name)
	if err != nil {
		r.t.Fatalf("uraid detail %s: %v: %s", r.name, err, out)
	}
	if i := strings.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	require.NoError(r.t, json.NewDecoder(strings.NewReader(out)).Decode(&st), out)
	return st
}

// slotPaths are the members' paths in slot order.
func slotPaths(st daemon.Status) []string {
	var ps []string
	for _, m := range st.Members {
		ps = append(ps, m.Path)
	}
	return ps
}

// waitWhole waits until no sync job runs, every slot is active and no region needs a resync:
// what uraid wait and a clean status say. The last job must have succeeded.
func (r *rebuildArray) waitWhole(what string) daemon.Status {
	r.t.Helper()
	var st daemon.Status
	testutil.WaitForNoError(r.t, slow*3*time.Minute, what+": the array whole", func() error {
		st = r.status()
		whole := st.Sync != nil && st.Sync.Action == "idle" && (st.Regions == nil || st.Regions.NeedResync == 0)
		for _, m := range st.Members {
			whole = whole && m.State == "active" && m.Replacement == ""
		}
		if !whole {
			return fmt.Errorf("not whole: %+v, members %v, sync %+v", st.State, memberStates(st), st.Sync)
		}
		return nil
	})
	require.NotNil(r.t, st.Sync.Last, what)
	require.Empty(r.t, st.Sync.Last.Error, "%s: the last sync job failed", what)
	require.False(r.t, st.Sync.Last.Cancelled, what)
	assert.Contains(r.t, []string{"active", "clean"}, st.State, what)
	return st
}

func memberStates(st daemon.Status) []string {
	var out []string
	for _, m := range st.Members {
		out = append(out, fmt.Sprintf("%d:%s:%s", m.Index, m.Path, m.State))
	}
	return out
}

func (r *rebuildArray) waitFor(what string, cond func(daemon.Status) bool) daemon.Status {
	r.t.Helper()
	var st daemon.Status
	require.Eventually(r.t, func() bool { st = r.status(); return cond(st) }, slow*2*time.Minute, 50*time.Millisecond,
		"%s: members %v, sync %+v", what, memberStates(r.status()), r.status().Sync)
	return st
}

// TestE2ERebuild runs, for a raid1 of two members and a raid10 of four (n2), one member's life:
// it breaks (dm-error) under fio verify and the hot spare given at create takes over by itself;
// its partner is failed, removed and replaced by a blank device with uraid add; then every other
// copy of that rebuilt member's data is broken, so that it alone serves: fio verify, every
// file's checksum and e2fsck pass. Then a rebuild is killed (kill -9) in the middle, uraid
// recover resumes it, and it copies no more than a fifth beyond one rebuild. Last, uraid replace
// under fio verify.
func TestE2ERebuild(t *testing.T) {
	uraidBin(t)
	for _, tc := range []struct {
		level string
		n     int
	}{{"1", 2}, {"10", 4}} {
		t.Run("raid"+tc.level, func(t *testing.T) { rebuildLife(t, tc.level, tc.n) })
	}
}

func rebuildLife(t *testing.T, level string, n int) {
	size := int64(64 << 20) // room for the checked files and two loads on the filesystem
	if n > 2 {
		size = 48 << 20
	}
	var ms []*dmMember
	var paths []string
	for i := range n {
		m := newDMMember(t, fmt.Sprintf("%s-m%d", level, i), size)
		ms, paths = append(ms, m), append(paths, m.path)
	}
	spare := newDMMember(t, level+"-spare", size)
	r := &rebuildArray{t: t, name: "rb" + level, mnt: t.TempDir()}
	args := []string{"create", r.name, "--level", level, "--spare", spare.path}
	if level == "10" {
		args = append(args, "--chunk", "64K")
	}
	args = append(args, paths...)
	out := uraid(t, args...)
	r.dev = strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(r.dev, "/dev/ublkb"), "create printed %q", out)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(daemon.LogPath(r.name)); err == nil {
				t.Logf("daemon log of %s:\n%s", r.name, b)
			}
			if b, err := os.ReadFile(daemon.RecordPath(r.name)); err == nil {
				t.Logf("record of %s:\n%s", r.name, b)
			}
		}
		cleanupUnmount(r.mnt)
		exec.Command(uraidBin(t), "recover", r.name).Run() // if a daemon was left dead
		cleanupRun(uraidBin(t), "stop", r.name)
	})
	st := r.status()
	require.Equal(t, []string{spare.path}, st.Spares)
	assert.Contains(t, uraid(t, "status", r.name), spare.path+"(S)")

	// mkfs trims the array whole, as it does on SSDs: every rebuild below copies only what the
	// filesystem wrote and trims the rest on its new member.
	sh(t, "mkfs.ext4", "-q", "-F", r.dev)
	sh(t, "mount", r.dev, r.mnt)
	sums := map[string]string{}
	for i := range 8 {
		p := filepath.Join(r.mnt, fmt.Sprintf("file%d", i))
		sums[p] = writeRandomFile(t, p, 1<<20)
	}

	// 1. Member 0 breaks under fio verify: it is failed, the spare takes slot 0 with no command
	// and is rebuilt, fio sees nothing.
	l := startLoad(t, r.loadDir("load1"), "16M")
	r.waitFor("fio under way", func(st daemon.Status) bool { return st.Members[0].IO.Writes > 100 })
	ms[0].breakIt()
	r.waitFor("the spare takes slot 0", func(st daemon.Status) bool {
		return st.Members[0].Path == spare.path && len(st.Spares) == 0
	})
	l.finish()
	require.NoError(t, os.RemoveAll(filepath.Join(r.mnt, "load1")))
	st = r.waitWhole("after the spare's rebuild")
	assert.Equal(t, spare.path, st.Members[0].Path)
	assert.Positive(t, st.Members[0].IO.SyncWriteBytes, "the spare was written by the rebuild")

	// 2. Its partner (slot 1, the other copy of slot 0's data) is failed, removed, and a blank
	// device added in its place.
	uraid(t, "fail", r.name, paths[1])
	assert.Equal(t, "failed", r.status().Members[1].State)
	out, err := uraidCode(t, "fail", r.name, spare.path)
	assert.Equal(t, 1, exitStatus(err), "failing the last copy must be refused: %s", out)
	assert.Contains(t, out, "last copy")
	assert.Equal(t, "active", r.status().Members[0].State, "a refused fail changes nothing")
	uraid(t, "remove", r.name, paths[1])
	assert.Equal(t, "missing", r.status().Members[1].State)
	blank := newDMMember(t, level+"-blank", size)
	assert.Contains(t, uraid(t, "add", r.name, blank.path), "rebuilding")
	st = r.waitWhole("after adding a blank device")
	require.Equal(t, blank.path, st.Members[1].Path)

	// 3. Every other copy of the blank device's data breaks: it alone serves them.
	spare.breakIt()
	_, _ = uraidCode(t, "fail", r.name, spare.path) // failed already if a read found it broken
	st = r.status()
	require.Equal(t, "failed", st.Members[0].State)
	require.Equal(t, "active", st.Members[1].State)
	dropCaches(t)
	for p, want := range sums {
		assert.Equal(t, want, fileSum(t, p), "%s read from the rebuilt member alone", p)
	}
	l = startLoad(t, r.loadDir("load2"), "8M")
	l.finish()
	require.NoError(t, os.RemoveAll(filepath.Join(r.mnt, "load2")))
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-f", "-n", r.dev)

	// 4. A rebuild killed in the middle resumes where it was. One whole rebuild first, unmounted so
	// that the data does not change, gives what one copies.
	uraid(t, "remove", r.name, spare.path)
	b1 := newDMMember(t, level+"-b1", size)
	base := r.status().Members[0].IO.SyncWriteBytes
	uraid(t, "add", r.name, b1.path)
	st = r.waitWhole("after the reference rebuild")
	full := st.Members[0].IO.SyncWriteBytes - base
	require.Positive(t, full)
	uraid(t, "fail", r.name, b1.path)
	uraid(t, "remove", r.name, b1.path)
	b2 := newDMMember(t, level+"-b2", size)
	base = r.status().Members[0].IO.SyncWriteBytes
	uraid(t, "add", r.name, "--max-rate", "2M", b2.path)
	var first uint64
	st = r.waitFor("the rebuild a third done", func(st daemon.Status) bool {
		first = st.Members[0].IO.SyncWriteBytes - base
		return first >= full/3
	})
	require.Equal(t, "rebuild", st.Sync.Action, "the rebuild ended before the kill: lower --max-rate")
	pid := st.PID
	require.NoError(t, syscallKill(pid))
	require.Eventually(t, func() bool { return !processAlive(pid) }, slow*10*time.Second, 5*time.Millisecond)
	uraid(t, "recover", r.name)
	st = r.waitWhole("after the resumed rebuild")
	require.Equal(t, b2.path, st.Members[0].Path, "the recovered daemon assembled the device being rebuilt")
	second := st.Members[0].IO.SyncWriteBytes
	t.Logf("raid%s: one rebuild copies %d KiB; killed after %d KiB, the resumed one copied %d KiB (%.2fx)",
		level, full>>10, first>>10, second>>10, float64(first+second)/float64(full))
	assert.LessOrEqual(t, float64(first+second), 1.2*float64(full), "the resumed rebuild started over")
	sh(t, "e2fsck", "-f", "-n", r.dev)

	// 5. uraid replace under fio verify: the replaced member serves until its copy is whole. The
	// load ends once the copy is under way: while it runs the copy keeps to its floor rate.
	sh(t, "mount", r.dev, r.mnt)
	newDev := newDMMember(t, level+"-new", size)
	l = startLoad(t, r.loadDir("load3"), "16M")
	r.waitFor("fio under way", func(st daemon.Status) bool { return st.Members[1].IO.Writes > 100 })
	uraid(t, "replace", r.name, blank.path, newDev.path)
	r.waitFor("the replacement being written", func(st daemon.Status) bool {
		return st.Members[1].Path == newDev.path || (st.Sync != nil && st.Sync.Action == "rebuild" && st.Sync.DoneBytes > 0)
	})
	l.finish()
	r.waitFor("the replace done", func(st daemon.Status) bool {
		return st.Members[1].Path == newDev.path && st.Members[1].Replacement == ""
	})
	st = r.waitWhole("after the replace")
	assert.Equal(t, []string{b2.path, newDev.path}, slotPaths(st)[:2])
	sh(t, "umount", r.mnt)
	sh(t, "e2fsck", "-f", "-n", r.dev)
	dropCaches(t)
	sh(t, "mount", r.dev, r.mnt)
	for p, want := range sums {
		assert.Equal(t, want, fileSum(t, p), p)
	}
	sh(t, "umount", r.mnt)
	// Stopped here, not in the cleanup: the devices added above were made after the array and
	// their cleanups, which run first, could not remove them while it ran.
	uraid(t, "stop", r.name)
}

// TestE2EMembershipRefusals: bad input to add and replace is refused with the cause and changes
// nothing.
func TestE2EMembershipRefusals(t *testing.T) {
	uraidBin(t)
	members, _ := memberSet(t, "loop", 2, 32<<20)
	name := "rbrefuse"
	uraid(t, append([]string{"create", name, "--level", "1"}, members...)...)
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })
	other, _ := memberSet(t, "loop", 2, 32<<20)
	uraid(t, append([]string{"create", name + "x", "--level", "1"}, other...)...)
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name+"x") })
	small, _ := memberSet(t, "loop", 1, 8<<20)
	linear, _ := memberSet(t, "loop", 2, 32<<20)
	uraid(t, append([]string{"create", name + "l", "--level", "linear"}, linear...)...)
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name+"l") })
	spare, _ := memberSet(t, "loop", 1, 32<<20)
	uraid(t, "add", name, spare[0]) // whole: it becomes a spare
	before := arrayDetail(t, name)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", name, other[0]}, "in use"}, // a member of a running array, held O_EXCL
		{[]string{"add", name, small[0]}, "too small"},
		{[]string{"add", name, spare[0]}, "already"},
		{[]string{"fail", name, "/dev/nonesuch"}, "is not in the array"},
		{[]string{"remove", name, members[0]}, "fail it first"},
		{[]string{"fail", name + "l", linear[0]}, "has no redundancy"},
		{[]string{"replace", name, "/dev/nonesuch", small[0]}, "is not in the array"},
		{[]string{"replace", name, members[0], small[0]}, "too small"},
	} {
		out, err := uraidCode(t, tc.args...)
		assert.Equal(t, 1, exitStatus(err), "%v: %s", tc.args, out)
		assert.Contains(t, out, tc.want, tc.args)
	}
	out, err := uraidCode(t, "add", name)
	assert.Equal(t, 2, exitStatus(err), out)
	after := arrayDetail(t, name)
	assert.Equal(t, slotPaths(daemon.Status{Status: before}), slotPaths(daemon.Status{Status: after}))
	assert.Equal(t, before.Spares, after.Spares)
	for _, m := range after.Members {
		assert.Equal(t, "active", m.State)
	}

	// A stopped array whose spare was added while it ran assembles with it: uraid stop, then
	// assemble --spare.
	uraid(t, "stop", name)
	uraid(t, append(append([]string{"assemble", name}, members...), "--spare", spare[0])...)
	assert.Equal(t, spare, arrayDetail(t, name).Spares)
}
