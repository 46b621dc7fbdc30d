package raid

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil"
	"uraid/mapping"
)

const mib = 1 << 20

// snapshot fingerprints each path's content, or records that it does not exist. It hashes the
// size and the data segments with their offsets: holes read as zeros, so that is the content, and
// the sparse members of these tests cost their written bytes, not their size.
func snapshot(t *testing.T, paths []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out[p] = "directory"
			continue
		}
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			out[p] = "absent"
			continue
		}
		require.NoError(t, err)
		out[p] = contentSum(t, f)
		f.Close()
	}
	return out
}

func contentSum(t *testing.T, f *os.File) string {
	t.Helper()
	fi, err := f.Stat()
	require.NoError(t, err)
	h := sha256.New()
	fmt.Fprintf(h, "size %d\n", fi.Size())
	fd := int(f.Fd())
	for off := int64(0); off < fi.Size(); {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err == unix.ENXIO { // no data past off
			break
		}
		require.NoError(t, err)
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		require.NoError(t, err)
		buf := make([]byte, hole-data)
		_, err = f.ReadAt(buf, data)
		require.NoError(t, err)
		fmt.Fprintf(h, "data %d\n", data)
		h.Write(buf)
		off = hole
	}
	return string(h.Sum(nil))
}

func closeAll(ms []*Member) {
	for _, m := range ms {
		m.Close()
	}
}

func TestCreateWritesSuperblocks(t *testing.T) {
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1"), testutil.SparseFile(t, dir, "m2", 64*mib), filepath.Join(dir, "sub", "m3")}
	ms, sbs, err := Create(CreateOptions{Name: "t", Level: mapping.RAID10, Size: 64 * mib, Members: paths})
	require.NoError(t, err)
	closeAll(ms)
	require.Len(t, sbs, 4)

	var read []MemberSB
	for i, p := range paths {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.EqualValues(t, 64*mib, fi.Size(), p)
		f, err := os.Open(p)
		require.NoError(t, err)
		sb, err := ReadSuperblock(f)
		f.Close()
		require.NoError(t, err)
		assert.EqualValues(t, i, sb.Index)
		assert.Equal(t, mapping.Near2, sb.Layout)
		assert.EqualValues(t, mapping.DefaultChunkBytes, sb.ChunkSize)
		assert.EqualValues(t, 63*mib, sb.DataSize)
		read = append(read, MemberSB{Path: p, SB: sb})
	}
	a, err := CheckAssembly(read)
	require.NoError(t, err)
	m, err := MapOf(&a.Newest)
	require.NoError(t, err)
	// 63 MiB per member holds 126 whole 512 KiB chunks; four members, two copies.
	assert.EqualValues(t, 4*126*mapping.DefaultChunkBytes/2, m.Size())
}

