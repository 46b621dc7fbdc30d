package raid

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Scanning finds the members of arrays by their superblocks, for assembly at boot: on every
// block device the kernel has, and on the member files (or devices) a configuration file names.

// DefaultSysBlock is where the kernel lists its block devices.
const DefaultSysBlock = "/sys/class/block"

// scanReadTimeout bounds the wait for one device's superblock: a dying disk must not hold up
// the assembly of every other array.
const scanReadTimeout = 10 * time.Second

// BlockCandidates lists the block devices under sysBlock (DefaultSysBlock) that may be members,
// as /dev paths, sorted. It leaves out:
//   - ublk devices (ublkb*, ublkc*): the arrays' own devices hold the user's data, and one whose
//     daemon died is quiesced, so that reading it would wait for a new daemon;
//   - devices with holders (a dm or md device built on them): the holder is the member;
//   - disks with partitions: the partitions are listed instead;
//   - devices of size 0: an empty loop device or drive.
func BlockCandidates(sysBlock string) ([]string, error) {
	ents, err := os.ReadDir(sysBlock)
	if err != nil {
		return nil, fmt.Errorf("scan block devices: %w", err)
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		dir := filepath.Join(sysBlock, name)
		switch {
		case strings.HasPrefix(name, "ublkb"), strings.HasPrefix(name, "ublkc"):
			continue
		case sysfsInt(filepath.Join(dir, "size")) <= 0:
			continue
		case hasEntries(filepath.Join(dir, "holders")):
			continue
		case hasPartitions(dir, name):
			continue
		}
		// The kernel names the node under /dev after the sysfs entry ('!' standing for '/').
		out = append(out, "/dev/"+strings.ReplaceAll(name, "!", "/"))
	}
	slices.Sort(out)
	return out, nil
}

func hasEntries(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

// hasPartitions reports whether the disk at dir has partitions: subdirectories with a partition
// file, named after it.
func hasPartitions(dir, name string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), name) {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition")); err == nil {
				return true
			}
		}
	}
	return false
}

// Found is one array whose members a scan found.
type Found struct {
	Name    string
	UUID    UUID
	Members []MemberSB
}

// ScanResult is what Scan found: the arrays (sorted by name), and the paths it could not read,
// with why (a path without a superblock is no member and is not listed).
type ScanResult struct {
	Arrays     []Found
	Unreadable map[string]error
}

// Scan reads the superblock of every path (each once) and groups the members found by array.
func Scan(paths []string) ScanResult {
	type read struct {
		path string
		sb   *Superblock
		err  error
	}
	seen, pending := map[string]bool{}, map[string]bool{}
	results := make(chan read, len(paths))
	n := 0
	for _, p := range paths {
		key := p
		if r, err := filepath.EvalSymlinks(p); err == nil {
			key = r
		}
		if seen[key] {
			continue
		}
		seen[key], pending[p] = true, true
		n++
		go func() {
			sb, err := readSuperblockAt(p)
			results <- read{p, sb, err}
		}()
	}
	res := ScanResult{Unreadable: map[string]error{}}
	byUUID := map[UUID]*Found{}
	deadline := time.After(scanReadTimeout)
	for ; n > 0; n-- {
		var r read
		select {
		case r = <-results:
		case <-deadline:
			// The stragglers' goroutines end whenever their reads do.
			return res.finish(byUUID, fmt.Errorf("no answer within %v", scanReadTimeout), pending)
		}
		switch {
		case errors.Is(r.err, ErrNotMember):
		case r.err != nil:
			res.Unreadable[r.path] = r.err
		default:
			f := byUUID[r.sb.ArrayUUID]
			if f == nil {
				f = &Found{Name: r.sb.Name, UUID: r.sb.ArrayUUID}
				byUUID[r.sb.ArrayUUID] = f
			}
			f.Members = append(f.Members, MemberSB{Path: r.path, SB: r.sb})
		}
		delete(pending, r.path)
	}
	return res.finish(byUUID, nil, nil)
}

// finish sorts what was found; the paths left in pending did not answer with err.
func (res ScanResult) finish(byUUID map[UUID]*Found, err error, pending map[string]bool) ScanResult {
	for _, f := range byUUID {
		slices.SortFunc(f.Members, func(a, b MemberSB) int { return cmp.Compare(a.Path, b.Path) })
		res.Arrays = append(res.Arrays, *f)
	}
	slices.SortFunc(res.Arrays, func(a, b Found) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), slices.Compare(a.UUID[:], b.UUID[:]))
	})
	for p := range pending {
		res.Unreadable[p] = err
	}
	return res
}

// readSuperblockAt reads the superblock at path without claiming the device (a running array's
// members are open exclusively by its daemon), past the page cache where it can, which may hold
// an older copy of a block device's superblock than the device.
func readSuperblockAt(path string) (*Superblock, error) {
	f, _, err := openDirect(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSuperblock(f)
}
