package raid

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ByIDDir is where udev links every disk by its identity; tests point it elsewhere.
var ByIDDir = "/dev/disk/by-id"

// StablePath is the path a member is recorded by (in the daemon's record, its status and its
// events), so that it names the same member after the next boot however the kernel numbers the
// disks then:
//
//   - a block device with a link in ByIDDir: that link, picked by how stable its kind of name is:
//     first wwn- and nvme-eui. (the identifiers the drive itself reports, also behind another
//     controller), then ata- and nvme- (model and serial), then any other (scsi-, usb-, dm-uuid-,
//     ...; nvme-nvme. last, a name udev keeps for compatibility only); among names of one rank
//     the shortest, then the first in byte order;
//   - anything else (a regular file, a block device without such a link, a path that does not
//     exist yet): its absolute, cleaned path, so that a relative path means the same thing to a
//     daemon started in another directory.
//
// Links are not otherwise followed: a member named /dev/disk/by-id/... stays so named when that
// link is itself the most stable.
func StablePath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	fi, err := os.Stat(abs)
	if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return abs
	}
	ents, err := os.ReadDir(ByIDDir)
	if err != nil {
		return abs
	}
	best, bestRank := "", 0
	for _, e := range ents {
		link := filepath.Join(ByIDDir, e.Name())
		li, err := os.Stat(link)
		if err != nil || !os.SameFile(li, fi) {
			continue
		}
		r := byIDRank(e.Name())
		if best == "" || r < bestRank || r == bestRank && (len(link) < len(best) || len(link) == len(best) && link < best) {
			best, bestRank = link, r
		}
	}
	if best == "" {
		return abs
	}
	return best
}

// byIDRank orders the kinds of /dev/disk/by-id names, most stable first.
func byIDRank(name string) int {
	switch {
	case strings.HasPrefix(name, "wwn-"), strings.HasPrefix(name, "nvme-eui."):
		return 0
	case strings.HasPrefix(name, "nvme-nvme."):
		return 3
	case strings.HasPrefix(name, "ata-"), strings.HasPrefix(name, "nvme-"):
		return 1
	}
	return 2
}

// StablePaths is StablePath of each path, in a new slice; nil for none.
func StablePaths(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	out := slices.Clone(paths)
	for i, p := range out {
		out[i] = StablePath(p)
	}
	return out
}

// SameMemberPath reports whether a and b name the same member: as written, or once both are
// made stable (a member recorded by its by-id link, named by its /dev/sdX or a relative path).
func SameMemberPath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return filepath.Clean(a) == filepath.Clean(b) || StablePath(a) == StablePath(b)
}
