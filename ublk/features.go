package ublk

import (
	"math/bits"
	"strconv"

	"uraid/internal/uapi"
)

// Features returns the UBLK_F_* bits the running driver supports, as
// UBLK_U_CMD_GET_FEATURES reports them: 0x1FE on 6.12, more on later
// kernels (FeatureNames names them).
func Features() (uint64, error) {
	c, err := openControl()
	if err != nil {
		return 0, err
	}
	defer c.close()
	return c.getFeatures()
}

// featureNames are the kernel's names of the UBLK_F_* bits
// (include/uapi/linux/ublk_cmd.h).
var featureNames = []struct {
	bit  uint64
	name string
}{
	{uapi.UBLK_F_SUPPORT_ZERO_COPY, "UBLK_F_SUPPORT_ZERO_COPY"},
	{uapi.UBLK_F_URING_CMD_COMP_IN_TASK, "UBLK_F_URING_CMD_COMP_IN_TASK"},
	{uapi.UBLK_F_NEED_GET_DATA, "UBLK_F_NEED_GET_DATA"},
	{uapi.UBLK_F_USER_RECOVERY, "UBLK_F_USER_RECOVERY"},
	{uapi.UBLK_F_USER_RECOVERY_REISSUE, "UBLK_F_USER_RECOVERY_REISSUE"},
	{uapi.UBLK_F_UNPRIVILEGED_DEV, "UBLK_F_UNPRIVILEGED_DEV"},
	{uapi.UBLK_F_CMD_IOCTL_ENCODE, "UBLK_F_CMD_IOCTL_ENCODE"},
	{uapi.UBLK_F_USER_COPY, "UBLK_F_USER_COPY"},
	{uapi.UBLK_F_ZONED, "UBLK_F_ZONED"},
	{uapi.UBLK_F_USER_RECOVERY_FAIL_IO, "UBLK_F_USER_RECOVERY_FAIL_IO"},
	{uapi.UBLK_F_UPDATE_SIZE, "UBLK_F_UPDATE_SIZE"},
	{uapi.UBLK_F_AUTO_BUF_REG, "UBLK_F_AUTO_BUF_REG"},
	{uapi.UBLK_F_QUIESCE, "UBLK_F_QUIESCE"},
	{uapi.UBLK_F_PER_IO_DAEMON, "UBLK_F_PER_IO_DAEMON"},
	{uapi.UBLK_F_BUF_REG_OFF_DAEMON, "UBLK_F_BUF_REG_OFF_DAEMON"},
	{uapi.UBLK_F_BATCH_IO, "UBLK_F_BATCH_IO"},
	{uapi.UBLK_F_INTEGRITY, "UBLK_F_INTEGRITY"},
	{uapi.UBLK_F_SAFE_STOP_DEV, "UBLK_F_SAFE_STOP_DEV"},
	{uapi.UBLK_F_NO_AUTO_PART_SCAN, "UBLK_F_NO_AUTO_PART_SCAN"},
	{uapi.UBLK_F_SHMEM_ZC, "UBLK_F_SHMEM_ZC"},
	{uapi.UBLK_F_IO_DESC_SIZE, "UBLK_F_IO_DESC_SIZE"},
}

// FeatureName returns the kernel's name of one UBLK_F_* bit, or "bit N"
// for a bit newer than this package.
func FeatureName(bit uint64) string {
	for _, f := range featureNames {
		if f.bit == bit {
			return f.name
		}
	}
	return "bit " + strconv.Itoa(bits.TrailingZeros64(bit))
}

// FeatureNames returns the names of the bits set in f, lowest first, as
// FeatureName gives them.
func FeatureNames(f uint64) []string {
	var names []string
	for f != 0 {
		bit := f & -f
		names = append(names, FeatureName(bit))
		f &^= bit
	}
	return names
}
