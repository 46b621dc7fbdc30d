package raid

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Signature is what util-linux's low-level probe (blkid -p) found on a device: a filesystem, swap,
// a RAID or volume manager member (linux_raid_member, LVM2_member, zfs_member, bcache), an
// encrypted volume (crypto_LUKS), or a partition table. Its fields are blkid's, "" where blkid
// names none.
type Signature struct {
	Type   string // TYPE: ext4, swap, crypto_LUKS, LVM2_member, linux_raid_member, ...
	Usage  string // USAGE: filesystem, raid, crypto, other
	Label  string // LABEL
	UUID   string // UUID
	PTType string // PTTYPE: dos, gpt, ... for a partition table
	// Ambivalent says blkid found more than one signature and would not pick one.
	Ambivalent bool
}

// String names the signature as blkid does: KEY=VALUE for each field it has.
func (s Signature) String() string {
	var parts []string
	for _, kv := range [][2]string{{"TYPE", s.Type}, {"PTTYPE", s.PTType}, {"LABEL", s.Label}, {"UUID", s.UUID}} {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", kv[0], kv[1]))
		}
	}
	if s.Ambivalent {
		parts = append(parts, "more than one signature (wipefs lists them)")
	}
	return strings.Join(parts, " ")
}

// Errors of the signature probe.
var (
	// ErrHasSignature means blkid found a signature on a member: something a user may still want.
	ErrHasSignature = errors.New("carries a signature")
	// ErrNoBlkid means util-linux's blkid is not installed, so a member's signatures cannot be
	// looked for.
	ErrNoBlkid = errors.New("blkid (util-linux) is not installed")
)

// blkidCandidates are where ProbeSignature looks for blkid: PATH first, then where util-linux
// puts it, for a PATH without the sbin directories. Tests change it.
var blkidCandidates = []string{"blkid", "/usr/sbin/blkid", "/sbin/blkid"}

// probeTimeout bounds one blkid run: a device that does not answer must not hang a create.
const probeTimeout = 30 * time.Second

// ProbeSignature runs util-linux's low-level probe (blkid -p -o export: superblocks and partition
// tables, at the device's start and end, as wipefs finds them) on path and returns what it found,
// nil for nothing. A uraid superblock is not among blkid's; ReadSuperblock finds it.
func ProbeSignature(path string) (*Signature, error) {
	blkid := ""
	for _, c := range blkidCandidates {
		if p, err := exec.LookPath(c); err == nil {
			blkid = p
			break
		}
	}
	if blkid == "" {
		return nil, ErrNoBlkid
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, blkid, "-p", "-o", "export", path)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 2: // nothing found
		return nil, nil
	case errors.As(err, &exit) && exit.ExitCode() == 8: // ambivalent: several signatures
		sig := parseExport(out.Bytes())
		sig.Ambivalent = true
		return &sig, nil
	default:
		return nil, fmt.Errorf("%s -p %s: %w: %s", blkid, path, err, strings.TrimSpace(stderr.String()))
	}
	sig := parseExport(out.Bytes())
	if sig.Type == "" && sig.PTType == "" {
		return nil, nil
	}
	return &sig, nil
}

// parseExport reads blkid's -o export lines, KEY=VALUE.
func parseExport(b []byte) Signature {
	var s Signature
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "TYPE":
			s.Type = v
		case "USAGE":
			s.Usage = v
		case "LABEL":
			s.Label = v
		case "UUID":
			s.UUID = v
		case "PTTYPE":
			s.PTType = v
		}
	}
	return s
}

// CheckSignatures refuses a member that carries a signature blkid knows, or a filesystem
// FilesystemOn knows, naming what it found and the fix; force skips it. Without blkid it refuses
// too, naming util-linux, rather than let a member through unlooked at.
func CheckSignatures(m *Member, force bool) error {
	if force {
		return nil
	}
	sig, err := ProbeSignature(m.Path)
	if errors.Is(err, ErrNoBlkid) {
		return fmt.Errorf("member %s: cannot look for signatures (filesystems, LVM, LUKS, md, swap, partition tables): %w; "+
			"install util-linux (apt-get install util-linux), or give --force to overwrite whatever it holds", m.Path, err)
	}
	if err != nil {
		return fmt.Errorf("member %s: look for signatures: %w; give --force to overwrite whatever it holds", m.Path, err)
	}
	if sig != nil {
		kind := ErrHasSignature
		if sig.Usage == "filesystem" {
			kind = fmt.Errorf("%w (%w)", ErrHasSignature, ErrHasFilesystem)
		}
		return fmt.Errorf("member %s: %w: %s; it may hold data: give --force to overwrite it, or erase it first (wipefs -a %s)",
			m.Path, kind, sig, m.Path)
	}
	if fs := FilesystemOn(m.File); fs != "" {
		return fmt.Errorf("member %s: %w (%s); give --force to overwrite it, or erase it first (wipefs -a %s)", m.Path, ErrHasFilesystem, fs, m.Path)
	}
	return nil
}
