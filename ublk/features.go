package ublk

import (
	"math/bits"
	"strconv"
	"strings"

	"uraid/internal/uapi"
)

// Features is a set of UBLK_F_* bits: those a driver supports, as
// KernelFeatures reports them, or those asked of it for a device.
type Features uint64

// The features this package serves with or looks for; String names the
// others too.
const (
	// FeatureZeroCopy: the server registers a request's buffer in its
	// io_uring itself (UBLK_U_IO_REGISTER_IO_BUF), Linux 6.15.
	FeatureZeroCopy Features = uapi.UBLK_F_SUPPORT_ZERO_COPY
	// FeatureUserRecovery: the device outlives its server, quiesced,
	// until a new one takes it over.
	FeatureUserRecovery Features = uapi.UBLK_F_USER_RECOVERY
	// FeatureReissue: with user recovery, the requests the dead server
	// held go to the next one instead of failing.
	FeatureReissue Features = uapi.UBLK_F_USER_RECOVERY_REISSUE
	// FeatureAutoBufReg: the driver registers each request's buffer in
	// the server's io_uring before delivering it, Linux 6.16.
	FeatureAutoBufReg Features = uapi.UBLK_F_AUTO_BUF_REG
	// FeatureBatchIO: many requests per command (UBLK_U_IO_PREP/COMMIT/
	// FETCH_IO_CMDS), Linux 6.19.
	FeatureBatchIO Features = uapi.UBLK_F_BATCH_IO
	// FeatureSafeStop: the driver refuses, itself, to stop a device that
	// is open (UBLK_U_CMD_TRY_STOP_DEV).
	FeatureSafeStop Features = uapi.UBLK_F_SAFE_STOP_DEV
)

// KernelFeatures returns the features the running driver supports, as
// UBLK_U_CMD_GET_FEATURES reports them: 0x1FE on 6.12, more on later
// kernels.
func KernelFeatures() (Features, error) {
	c, err := openControl()
	if err != nil {
		return 0, err
	}
	defer c.close()
	return c.getFeatures()
}

// Available says whether this process can serve ublk devices: /dev/ublk-control exists, opens,
// and answers a command. Its error (ErrNoUblk, ErrPermission) names the cause and the fix, e.g.
// the ublk_drv module to load with modprobe; create asks it before writing to any member.
func Available() error {
	_, err := KernelFeatures()
	return err
}

// Has reports whether f has every feature of want.
func (f Features) Has(want Features) bool { return f&want == want }

// Names returns the kernel's names of the bits set in f, lowest first, and
// "bit N" for a bit newer than this package.
func (f Features) Names() []string {
	var names []string
	for f != 0 {
		bit := f & -f
		names = append(names, featureName(bit))
		f &^= bit
	}
	return names
}

// String joins Names with "|", or is "0" for no feature. Being a
// Stringer, f prints as this even under %x: print uint64(f) for the bits.
func (f Features) String() string {
	if f == 0 {
		return "0"
	}
	return strings.Join(f.Names(), "|")
}

// Flags are the features a device has: those asked of the driver that it
// supports, plus those it forces on (ctrl_dev_info.flags).
type Flags Features

// UserRecovery reports whether the device outlives its server (quiesced,
// waiting for a new one) rather than being removed with it.
func (f Flags) UserRecovery() bool { return Features(f).Has(FeatureUserRecovery) }

// Reissue reports whether requests the server held when it died go to
// the next server (UBLK_F_USER_RECOVERY_REISSUE) rather than failing.
func (f Flags) Reissue() bool { return Features(f).Has(FeatureUserRecovery | FeatureReissue) }

// SafeStop reports whether the driver refuses, itself, to stop the device
// while it is open (UBLK_F_SAFE_STOP_DEV).
func (f Flags) SafeStop() bool { return Features(f).Has(FeatureSafeStop) }

// featureNames are the kernel's names of the UBLK_F_* bits
// (include/uapi/linux/ublk_cmd.h).
var featureNames = []struct {
	bit  Features
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

// featureName returns the kernel's name of one UBLK_F_* bit, or "bit N".
func featureName(bit Features) string {
	for _, f := range featureNames {
		if f.bit == bit {
			return f.name
		}
	}
	return "bit " + strconv.Itoa(bits.TrailingZeros64(uint64(bit)))
}
