package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2ENoUblkKernel runs where make test-vm boots a kernel built without ublk (KERNEL=6.1,
// Debian 12's own): create refuses with what is missing and which kernel has it, and leaves every
// member as it was, a member it would have made included. It skips on a kernel with ublk.
func TestE2ENoUblkKernel(t *testing.T) {
	if os.Getenv("URAID_GUEST") != "1" || os.Geteuid() != 0 {
		t.Skip("runs in the guest (make test-vm)")
	}
	if _, err := os.Stat("/sys/module/ublk_drv"); err == nil {
		t.Skip("this kernel has ublk: the rest of the suite tests it")
	}
	if _, err := os.Stat("/dev/ublk-control"); err == nil {
		t.Skip("this kernel has ublk: the rest of the suite tests it")
	}
	bin := builtBin(t, "URAID_BIN", "uraid")
	dir := t.TempDir()
	// Two members with bytes of their own, one the create would make.
	var before [][]byte
	var members []string
	for i := range 2 {
		p := filepath.Join(dir, "m"+string(rune('0'+i)))
		b := bytes.Repeat([]byte{byte(0xA0 + i)}, 64<<20)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		members = append(members, p)
		before = append(before, b)
	}
	made := filepath.Join(dir, "m2")
	args := append([]string{"create", "noublk", "--level", "1", "--size", "64M"}, members...)
	args = append(args, made)
	cmd, done := boundedCommand(bin, args...)
	out, err := cmd.CombinedOutput()
	err = done(err)
	require.Error(t, err, "create on a kernel without ublk: %s", out)
	msg := string(out)
	t.Logf("uraid create: %s", strings.TrimSpace(msg))
	assert.Contains(t, msg, "CONFIG_BLK_DEV_UBLK", "names what is missing")
	assert.Contains(t, msg, "6.12", "names the kernel that has it")
	for i, p := range members {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(before[i], b), "member %s changed although create failed", p)
	}
	_, err = os.Stat(made)
	assert.ErrorIs(t, err, os.ErrNotExist, "create made %s although it failed", made)
}
