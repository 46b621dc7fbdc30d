package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/internal/testutil"
)

// nullBlk makes n memory-backed null_blk devices of size bytes (through configfs, so that they
// keep what is written) and returns their paths.
func nullBlk(t *testing.T, n int, size int64) []string {
	t.Helper()
	guestModule(t, "null_blk", "nr_devices=0")
	cfg := "/sys/kernel/config"
	if _, err := os.Stat(filepath.Join(cfg, "nullb")); err != nil {
		sh(t, "mount", "-t", "configfs", "configfs", cfg)
	}
	var devs []string
	for i := range n {
		dir := filepath.Join(cfg, "nullb", fmt.Sprintf("nullb-uraid%d-%d", os.Getpid(), i))
		require.NoError(t, os.Mkdir(dir, 0o755))
		set := func(attr, v string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, attr), []byte(v), 0o644), "null_blk %s", attr)
		}
		set("size", fmt.Sprint(size>>20)) // MiB
		set("memory_backed", "1")
		set("blocksize", "4096")
		set("power", "1")
		t.Cleanup(func() {
			os.WriteFile(filepath.Join(dir, "power"), []byte("0"), 0o644)
			os.Remove(dir)
		})
		// Newer kernels name the disk after its configfs directory, older ones nullbN.
		disk := filepath.Base(dir)
		if _, err := os.Stat("/sys/block/" + disk); err != nil {
			idx, err := os.ReadFile(filepath.Join(dir, "index"))
			require.NoError(t, err)
			disk = "nullb" + strings.TrimSpace(string(idx))
		}
		dev := "/dev/" + disk
		// devtmpfs makes the node from its own thread.
		testutil.WaitForWithin(t, slow*time.Minute, dev+" exists", func() bool { _, err := os.Stat(dev); return err == nil })
		devs = append(devs, dev)
	}
	return devs
}

// scanned is what assemble --scan started: name -> device.
func scanned(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, dev, ok := strings.Cut(line, " "); ok {
			got[name] = dev
		}
	}
	return got
}

// startUdevd runs a udev daemon with the rules under test (the guest has none running) until the
// test ends.
// scanOwn runs assemble --scan --config conf and keeps to the arrays of own: the guest's block
// devices may carry members of arrays other tests left behind, which the scan finds too. Those it
// started are stopped again, and a scan that failed only for them counts as a success. It returns
// what the scan printed on stdout and stderr.
func scanOwn(t *testing.T, conf string, own map[string][]string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(uraidBin(t), "assemble", "--scan", "--config", conf)
	var eb strings.Builder
	cmd.Stderr = &eb
	out, err := cmd.Output()
	stdout, stderr = string(out), eb.String()
	for name := range scanned(t, stdout) {
		if _, ok := own[name]; !ok {
			t.Logf("the scan also started %s, left by another test: stopping it", name)
			cleanupRun(uraidBin(t), "stop", name)
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		foreign := true
		for _, line := range strings.Split(stderr, "\n") {
			_, rest, ok := strings.Cut(line, "uraid: array ")
			if !ok {
				continue
			}
			name, what, _ := strings.Cut(rest, ": ")
			if _, mine := own[name]; mine && strings.HasPrefix(what, "not assembled") {
				foreign = false
			}
		}
		if foreign {
			t.Logf("the scan failed only for arrays other tests left:\n%s", stderr)
			err = nil
		}
	}
	return stdout, stderr, err
}

func startUdevd(t *testing.T) {
	t.Helper()
	rules, err := os.ReadFile(repoFile(t, "packaging/udev/69-uraid.rules"))
	require.NoError(t, err)
	// The guest's root is read-only but for /run and /tmp: /run/udev/rules.d is read too.
	require.NoError(t, os.MkdirAll("/run/udev/rules.d", 0o755))
	installed := strings.ReplaceAll(string(rules), "/usr/local/bin/uraid", uraidBin(t))
	require.NoError(t, os.WriteFile("/run/udev/rules.d/69-uraid.rules", []byte(installed), 0o644))
	t.Cleanup(func() { os.Remove("/run/udev/rules.d/69-uraid.rules") })
	if exec.Command("udevadm", "control", "--ping").Run() == nil {
		sh(t, "udevadm", "control", "--reload")
		return
	}
	cmd := exec.Command("/lib/systemd/systemd-udevd")
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		// Its control socket would outlive it, and tools that find it (dmsetup) then wait
		// for a udev that is gone.
		os.Remove("/run/udev/control")
	})
	testutil.WaitForWithin(t, slow*time.Minute, "udevd answers", func() bool { return exec.Command("udevadm", "control", "--ping").Run() == nil })
}

// settle replays the block devices' add events through udev and waits until udev is done.
func settle(t *testing.T) {
	t.Helper()
	sh(t, "udevadm", "trigger", "--action=add", "--subsystem-match=block")
	sh(t, "udevadm", "settle", "--timeout=180")
}

func linkTarget(path string) string {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return p
}

