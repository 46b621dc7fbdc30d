package ublk

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// ZeroCopy says whether member I/O may use the request's own pages instead
// of copying them through a per-tag buffer.
type ZeroCopy uint8

// Zero-copy choices for Options.ZeroCopy.
const (
	// ZeroCopyAuto uses the best the kernel offers: automatic buffer
	// registration (UBLK_F_AUTO_BUF_REG, Linux 6.16), else explicit
	// registration per request (UBLK_F_SUPPORT_ZERO_COPY, 6.15), else
	// the copy.
	ZeroCopyAuto ZeroCopy = iota
	// ZeroCopyOff always copies, as kernels before 6.15 must.
	ZeroCopyOff
	// ZeroCopyRegister registers each request's buffer explicitly even
	// where the kernel would register it itself: the 6.15 path, for
	// tests and measurements on newer kernels.
	ZeroCopyRegister
)

var zeroCopyNames = [...]string{"auto", "off", "register"}

func (z ZeroCopy) String() string {
	if int(z) < len(zeroCopyNames) {
		return zeroCopyNames[z]
	}
	return fmt.Sprintf("zerocopy(%d)", uint8(z))
}

// ParseZeroCopy reads "auto" (or ""), "off" or "register".
func ParseZeroCopy(s string) (ZeroCopy, error) {
	if s == "" {
		return ZeroCopyAuto, nil
	}
	for i, n := range zeroCopyNames {
		if s == n {
			return ZeroCopy(i), nil
		}
	}
	return 0, fmt.Errorf("zero copy %q: want auto, off or register", s)
}

// ByteTarget is implemented by a RingTarget that reads or writes request
// data itself through Request.Buf, rather than only through
// Request.PrepReadInto and PrepWriteFrom. NeedsBytes true keeps the device
// copying: in zero-copy mode no mapping of the data exists in the server.
// A Target that is not a RingTarget always gets the copy.
type ByteTarget interface {
	NeedsBytes() bool
}

// dataMode is how a queue moves request data, fixed for the life of the
// device.
type dataMode uint8

const (
	// modeCopy: per-tag buffers the kernel copies to and from.
	modeCopy dataMode = iota
	// modeAutoReg: the kernel registers each request's pages at index
	// tag of the queue ring's buffer table before delivering it, and
	// unregisters them at commit (UBLK_F_AUTO_BUF_REG). A request it
	// could not register arrives with UBLK_IO_F_NEED_REG_BUF and is
	// registered as in modeRegister.
	modeAutoReg
	// modeRegister: the queue registers each request's pages with
	// UBLK_U_IO_REGISTER_IO_BUF before serving it and unregisters them
	// before committing (UBLK_F_SUPPORT_ZERO_COPY).
	modeRegister
)

var dataModeNames = [...]string{"copy", "auto-buf-reg", "register"}

func (m dataMode) String() string { return dataModeNames[m] }

func (m dataMode) zeroCopy() bool { return m != modeCopy }

// ZeroCopyStatus says how a started device moves request data, and why
// not without a copy when it copies.
type ZeroCopyStatus struct {
	// On is true when member I/O uses the request's own pages.
	On bool
	// Mode is "auto-buf-reg", "register" or "copy".
	Mode string
	// Reason explains a copy; empty when On.
	Reason string
	// BufferBytes is the memory the server maps for copies of request
	// data, over all queues: none in zero-copy mode, where no mapping
	// of the data exists in the server and so no byte can be copied.
	BufferBytes int64
}

// chooseMode picks the data mode for a new device from the option, the
// target and the kernel's features; reason explains a copy.
func chooseMode(want ZeroCopy, t Target, features Features, kernel string) (m dataMode, reason string) {
	if want == ZeroCopyOff {
		return modeCopy, "turned off (zero copy mode off)"
	}
	if _, ok := t.(RingTarget); !ok {
		return modeCopy, fmt.Sprintf("the target (%T) moves the data itself, not on the queue ring", t)
	}
	if bt, ok := t.(ByteTarget); ok && bt.NeedsBytes() {
		return modeCopy, fmt.Sprintf("the target (%T) reads or writes the request's bytes itself", t)
	}
	auto, reg := features.Has(FeatureAutoBufReg), features.Has(FeatureZeroCopy)
	switch {
	case want == ZeroCopyRegister && reg:
		return modeRegister, ""
	case want == ZeroCopyRegister:
		return modeCopy, fmt.Sprintf("kernel %s lacks UBLK_F_SUPPORT_ZERO_COPY (Linux 6.15)", kernel)
	case auto:
		return modeAutoReg, ""
	case reg:
		return modeRegister, ""
	}
	return modeCopy, fmt.Sprintf("kernel %s lacks UBLK_F_AUTO_BUF_REG and UBLK_F_SUPPORT_ZERO_COPY (Linux 6.16 and 6.15)", kernel)
}

// modeFlags are the ADD_DEV flags a mode needs. Automatic registration
// also asks for explicit registration where the kernel has it, which is
// how a request the driver could not register is still served.
func modeFlags(m dataMode, features Features) Features {
	switch m {
	case modeAutoReg:
		return FeatureAutoBufReg | features&FeatureZeroCopy
	case modeRegister:
		return FeatureZeroCopy
	}
	return 0
}

// flagsMode is the mode of a device the kernel already has, from its
// flags: a recovering server must serve it the way it was created.
func flagsMode(flags uint64) dataMode {
	switch {
	case flags&uapi.UBLK_F_AUTO_BUF_REG != 0:
		return modeAutoReg
	case flags&uapi.UBLK_F_SUPPORT_ZERO_COPY != 0:
		return modeRegister
	}
	return modeCopy
}

// kernelRelease is the running kernel's release, e.g. "6.12.43+deb12-amd64",
// shortened to its version for messages.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "(unknown)"
	}
	rel := unix.ByteSliceToString(u.Release[:])
	if i := strings.IndexAny(rel, "+-"); i > 0 {
		rel = rel[:i]
	}
	return rel
}
