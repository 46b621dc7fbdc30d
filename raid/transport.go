package raid

import (
	"path/filepath"
	"strings"
)

// onATA reports whether a block device whose /sys/dev/block/MAJ:MIN link resolves to sysfsPath
// sits on a libata port. libata names each port's device directory ataN, and every disk and
// partition behind the port lives below it. Most SATA SSDs run TRIM as a non-queued command,
// so the disk reads and writes nothing until the TRIM is done. NVMe, virtio, loop, ublk and USB
// bridges have no ataN directory and do not match.
func onATA(sysfsPath string) bool {
	for _, elem := range strings.Split(sysfsPath, "/") {
		digits, ok := strings.CutPrefix(elem, "ata")
		if ok && digits != "" && strings.Trim(digits, "0123456789") == "" {
			return true
		}
	}
	return false
}

// probeATA resolves the sysfs directory of the block device rdev and reports whether it is on
// a libata port. A device whose sysfs entry cannot be resolved is taken not to be: the only
// cost is that its TRIMs are not kept apart from its I/O unless the admin says so.
func probeATA(rdev uint64) bool {
	p, err := filepath.EvalSymlinks(sysDev(rdev))
	return err == nil && onATA(p)
}
