package tests

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
	"uraid/ublk"
)

// kernelFeatures is what the running ublk driver answers to GET_FEATURES,
// asked once.
var kernelFeatures = sync.OnceValues(ublk.KernelFeatures)

// expectedFeatures is what GET_FEATURES answers on each kernel series the
// guest can boot (tests/vm/vm KERNEL=...), as measured there. A kernel that
// reports fewer bits has lost a feature; one that reports more has features
// to name (internal/uapi) and to think about.
var expectedFeatures = map[string]ublk.Features{
	"6.12": 0x1fe,
	"7.2":  0xfffff,
	"7.3":  0x1fffff,
}

// needFeature skips t, saying why, when the kernel's ublk driver lacks
// feature (UBLK_F_* bits, all of them needed). That skip stands even under
// URAID_E2E=1: TestE2EGuestKernel checks that the bits a known kernel lacks
// are the ones it is known to lack. When the driver has the feature, t runs,
// a failure from there on is the feature not working, and t may no longer
// skip: a skip after needFeature fails it.
func needFeature(t testing.TB, feature ublk.Features) {
	t.Helper()
	if feature == 0 {
		t.Fatal("needFeature: no feature bit given")
	}
	needGuest(t)
	have, err := kernelFeatures()
	if err != nil {
		t.Fatalf("ublk GET_FEATURES: %v", err)
	}
	if why := lacksFeature(have, feature, kernelRelease(t)); why != "" {
		t.Skip(why)
	}
	t.Cleanup(func() {
		if t.Skipped() {
			t.Errorf("skipped although the kernel has %s: a test that needFeature let through must run",
				strings.Join(feature.Names(), ", "))
		}
	})
}

// lacksFeature says why a test of feature cannot run on kernel release,
// whose driver reports have, or returns "" when it can.
func lacksFeature(have, feature ublk.Features, release string) string {
	if missing := feature &^ have; missing != 0 {
		return fmt.Sprintf("Linux %s lacks %s (GET_FEATURES 0x%x)", release,
			strings.Join(missing.Names(), ", "), uint64(have))
	}
	return ""
}

func kernelRelease(t testing.TB) string {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(os.NewSyscallError("uname", err))
	}
	return unix.ByteSliceToString(u.Release[:])
}

func TestLacksFeature(t *testing.T) {
	const recovery, failIO = uapi.UBLK_F_USER_RECOVERY, uapi.UBLK_F_USER_RECOVERY_FAIL_IO
	tests := []struct {
		name          string
		have, feature ublk.Features
		want          string
	}{
		{"present", 0x1fe, recovery, ""},
		{"all of a mask present", 0x3fe, recovery | failIO, ""},
		{"absent", 0x1fe, failIO, "Linux 6.12.117 lacks UBLK_F_USER_RECOVERY_FAIL_IO (GET_FEATURES 0x1fe)"},
		{"names only the bits missing", 0x1fe, recovery | failIO | 1<<30,
			"Linux 6.12.117 lacks UBLK_F_USER_RECOVERY_FAIL_IO, bit 30 (GET_FEATURES 0x1fe)"},
		{"a driver with nothing", 0, recovery, "Linux 6.12.117 lacks UBLK_F_USER_RECOVERY (GET_FEATURES 0x0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lacksFeature(tt.have, tt.feature, "6.12.117"); got != tt.want {
				t.Errorf("lacksFeature(%#x, %#x) = %q, want %q", uint64(tt.have), uint64(tt.feature), got, tt.want)
			}
		})
	}
}
