package raid

import (
	"errors"
	"fmt"
	"os"
)

// ErrNoSuperblock means a device holds no uraid superblock: zeroing it would change nothing of
// uraid's, so it is more likely the wrong device.
var ErrNoSuperblock = errors.New("carries no uraid superblock")

// Zeroed is what ZeroSuperblocks erased from one device: its superblock, nil when it had none
// readable (a damaged one, or none at all under force).
type Zeroed struct {
	Path string
	SB   *Superblock
	// Note says why there was no superblock to name: damaged, or none.
	Note string
}

// ZeroSuperblocks erases the uraid superblock of each device (the block at SuperblockOffset,
// zeroed by WipeSuperblock; nothing else is touched), so that it is no member of any array. It
// checks every device first and writes only if all pass: each must be a block device or regular
// file that no other process holds (a running array's daemon holds its members: OpenMember's
// exclusive claim fails), given once, and carry a uraid superblock (a damaged one counts) unless
// force. The caller checks what OpenMember cannot see: members of an array whose daemon died and
// whose device waits for recovery.
func ZeroSuperblocks(paths []string, force bool) ([]Zeroed, error) {
	var open []*Member
	defer func() { closeMembers(open) }()
	var infos []os.FileInfo
	var out []Zeroed
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for i, prev := range infos {
			if os.SameFile(prev, fi) {
				return nil, fmt.Errorf("%s: %w: it is the same device as %s; list each device once", p, ErrDuplicate, paths[i])
			}
		}
		infos = append(infos, fi)
		m, err := OpenMember(p)
		if errors.Is(err, ErrMemberBusy) {
			return nil, fmt.Errorf("%w; if it is a member of a running array, stop the array first (uraid stop NAME; uraid list shows them), "+
				"or take it out of the array (uraid fail, uraid remove)", err)
		}
		if err != nil {
			return nil, err
		}
		open = append(open, m)
		z := Zeroed{Path: p}
		sb, err := ReadSuperblock(m.File)
		switch {
		case err == nil:
			z.SB = sb
		case errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedVersion):
			z.Note = err.Error() // ours, though it cannot be read: erase it
		case errors.Is(err, ErrNotMember) && force:
			z.Note = "no uraid superblock"
		case errors.Is(err, ErrNotMember):
			return nil, fmt.Errorf("%s: %w: nothing to erase; check the device name (uraid examine %s), or give --force to zero the superblock block anyway",
				p, ErrNoSuperblock, p)
		default:
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, z)
	}
	for i, m := range open {
		if err := WipeSuperblock(m.File); err != nil {
			return out[:i], fmt.Errorf("%s: %w (the devices before it are erased, it and those after are not)", m.Path, err)
		}
	}
	return out, nil
}