func TestCreateRefusals(t *testing.T) {
	type setup func(t *testing.T, dir string) CreateOptions
	member := func(t *testing.T, dir string, n int) []string {
		var ps []string
		for i := range n {
			ps = append(ps, testutil.SparseFile(t, dir, "m"+string(rune('0'+i)), 16*mib))
		}
		return ps
	}
	tests := []struct {
		name  string
		setup setup
		want  error
		msg   string
	}{
		{"superblock present", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 2)
			ms, _, err := Create(CreateOptions{Name: "old", Level: mapping.RAID1, Members: ps})
			require.NoError(t, err)
			closeAll(ms)
			return CreateOptions{Name: "new", Level: mapping.RAID0, Members: ps}
		}, ErrHasSuperblock, "--force"},
		{"filesystem present", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 2)
			f, err := os.OpenFile(ps[1], os.O_RDWR, 0)
			require.NoError(t, err)
			var magic [2]byte
			binary.LittleEndian.PutUint16(magic[:], 0xEF53)
			_, err = f.WriteAt(magic[:], 1024+56)
			require.NoError(t, err)
			f.Close()
			return CreateOptions{Name: "t", Level: mapping.RAID0, Members: ps}
		}, ErrHasFilesystem, "ext2"},
		{"duplicate path", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 2)
			return CreateOptions{Name: "t", Level: mapping.RAID1, Members: []string{ps[0], ps[1], ps[0]}}
		}, ErrDuplicate, "list each member once"},
		{"duplicate through a link", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 2)
			l := filepath.Join(dir, "link")
			require.NoError(t, os.Symlink(ps[0], l))
			return CreateOptions{Name: "t", Level: mapping.RAID1, Members: []string{ps[0], ps[1], l}}
		}, ErrDuplicate, "same disk"},
		{"too small", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 1)
			return CreateOptions{Name: "t", Level: mapping.RAID0, Members: append(ps, testutil.SparseFile(t, dir, "tiny", 1536*1024))}
		}, ErrTooSmall, "tiny"},
		{"size beyond a member", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID1, Size: 32 * mib, Members: member(t, dir, 2)}
		}, ErrTooSmall, "smaller --size"},
		{"chunk not a power of two", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID0, Chunk: 12 << 10, Members: member(t, dir, 2)}
		}, ErrBadGeometry, "power of two"},
		{"chunk too small", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID10, Chunk: 2048, Members: member(t, dir, 2)}
		}, ErrBadGeometry, "4K"},
		{"chunk on raid1", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID1, Chunk: 64 << 10, Members: member(t, dir, 2)}
		}, ErrBadGeometry, "levels 0 and 10"},
		{"layout on raid0", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID0, Layout: mapping.Far2, Members: member(t, dir, 2)}
		}, ErrBadGeometry, "level 10 only"},
		{"raid1 of one", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID1, Members: member(t, dir, 1)}
		}, ErrBadGeometry, "at least 2"},
		{"missing member without size", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID1, Members: append(member(t, dir, 1), filepath.Join(dir, "new"))}
		}, nil, "give --size"},
		{"bad name", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "a/b", Level: mapping.RAID1, Members: member(t, dir, 2)}
		}, nil, "name"},
		{"member in use by another array", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 2)
			held, err := OpenMember(ps[1])
			require.NoError(t, err)
			t.Cleanup(func() { held.Close() })
			return CreateOptions{Name: "t", Level: mapping.RAID1, Members: ps}
		}, ErrMemberBusy, "another uraid"},
		{"a new file and a bad one: the new one is not created", func(t *testing.T, dir string) CreateOptions {
			ps := member(t, dir, 1)
			return CreateOptions{Name: "t", Level: mapping.RAID0, Size: 16 * mib, Chunk: 3 << 10,
				Members: append(ps, filepath.Join(dir, "fresh"))}
		}, ErrBadGeometry, "power of two"},
		{"a directory", func(t *testing.T, dir string) CreateOptions {
			return CreateOptions{Name: "t", Level: mapping.RAID1, Members: append(member(t, dir, 1), dir)}
		}, ErrMemberKind, "block device or regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := testutil.MemDir(t)
			o := tt.setup(t, dir)
			before := snapshot(t, o.Members)
			ms, sbs, err := Create(o)
			require.Error(t, err)
			assert.Nil(t, ms)
			assert.Nil(t, sbs)
			if tt.want != nil {
				assert.ErrorIs(t, err, tt.want)
			}
			assert.Contains(t, err.Error(), tt.msg)
			assert.Equal(t, before, snapshot(t, o.Members), "a refused create changed a member")
		})
	}
}

// TestCreateMemberLimit: mapping.MaxMembers members make an array; one more is refused with a
// message that names the limit and the fix, and no member is written or created.
func TestCreateMemberLimit(t *testing.T) {
	dir := testutil.MemDir(t)
	var ps []string
	for i := range mapping.MaxMembers {
		ps = append(ps, testutil.SparseFile(t, dir, fmt.Sprintf("m%03d", i), 2*mib))
	}
	extra := filepath.Join(dir, "extra") // a path create would make a sparse file of
	ms, sbs, err := Create(CreateOptions{Name: "wide", Level: mapping.RAID0, Size: 2 * mib, Members: append(ps, extra)})
	require.ErrorIs(t, err, ErrBadGeometry)
	assert.Nil(t, ms)
	assert.Nil(t, sbs)
	assert.Contains(t, err.Error(), "257 members, at most 256 are supported; split them over several arrays")
	_, statErr := os.Stat(extra)
	assert.True(t, os.IsNotExist(statErr), "a refused create made a member file")
	for _, p := range ps {
		// Create writes nothing but the superblock: none may be there, nor anything else.
		f, err := os.Open(p)
		require.NoError(t, err)
		_, rerr := ReadSuperblock(f)
		head := make([]byte, DefaultDataOffset)
		_, err = f.ReadAt(head, 0)
		f.Close()
		require.NoError(t, err)
		require.ErrorIs(t, rerr, ErrNotMember, p)
		require.Equal(t, make([]byte, DefaultDataOffset), head, "%s was written", p)
	}

	ms, sbs, err = Create(CreateOptions{Name: "wide", Level: mapping.RAID0, Members: ps})
	require.NoError(t, err, "exactly mapping.MaxMembers members make an array")
	closeAll(ms)
	require.Len(t, sbs, mapping.MaxMembers)
	f, err := os.Open(ps[mapping.MaxMembers-1])
	require.NoError(t, err)
	defer f.Close()
	sb, err := ReadSuperblock(f)
	require.NoError(t, err)
	assert.EqualValues(t, mapping.MaxMembers, sb.Members)
	assert.EqualValues(t, mapping.MaxMembers-1, sb.Index)
}

