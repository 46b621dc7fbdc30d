//go:build !uraid_plant

package plant

// Is reports whether defect name is planted: never, in a build without uraid_plant.
func Is(name string) bool { return false }

// Set plants defect name ("": none); it does nothing without uraid_plant.
func Set(name string) {}

// Enabled reports whether this build can plant defects.
const Enabled = false
