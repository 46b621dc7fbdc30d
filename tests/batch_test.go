package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/ublk"
)

// wantBatchIO says whether a server asked for batch I/O b ("off" or "auto",
// as ublkfile's -batchio and the daemon's URAID_BATCH_IO spell it) uses the
// batch commands on this kernel, and a word the reason must contain when it
// does not.
func wantBatchIO(t *testing.T, b string) (on bool, why string) {
	t.Helper()
	have, err := kernelFeatures()
	require.NoError(t, err)
	switch {
	case b == "off":
		return false, "off (the default"
	case !have.Has(ublk.FeatureBatchIO):
		return false, "lacks UBLK_F_BATCH_IO"
	}
	return true, ""
}

// checkBatchIO asserts that a device uses the commands asked for.
func checkBatchIO(t *testing.T, b string, on bool, reason string) {
	t.Helper()
	want, why := wantBatchIO(t, b)
	assert.Equal(t, want, on, "batch I/O")
	if want {
		assert.Empty(t, reason)
	} else {
		assert.Contains(t, reason, why)
	}
}

// fio verify through the file target with the batch I/O commands in every
// zero-copy mode, over a file and over a block device, and once with a
// queue shallower than fio's depth (requests wait for tags, and commits
// come one or two at a time); and with them turned off. On a kernel without
// batch I/O every choice must say so, and the per-tag commands are verified
// by the zero-copy tests.
func TestE2EUblkBatchIOFioVerify(t *testing.T) {
	needGuest(t)
	type run struct{ kind, zc, batch, depth string }
	var runs []run
	for _, kind := range []string{"file", "loop"} {
		for _, zc := range zeroCopyModes {
			runs = append(runs, run{kind, zc, "auto", "0"})
		}
	}
	runs = append(runs, run{"file", "auto", "auto", "4"}, run{"file", "auto", "off", "0"})
	for _, r := range runs {
		t.Run(fmt.Sprintf("%s-zc-%s-batch-%s-depth-%s", r.kind, r.zc, r.batch, r.depth), func(t *testing.T) {
			path := backingFile(t)
			if r.kind == "loop" {
				path = strings.TrimSpace(sh(t, "losetup", "--find", "--show", path))
				t.Cleanup(func() { cleanupRun("losetup", "-d", path) })
			}
			srv := startUblkServer(t, path, "-zerocopy", r.zc, "-batchio", r.batch, "-depth", r.depth, "-queues", "2")
			checkBatchIO(t, r.batch, srv.BatchIO.On, srv.BatchIO.Reason)
			z := srv.ZeroCopy
			checkZeroCopy(t, r.zc, z.On, z.Mode, z.Reason, z.BufferBytes)
			if on, _ := wantBatchIO(t, "auto"); on {
				fioVerify(t, srv.Path, "32M")
			}
			srv.Stop()
		})
	}
}

// A recovering server keeps the commands the device was created with,
// whatever it was asked for, and prepares its tags anew: I/O after the
// takeover verifies.
func TestE2EUblkRecoveryKeepsBatchIO(t *testing.T) {
	needFeature(t, ublk.FeatureUserRecovery|ublk.FeatureBatchIO)
	backing := backingFile(t)
	first := startUblkServer(t, backing, "-recovery", "-batchio", "auto")
	require.True(t, first.BatchIO.On)
	fioVerify(t, first.Path, "8M")
	first.Kill()
	waitQuiesced(t, first.ID)
	second := startUblkServer(t, backing, "-recovery", "-batchio", "off", "-recover", fmt.Sprint(first.ID))
	assert.True(t, second.BatchIO.On, "the device was created for batch I/O")
	fioVerify(t, second.Path, "16M")
	second.Stop()
}