// TestE2EAssembleScan: assemble --scan finds the members of three stopped arrays by their
// superblocks, on loop and null_blk devices and on files a config names, and starts them; run
// again it leaves them alone; an incomplete array starts only with --degraded. Under udev, the
// rules give each array /dev/uraid/NAME and its filesystem /dev/disk/by-uuid/UUID, tag the
// members with their array, and the links go with the array.
func TestE2EAssembleScan(t *testing.T) {
	uraidBin(t)
	loops, _ := memberSet(t, "loop", 2, 64<<20)
	nulls := nullBlk(t, 2, 64<<20)
	files, _ := memberSet(t, "file", 2, 64<<20)
	conf := filepath.Join(t.TempDir(), "uraid.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# file members\n"+filepath.Dir(files[0])+"/m*\n"), 0o644))
	arrays := map[string][]string{"scan-loop": loops, "scan-null": nulls, "scan-file": files}
	t.Cleanup(func() {
		for name := range arrays {
			cleanupRun(uraidBin(t), "stop", name)
		}
	})
	for name, ms := range arrays {
		dev := strings.TrimSpace(uraid(t, append([]string{"create", name, "--level", "1"}, ms...)...))
		if name == "scan-loop" {
			sh(t, "mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev)
		}
		uraid(t, "stop", name)
	}

	out, errOut, err := scanOwn(t, conf, arrays)
	require.NoError(t, err, "%s%s", out, errOut)
	got := scanned(t, out)
	for name := range arrays {
		require.Contains(t, got, name, "assemble --scan printed:\n%s", out)
		assert.True(t, strings.HasPrefix(got[name], "/dev/ublkb"), "%s on %q", name, got[name])
		st := arrayDetail(t, name)
		assert.Equal(t, got[name], st.Device)
		assert.Equal(t, "active", st.State, name)
	}

	again, stderr, err := scanOwn(t, conf, arrays)
	require.NoError(t, err, "a second scan exits 0: %s", stderr)
	for name := range scanned(t, again) {
		_, mine := arrays[name]
		assert.False(t, mine, "a second scan started %s again", name)
	}
	for name, dev := range got {
		if _, ok := arrays[name]; ok {
			assert.Contains(t, stderr, fmt.Sprintf("array %s: already running on %s", name, dev))
		}
	}

	// One member file away: the scan refuses the array, unless --degraded.
	uraid(t, "stop", "scan-file")
	require.NoError(t, os.WriteFile(conf, []byte(files[0]+"\n"), 0o644))
	out, err = uraidCode(t, "assemble", "--scan", "--config", conf)
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "an incomplete array fails the scan: %s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, out, "array scan-file: not assembled")
	assert.Contains(t, out, "--degraded")
	assert.Contains(t, out, "already running", "the others are left alone")
	out = uraid(t, "assemble", "--scan", "scan-file", "--degraded", "--config", conf)
	assert.Contains(t, out, "scan-file /dev/ublkb")
	assert.Equal(t, "degraded", detailAnyState(t, "scan-file").State)

	startUdevd(t)
	settle(t)
	loopDev := got["scan-loop"]
	fsUUID := strings.TrimSpace(sh(t, "blkid", "-s", "UUID", "-o", "value", loopDev))
	require.NotEmpty(t, fsUUID)
	for name, dev := range got {
		if _, ok := arrays[name]; ok {
			assert.Equal(t, dev, linkTarget("/dev/uraid/"+name), "/dev/uraid/%s", name)
		}
	}
	assert.Equal(t, loopDev, linkTarget("/dev/disk/by-uuid/"+fsUUID), "by-uuid link of the filesystem on scan-loop")
	props := sh(t, "udevadm", "info", "--query=property", "--name="+loops[1])
	assert.Contains(t, props, "URAID_MEMBER_ARRAY=scan-loop")
	assert.Contains(t, props, "URAID_MEMBER_INDEX=1")
	props = sh(t, "udevadm", "info", "--query=property", "--name="+nulls[0])
	assert.Contains(t, props, "URAID_MEMBER_ARRAY=scan-null")

	mnt := t.TempDir()
	sh(t, "mount", "UUID="+fsUUID, mnt)
	sh(t, "umount", mnt)
	// The rules do not watch the device: nothing of udev's has it open after the unmount.
	uraid(t, "stop", "scan-loop")
	sh(t, "udevadm", "settle", "--timeout=180")
	testutil.WaitForWithin(t, slow*time.Minute, "the links go with the array", func() bool {
		_, err1 := os.Lstat("/dev/uraid/scan-loop")
		_, err2 := os.Lstat("/dev/disk/by-uuid/" + fsUUID)
		return os.IsNotExist(err1) && os.IsNotExist(err2)
	})
}

// detailAnyState is the array's detail, degraded or not.
func detailAnyState(t *testing.T, name string) array.Status {
	t.Helper()
	out, err := exec.Command(uraidBin(t), "detail", "--json", name).Output()
	if err != nil {
		t.Fatalf("uraid detail --json %s: %v", name, err)
	}
	var st array.Status
	require.NoError(t, json.Unmarshal(out, &st))
	return st
}

// repoFile is a file of this repository, which the guest sees where the host has it.
func repoFile(t *testing.T, rel string) string {
	_, self, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(self), "..", rel)
}
