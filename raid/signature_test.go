package raid

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/mapping"
)

// needTool skips a test whose setup needs a program this host lacks.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (util-linux, e2fsprogs, cryptsetup): install it to run this test", name)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
}

// dosTable writes an MBR partition table with one Linux partition, as fdisk would.
func dosTable(t *testing.T, p string) {
	b := make([]byte, 512)
	b[446+4] = 0x83
	binary.LittleEndian.PutUint32(b[446+8:], 2048)
	binary.LittleEndian.PutUint32(b[446+12:], 8192)
	b[510], b[511] = 0x55, 0xAA
	writeAt(t, p, b, 0)
}

// mdSuper writes an md v1.2 superblock (4 KiB in, as mdadm --create puts it), with its checksum:
// what a linux_raid_member carries, made without the kernel's md.
func mdSuper(t *testing.T, p string) {
	b := make([]byte, 256+2*2)
	le := binary.LittleEndian
	le.PutUint32(b[0:], 0xa92b4efc) // magic
	le.PutUint32(b[4:], 1)          // major_version
	copy(b[16:32], "0123456789abcdef")
	copy(b[32:], "host:md0")
	le.PutUint32(b[72:], 1)     // level
	le.PutUint64(b[80:], 8192)  // size, sectors
	le.PutUint32(b[92:], 2)     // raid_disks
	le.PutUint64(b[128:], 2048) // data_offset
	le.PutUint64(b[136:], 8192) // data_size
	le.PutUint64(b[144:], 8)    // super_offset: 4 KiB, in sectors
	copy(b[168:184], "fedcba9876543210")
	le.PutUint64(b[200:], 1) // events
	le.PutUint32(b[220:], 2) // max_dev
	var sum uint64
	for i := 0; i+4 <= len(b); i += 4 {
		sum += uint64(le.Uint32(b[i:]))
	}
	le.PutUint32(b[216:], uint32(sum&0xffffffff+sum>>32))
	writeAt(t, p, b, 4096)
}

func writeAt(t *testing.T, p string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCreateRefusesSignatures makes members carrying what blkid finds (swap, ext4, a DOS partition
// table, an md superblock, LUKS where cryptsetup is installed), and checks that create refuses
// each, naming what it found and the fix, with the member byte for byte as it was; and that
// --force then overwrites it.
func TestCreateRefusesSignatures(t *testing.T) {
	needTool(t, "blkid")
	tests := []struct {
		name string
		tool string
		make func(t *testing.T, p string)
		want []string
	}{
		{"swap", "mkswap", func(t *testing.T, p string) { run(t, "mkswap", "-L", "oldswap", p) }, []string{`TYPE="swap"`, `LABEL="oldswap"`, "UUID="}},
		{"ext4", "mkfs.ext4", func(t *testing.T, p string) { run(t, "mkfs.ext4", "-q", "-F", "-L", "olddata", p) }, []string{`TYPE="ext4"`, `LABEL="olddata"`}},
		{"dos partition table", "", dosTable, []string{`PTTYPE="dos"`}},
		{"md superblock", "", mdSuper, []string{`TYPE="linux_raid_member"`, `LABEL="host:md0"`}},
		{"luks", "cryptsetup", func(t *testing.T, p string) {
			c := exec.Command("cryptsetup", "luksFormat", "-q", "--type", "luks2", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", p, "-")
			c.Stdin = strings.NewReader("secret")
			out, err := c.CombinedOutput()
			require.NoError(t, err, "%s", out)
		}, []string{`TYPE="crypto_LUKS"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tool != "" {
				needTool(t, tt.tool)
			}
			dir := t.TempDir()
			ps := []string{testutil.SparseFile(t, dir, "m0", 32*mib), testutil.SparseFile(t, dir, "m1", 32*mib)}
			tt.make(t, ps[1])
			before := fullSum(t, ps)
			_, _, err := Create(CreateOptions{Name: "sig", Level: mapping.RAID1, Members: ps})
			require.ErrorIs(t, err, ErrHasSignature)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Contains(t, err.Error(), "member "+ps[1])
			assert.Contains(t, err.Error(), "--force")
			assert.Contains(t, err.Error(), "wipefs -a "+ps[1])
			assert.Equal(t, before, fullSum(t, ps), "a refused create changed a member")

			ms, _, err := Create(CreateOptions{Name: "sig", Level: mapping.RAID1, Members: ps, Force: true})
			require.NoError(t, err, "--force overwrites it")
			closeAll(ms)
		})
	}
}

// TestCreateWithoutBlkid: with no blkid the members cannot be looked at, and create says so,
// naming util-linux, rather than let them through; --force goes on without looking.
func TestCreateWithoutBlkid(t *testing.T) {
	old := blkidCandidates
	blkidCandidates = []string{filepath.Join(t.TempDir(), "no-blkid")}
	t.Cleanup(func() { blkidCandidates = old })
	dir := testutil.MemDir(t)
	ps := []string{testutil.SparseFile(t, dir, "m0", 8*mib), testutil.SparseFile(t, dir, "m1", 8*mib)}
	before := fullSum(t, ps)
	_, _, err := Create(CreateOptions{Name: "nob", Level: mapping.RAID1, Members: ps})
	require.ErrorIs(t, err, ErrNoBlkid)
	assert.Contains(t, err.Error(), "install util-linux")
	assert.Contains(t, err.Error(), "--force")
	assert.Equal(t, before, fullSum(t, ps))
	ms, _, err := Create(CreateOptions{Name: "nob", Level: mapping.RAID1, Members: ps, Force: true})
	require.NoError(t, err)
	closeAll(ms)
}

func TestParseExport(t *testing.T) {
	s := parseExport([]byte("DEVNAME=/dev/sdb\nLABEL=sw\nUUID=77d9\nVERSION=1\nTYPE=swap\nUSAGE=other\n"))
	assert.Equal(t, Signature{Type: "swap", Usage: "other", Label: "sw", UUID: "77d9"}, s)
	assert.Equal(t, `TYPE="swap" LABEL="sw" UUID="77d9"`, s.String())
	assert.Equal(t, `PTTYPE="gpt"`, parseExport([]byte("DEVNAME=x\nPTUUID=1\nPTTYPE=gpt\n")).String())
}
