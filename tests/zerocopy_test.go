package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
	"uraid/ublk"
)

// zeroCopyModes are the server's choices, as ublkfile's -zerocopy and the
// daemon's URAID_ZERO_COPY spell them.
var zeroCopyModes = []string{"auto", "register", "off"}

// wantZeroCopy is the data mode a server asked for zc runs in on this
// kernel, and a word the reason must contain when it copies.
func wantZeroCopy(t *testing.T, zc string) (mode, why string) {
	t.Helper()
	have, err := kernelFeatures()
	require.NoError(t, err)
	auto, reg := have.Has(ublk.FeatureAutoBufReg), have.Has(ublk.FeatureZeroCopy)
	switch {
	case zc == "off":
		return "copy", "turned off"
	case zc == "register" && reg:
		return "register", ""
	case zc == "register":
		return "copy", "lacks UBLK_F_SUPPORT_ZERO_COPY"
	case auto:
		return "auto-buf-reg", ""
	case reg:
		return "register", ""
	}
	return "copy", "lacks UBLK_F_AUTO_BUF_REG"
}

// checkZeroCopy asserts that a device runs in the mode wanted, and that in
// zero-copy mode its server maps no buffer for request data: no byte of it
// can have been copied through the server.
func checkZeroCopy(t *testing.T, zc string, on bool, mode, reason string, bufferBytes int64) {
	t.Helper()
	wantMode, why := wantZeroCopy(t, zc)
	assert.Equal(t, wantMode, mode)
	assert.Equal(t, wantMode != "copy", on)
	if on {
		assert.Zero(t, bufferBytes, "zero copy maps no buffer for the data")
		assert.Empty(t, reason)
	} else {
		assert.Positive(t, bufferBytes, "the copy needs its buffers")
		assert.Contains(t, reason, why)
	}
}

// fioVerify writes random blocks of 4 KiB to 64 KiB with checksums through
// path and verifies them, then checks them again in a separate pass after
// dropping the page cache.
func fioVerify(t *testing.T, path, size string) {
	t.Helper()
	job := []string{
		"--name=verify", "--filename=" + path, "--rw=randwrite", "--bsrange=4k-64k",
		"--size=" + size, "--ioengine=io_uring", "--iodepth=16", "--direct=1",
		"--verify=crc32c", "--verify_fatal=1", "--randseed=42", "--group_reporting",
	}
	out := sh(t, "fio", job...)
	require.Contains(t, out, "err= 0", out)
	dropCaches(t)
	out = sh(t, "fio", append(job, "--verify_only")...)
	require.Contains(t, out, "err= 0", out)
	require.Contains(t, out, "verify", out)
}

// On a kernel with automatic buffer registration the file target runs
// without a copy by default.
func TestE2EZeroCopyIsDefault(t *testing.T) {
	needFeature(t, ublk.FeatureAutoBufReg)
	srv := startUblkServer(t, backingFile(t))
	assert.True(t, srv.ZeroCopy.On)
	assert.Equal(t, "auto-buf-reg", srv.ZeroCopy.Mode)
	assert.Zero(t, srv.ZeroCopy.BufferBytes)
	srv.Stop()
}

// fio verify through the file target over a file and over a block device
// (a loop device, as array members are), in every zero-copy mode.
func TestE2EUblkZeroCopyFioVerify(t *testing.T) {
	needGuest(t)
	verified := map[string]bool{}
	for _, kind := range []string{"file", "loop"} {
		for _, zc := range zeroCopyModes {
			t.Run(kind+"-"+zc, func(t *testing.T) {
				// Where the kernel lacks zero copy every choice falls back to the copy: each
				// still reports its mode and reason, but one verify of the copy's data path
				// per backing store is enough.
				mode, _ := wantZeroCopy(t, zc)
				again := verified[kind+"/"+mode]
				verified[kind+"/"+mode] = true
				path := backingFile(t)
				if kind == "loop" {
					path = strings.TrimSpace(sh(t, "losetup", "--find", "--show", path))
					t.Cleanup(func() { cleanupRun("losetup", "-d", path) })
				}
				srv := startUblkServer(t, path, "-zerocopy", zc)
				z := srv.ZeroCopy
				checkZeroCopy(t, zc, z.On, z.Mode, z.Reason, z.BufferBytes)
				if again {
					t.Logf("%s runs in %s mode, already verified over %s", zc, mode, kind)
				} else {
					fioVerify(t, srv.Path, "64M")
				}
				srv.Stop()
			})
		}
	}
}

