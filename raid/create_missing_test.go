package raid

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/mapping"
)

// TestCreateMissing: "missing" leaves its slot empty, recorded as such in every superblock (slot
// table entry 0), so that assemble sees the slot missing and add fills it; levels without
// redundancy, spares, and missing slots that take every copy of some data are refused, with
// nothing written.
func TestCreateMissing(t *testing.T) {
	tests := []struct {
		name    string
		level   mapping.Level
		layout  mapping.Layout
		members []string // "m" a member file, MissingMember none
		missing []uint32 // nil: refused
		msg     string
	}{
		{"raid10 n2, one of a pair", mapping.RAID10, mapping.Near2, []string{"m", MissingMember, "m", "m"}, []uint32{1}, ""},
		{"raid10 n2, one of each pair", mapping.RAID10, mapping.Near2, []string{MissingMember, "m", "m", MissingMember}, []uint32{0, 3}, ""},
		{"raid10 n2, a whole pair", mapping.RAID10, mapping.Near2, []string{MissingMember, MissingMember, "m", "m"}, nil, "slot 1 is missing along with every other copy"},
		{"raid10 f2, neighbours", mapping.RAID10, mapping.Far2, []string{"m", MissingMember, MissingMember, "m"}, nil, "every other copy"},
		{"raid10 o2, one", mapping.RAID10, mapping.Offset2, []string{"m", "m", MissingMember}, []uint32{2}, ""},
		{"raid1, all but one", mapping.RAID1, mapping.NoLayout, []string{MissingMember, "m", MissingMember}, []uint32{0, 2}, ""},
		{"raid1, every one", mapping.RAID1, mapping.NoLayout, []string{MissingMember, MissingMember}, nil, "give at least one device"},
		{"raid0", mapping.RAID0, mapping.NoLayout, []string{"m", MissingMember}, nil, "level 0 keeps one copy"},
		{"linear", mapping.Linear, mapping.NoLayout, []string{MissingMember, "m"}, nil, "use level 1 or 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.MemDir(t)
			var ps, present []string
			for i, m := range tt.members {
				if m == MissingMember {
					ps = append(ps, m)
					continue
				}
				p := testutil.SparseFile(t, dir, "m"+string(rune('0'+i)), 16*mib)
				ps, present = append(ps, p), append(present, p)
			}
			watch := append(append([]string(nil), present...), filepath.Join(dir, MissingMember))
			before := fullSum(t, watch)
			ms, sbs, err := Create(CreateOptions{Name: "deg", Level: tt.level, Layout: tt.layout, Members: ps})
			if tt.missing == nil {
				require.ErrorIs(t, err, ErrBadGeometry)
				assert.Contains(t, err.Error(), tt.msg)
				assert.Equal(t, before, fullSum(t, watch), "a refused create changed a member")
				return
			}
			require.NoError(t, err)
			closeMembers(ms)
			require.Len(t, sbs, len(ps))
			var read []MemberSB
			for i, p := range ps {
				if p == MissingMember {
					assert.Nil(t, ms[i])
					assert.Nil(t, sbs[i])
					continue
				}
				f, err := os.Open(p)
				require.NoError(t, err)
				sb, err := ReadSuperblock(f)
				f.Close()
				require.NoError(t, err)
				for _, s := range tt.missing {
					assert.Zero(t, sb.Slots[s], "slot %d is recorded empty", s)
				}
				read = append(read, MemberSB{Path: p, SB: sb})
			}
			asm, err := CheckAssembly(read)
			require.ErrorIs(t, err, ErrMissingMember, "the array assembles degraded only")
			assert.Equal(t, tt.missing, asm.Missing)
			_, err = os.Stat(filepath.Join(dir, MissingMember))
			assert.True(t, os.IsNotExist(err), "no file named missing was made")
		})
	}
}

// TestCreateDotSlashMissing: a file that is named missing is given as ./missing.
func TestCreateDotSlashMissing(t *testing.T) {
	dir := testutil.MemDir(t)
	t.Chdir(dir)
	ms, _, err := Create(CreateOptions{Name: "file", Level: mapping.RAID1, Size: 8 * mib,
		Members: []string{"./" + MissingMember, testutil.SparseFile(t, dir, "m1", 8*mib)}})
	require.NoError(t, err)
	closeMembers(ms)
	fi, err := os.Stat(filepath.Join(dir, MissingMember))
	require.NoError(t, err)
	assert.EqualValues(t, 8*mib, fi.Size())
}

// TestCreateMissingSpare: a spare is a device or nothing.
func TestCreateMissingSpare(t *testing.T) {
	dir := testutil.MemDir(t)
	ps := []string{testutil.SparseFile(t, dir, "m0", 8*mib), testutil.SparseFile(t, dir, "m1", 8*mib)}
	_, _, err := Create(CreateOptions{Name: "sp", Level: mapping.RAID1, Members: ps, Spares: []string{MissingMember}})
	require.ErrorIs(t, err, ErrBadGeometry)
	assert.Contains(t, err.Error(), "a spare cannot be")
}
