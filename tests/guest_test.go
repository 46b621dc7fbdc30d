package tests

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// mustRunE2E reports whether a test that cannot run must fail rather than skip.
func mustRunE2E() bool { return os.Getenv("URAID_E2E") == "1" }

// needGuest skips (or, under URAID_E2E=1, fails) t unless it runs as root on a kernel with ublk.
func needGuest(t testing.TB) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "needs root"
	default:
		if _, err := os.Stat("/dev/ublk-control"); err != nil {
			why = "needs /dev/ublk-control (a kernel with ublk_drv loaded)"
		}
	}
	if why == "" {
		return
	}
	if mustRunE2E() {
		t.Fatalf("%s, and URAID_E2E=1 forbids skipping", why)
	}
	t.Skipf("%s: run make test-vm", why)
}

// TestE2EGuestKernel checks the guest the suite runs in: the kernel it was asked for (tests/vm/vm
// KERNEL=), new enough for asynchronous member discard (BLOCK_URING_CMD_DISCARD, 6.12), with ublk
// loaded and a driver that reports exactly the features recorded for its series.
func TestE2EGuestKernel(t *testing.T) {
	needGuest(t)
	release := kernelRelease(t)
	major, minor, ok := parseRelease(release)
	if !ok {
		t.Fatalf("cannot parse kernel release %q", release)
	}
	if major < 6 || (major == 6 && minor < 12) {
		t.Fatalf("kernel %s: the guest suite needs Linux >= 6.12", release)
	}
	series := strconv.Itoa(major) + "." + strconv.Itoa(minor)
	if asked := os.Getenv("URAID_VM_SERIES"); asked != "" && asked != series {
		t.Fatalf("the guest was asked for KERNEL=%s but runs Linux %s", asked, release)
	}
	fi, err := os.Stat("/dev/ublk-control")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/ublk-control is %v, want a character device", fi.Mode())
	}

	have, err := kernelFeatures()
	if err != nil {
		t.Fatalf("ublk GET_FEATURES: %v", err)
	}
	t.Logf("Linux %s, ublk GET_FEATURES 0x%x: %s", release, uint64(have), strings.Join(have.Names(), " "))
	want, known := expectedFeatures[series]
	if !known {
		t.Logf("no GET_FEATURES recorded for Linux %s: once its features are looked at, add 0x%x to expectedFeatures", series, uint64(have))
		return
	}
	if have != want {
		t.Errorf("Linux %s reports GET_FEATURES 0x%x, recorded 0x%x: lost [%s], gained [%s]", release, uint64(have), uint64(want),
			strings.Join((want&^have).Names(), " "), strings.Join((have&^want).Names(), " "))
	}
}

func parseRelease(r string) (major, minor int, ok bool) {
	parts := strings.SplitN(r, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	// The minor number may carry a suffix ("12-rc1").
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(parts[1])
	}
	minor, err2 := strconv.Atoi(parts[1][:digits])
	return major, minor, err1 == nil && err2 == nil
}

func TestParseRelease(t *testing.T) {
	for _, c := range []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"6.12.117+deb12-amd64", 6, 12, true},
		{"5.15.0-91-generic", 5, 15, true},
		{"6.13-rc1", 6, 13, true},
		{"6", 0, 0, false},
		{"x.y", 0, 0, false},
	} {
		ma, mi, ok := parseRelease(c.in)
		if ok != c.ok || (ok && (ma != c.major || mi != c.minor)) {
			t.Errorf("parseRelease(%q) = %d, %d, %v; want %d, %d, %v", c.in, ma, mi, ok, c.major, c.minor, c.ok)
		}
	}
}
