//go:build uraid_plant

package plant

import "sync/atomic"

var planted atomic.Pointer[string]

// Is reports whether defect name is planted.
func Is(name string) bool {
	p := planted.Load()
	return p != nil && *p == name
}

// Set plants defect name ("": none).
func Set(name string) { planted.Store(&name) }

// Enabled reports whether this build can plant defects.
const Enabled = true