// createArrayEnv creates an array with env added to the daemon's
// environment and returns its device; the array is stopped when the test
// ends.
func createArrayEnv(t *testing.T, name string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(uraidBin(t), append([]string{"create", name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "uraid create %s: %s", strings.Join(args, " "), out)
	dev := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(dev, "/dev/ublkb"), "create printed %q", dev)
	t.Cleanup(func() { cleanupRun(uraidBin(t), "stop", name) })
	return dev
}

// fio verify through every level over files and over block devices, with
// the daemon's default (zero copy where the kernel has it); and on raid10
// over block devices with explicit registration and with the copy. detail
// says which mode each array runs in.
func TestE2EArrayZeroCopyFioVerify(t *testing.T) {
	uraidBin(t)
	type run struct{ kind, level, zc, batch string }
	var runs []run
	for _, kind := range []string{"file", "loop"} {
		for _, level := range []string{"linear", "0", "1", "10"} {
			runs = append(runs, run{kind, level, "auto", "auto"})
		}
	}
	runs = append(runs, run{"loop", "10", "register", "auto"}, run{"loop", "10", "off", "auto"}, run{"loop", "10", "auto", "off"})
	verified := map[run]bool{}
	for _, r := range runs {
		t.Run(r.kind+"-raid"+r.level+"-"+r.zc+"-batch-"+r.batch, func(t *testing.T) {
			// As for the file target: a choice that falls back to a mode already verified on
			// this level and kind is checked for its mode and reason only.
			mode, _ := wantZeroCopy(t, r.zc)
			batch, _ := wantBatchIO(t, r.batch)
			done := run{r.kind, r.level, mode, fmt.Sprint(batch)}
			again := verified[done]
			verified[done] = true
			members, _ := memberSet(t, r.kind, 4, memberSize)
			name := "zc-" + r.kind + "-" + r.level + "-" + r.zc + "-" + r.batch
			args := []string{"--level", r.level}
			if r.level == "0" || r.level == "10" {
				args = append(args, "--chunk", "64K")
			}
			dev := createArrayEnv(t, name, []string{daemon.ZeroCopyEnv + "=" + r.zc, daemon.BatchIOEnv + "=" + r.batch}, append(args, members...)...)
			st := arrayDetail(t, name)
			checkZeroCopy(t, r.zc, st.ZeroCopy, st.ZeroCopyMode, st.ZeroCopyReason, st.CopyBufferBytes)
			checkBatchIO(t, r.batch, st.BatchIO, st.BatchIOReason)
			text := uraid(t, "detail", name)
			assert.Contains(t, text, "Zero Copy : ")
			assert.Contains(t, text, "Batch I/O : ")
			if again {
				t.Logf("%s runs in %s mode, already verified on this level", r.zc, mode)
				uraid(t, "stop", name)
				return
			}
			fioVerify(t, dev, "48M")
			after := arrayDetail(t, name)
			var written uint64
			for _, m := range after.Members {
				written += m.IO.WriteBytes
			}
			assert.Positive(t, written, "the members were written")
			assert.Equal(t, st.CopyBufferBytes, after.CopyBufferBytes)
			uraid(t, "stop", name)
		})
	}
}

// A recovering server serves the device in the mode it was created with,
// whatever it was asked for.
func TestE2EUblkRecoveryKeepsMode(t *testing.T) {
	needFeature(t, ublk.FeatureUserRecovery|ublk.FeatureAutoBufReg)
	backing := backingFile(t)
	first := startUblkServer(t, backing, "-recovery", "-zerocopy", "auto")
	require.True(t, first.ZeroCopy.On)
	first.Kill()
	waitQuiesced(t, first.ID)
	second := startUblkServer(t, backing, "-recovery", "-zerocopy", "off", "-recover", fmt.Sprint(first.ID))
	assert.Equal(t, first.ZeroCopy.Mode, second.ZeroCopy.Mode)
	fioVerify(t, second.Path, "16M")
	second.Stop()
}

// waitQuiesced waits until device id, whose server died, waits for a new
// one.
func waitQuiesced(t *testing.T, id int) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := ublk.Info(uint32(id))
		return err == nil && info.State == "quiesced"
	}, slow*5*time.Second, 10*time.Millisecond, "the device waits for a new server")
}
