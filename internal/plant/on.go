//go:build uraid_plant

package plant

import (
	"os"
	"sync/atomic"
)

var planted atomic.Pointer[string]

// A unit test that guards a defect the harness cannot see runs with it planted by the
// environment: URAID_PLANT=steer go test -tags uraid_plant ./discard/ (make test-planted-unit).
func init() {
	if name := os.Getenv("URAID_PLANT"); name != "" {
		Set(name)
	}
}

// Is reports whether defect name is planted.
func Is(name string) bool {
	p := planted.Load()
	return p != nil && *p == name
}

// Set plants defect name ("": none).
func Set(name string) { planted.Store(&name) }

// Enabled reports whether this build can plant defects.
const Enabled = true
