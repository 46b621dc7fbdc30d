package ublk

import (
	"go/constant"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil/gosrc"
)

func TestFeatureNames(t *testing.T) {
	tests := []struct {
		name string
		in   Features
		want []string
	}{
		{"none", 0, nil},
		{"6.12", 0x1fe, []string{
			"UBLK_F_URING_CMD_COMP_IN_TASK", "UBLK_F_NEED_GET_DATA", "UBLK_F_USER_RECOVERY",
			"UBLK_F_USER_RECOVERY_REISSUE", "UBLK_F_UNPRIVILEGED_DEV", "UBLK_F_CMD_IOCTL_ENCODE",
			"UBLK_F_USER_COPY", "UBLK_F_ZONED",
		}},
		{"7.3 adds bits 0 and 9 to 20", 0x1fffff &^ 0x1fe, []string{
			"UBLK_F_SUPPORT_ZERO_COPY", "UBLK_F_USER_RECOVERY_FAIL_IO", "UBLK_F_UPDATE_SIZE",
			"UBLK_F_AUTO_BUF_REG", "UBLK_F_QUIESCE", "UBLK_F_PER_IO_DAEMON",
			"UBLK_F_BUF_REG_OFF_DAEMON", "UBLK_F_BATCH_IO", "UBLK_F_INTEGRITY",
			"UBLK_F_SAFE_STOP_DEV", "UBLK_F_NO_AUTO_PART_SCAN", "UBLK_F_SHMEM_ZC",
			"UBLK_F_IO_DESC_SIZE",
		}},
		{"unnamed bits", 1<<63 | 1<<21 | 1<<3, []string{"UBLK_F_USER_RECOVERY", "bit 21", "bit 63"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.in.Names())
		})
	}
}

func TestFeaturesHas(t *testing.T) {
	const k612 Features = 0x1fe
	assert.True(t, k612.Has(FeatureUserRecovery|FeatureReissue))
	assert.False(t, k612.Has(FeatureUserRecovery|FeatureAutoBufReg), "one of two is not both")
	assert.False(t, k612.Has(FeatureZeroCopy))
	assert.True(t, k612.Has(0))
}

func TestFeaturesString(t *testing.T) {
	assert.Equal(t, "0", Features(0).String())
	assert.Equal(t, "UBLK_F_SUPPORT_ZERO_COPY|UBLK_F_AUTO_BUF_REG|bit 63", (FeatureZeroCopy | FeatureAutoBufReg | 1<<63).String())
}

// TestFlags: reissue means nothing without user recovery.
func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		f                           Flags
		recovery, reissue, safeStop bool
	}{
		{0, false, false, false},
		{Flags(FeatureUserRecovery), true, false, false},
		{Flags(FeatureReissue), false, false, false},
		{Flags(FeatureUserRecovery | FeatureReissue), true, true, false},
		{Flags(FeatureSafeStop), false, false, true},
	} {
		assert.Equal(t, tt.recovery, tt.f.UserRecovery(), "%#x", uint64(tt.f))
		assert.Equal(t, tt.reissue, tt.f.Reissue(), "%#x", uint64(tt.f))
		assert.Equal(t, tt.safeStop, tt.f.SafeStop(), "%#x", uint64(tt.f))
	}
}

// TestFeatureNamesAreTheUAPINames checks the name table against the
// UBLK_F_* constants of internal/uapi, whose values the C cross-check there
// compares with the kernel headers: every constant is named, by its own
// name, and nothing else is.
func TestFeatureNamesAreTheUAPINames(t *testing.T) {
	pkg := gosrc.Check(t, filepath.Join("..", "internal", "uapi"), "uapi")

	want := map[string]uint64{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok && strings.HasPrefix(name, "UBLK_F_") {
			v, exact := constantUint64(c)
			require.True(t, exact, name)
			want[name] = v
		}
	}
	require.Len(t, want, len(featureNames), "one name per UBLK_F_* constant")
	for _, f := range featureNames {
		v, ok := want[f.name]
		if assert.True(t, ok, "%s is not a constant of internal/uapi", f.name) {
			assert.Equal(t, v, uint64(f.bit), "%s: the table has %#x, uapi %#x", f.name, uint64(f.bit), v)
		}
		assert.Equal(t, f.name, featureName(f.bit))
	}
}

func constantUint64(c *types.Const) (uint64, bool) {
	return constant.Uint64Val(c.Val())
}