func TestCreateForceOverwrites(t *testing.T) {
	dir := testutil.MemDir(t)
	ps := []string{testutil.SparseFile(t, dir, "a", 8*mib), testutil.SparseFile(t, dir, "b", 8*mib)}
	ms, old, err := Create(CreateOptions{Name: "old", Level: mapping.RAID1, Members: ps})
	require.NoError(t, err)
	closeAll(ms)
	ms, sbs, err := Create(CreateOptions{Name: "new", Level: mapping.RAID0, Chunk: 64 << 10, Members: ps, Force: true})
	require.NoError(t, err)
	closeAll(ms)
	assert.NotEqual(t, old[0].ArrayUUID, sbs[0].ArrayUUID)
	f, err := os.Open(ps[1])
	require.NoError(t, err)
	defer f.Close()
	sb, err := ReadSuperblock(f)
	require.NoError(t, err)
	assert.Equal(t, "new", sb.Name)
	assert.Equal(t, mapping.RAID0, sb.Level)
}

// TestCreateMirrorSizeMismatch: a mirror of members more than 10% apart in size is refused
// without --force, with how much would lie unused, and nothing is written; linear and raid0 use
// every member whole, and --size says the rest is meant to be left.
func TestCreateMirrorSizeMismatch(t *testing.T) {
	dir := testutil.MemDir(t)
	small := testutil.SparseFile(t, dir, "small", 8*mib)
	large := testutil.SparseFile(t, dir, "large", 10*mib)
	paths := []string{small, large}
	before := snapshot(t, paths)
	for _, c := range []struct {
		level  mapping.Level
		layout mapping.Layout
	}{{mapping.RAID1, mapping.NoLayout}, {mapping.RAID10, mapping.Near2}} {
		_, _, err := Create(CreateOptions{Name: "m", Level: c.level, Layout: c.layout, Members: paths})
		require.ErrorIs(t, err, ErrSizeMismatch, c.level.ShortName())
		assert.Contains(t, err.Error(), "the smallest, "+small+", has 8M and the largest, "+large+", 10M")
		assert.Contains(t, err.Error(), "uses 8M of each, so 2M of the members' 18M would never be used (11%)")
		assert.Contains(t, err.Error(), "--force")
		assert.Equal(t, before, snapshot(t, paths), "a refused create wrote to a member")
	}
	for name, c := range map[string]struct {
		level mapping.Level
		sizes []int64
		size  int64
		force bool
	}{
		"within 10%": {level: mapping.RAID1, sizes: []int64{8 * mib, 8*mib + 512*1024}},
		"raid0":      {level: mapping.RAID0, sizes: []int64{8 * mib, 10 * mib}},
		"linear":     {level: mapping.Linear, sizes: []int64{8 * mib, 10 * mib}},
		"--size":     {level: mapping.RAID1, sizes: []int64{8 * mib, 10 * mib}, size: 6 * mib},
		"--force":    {level: mapping.RAID1, sizes: []int64{8 * mib, 10 * mib}, force: true},
	} {
		d := testutil.MemDir(t)
		var ps []string
		for i, sz := range c.sizes {
			ps = append(ps, testutil.SparseFile(t, d, fmt.Sprint(i), sz))
		}
		ms, _, err := Create(CreateOptions{Name: "m", Level: c.level, Members: ps, Size: c.size, Force: c.force})
		require.NoError(t, err, name)
		closeAll(ms)
	}
}
