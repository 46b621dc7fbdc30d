package raid

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"uraid/mapping"
)

// testArray returns superblocks for every member of one array built from
// validSB, with paths /dev/m0, /dev/m1, ...
func testArray(t testing.TB, n uint32, mutate func(*Superblock)) []MemberSB {
	t.Helper()
	tmpl := validSB()
	tmpl.Members = n
	if mutate != nil {
		mutate(&tmpl)
	}
	ms := make([]MemberSB, n)
	for i := range n {
		sb := tmpl
		sb.Index = i
		sb.MemberUUID[15] = byte(i)
		sb.MemberUUID[14] = byte(i >> 8)
		require.NoError(t, sb.Validate())
		ms[i] = MemberSB{Path: fmt.Sprintf("/dev/m%d", i), SB: &sb}
	}
	return ms
}

func TestCheckAssemblyComplete(t *testing.T) {
	ms := testArray(t, 4, nil)
	given := []MemberSB{ms[2], ms[0], ms[3], ms[1]}
	a, err := CheckAssembly(given)
	require.NoError(t, err)
	assert.Equal(t, ms, a.Members, "ordered by index")
	assert.False(t, a.Degraded())
	assert.Empty(t, a.Missing)
	assert.Empty(t, a.Stale)
	assert.Equal(t, ms[0].SB.ArrayUUID, a.Newest.ArrayUUID)
	assert.Equal(t, StateDirty, a.Newest.State)
}

func TestCheckAssemblyNewestWins(t *testing.T) {
	ms := testArray(t, 3, func(sb *Superblock) { sb.Level, sb.Layout, sb.ChunkSize = mapping.RAID1, mapping.NoLayout, 0 })
	ms[1].SB.Events = 58
	ms[1].SB.State = StateClean
	ms[1].SB.Name = "renamed"
	ms[0].SB.Events = 58
	ms[2].SB.Events = 58
	a, err := CheckAssembly(ms)
	require.NoError(t, err, "equal events: nothing stale")
	assert.Equal(t, "fast_scratch-1.0", a.Newest.Name, "on a tie the first member given is the reference")

	ms[1].SB.Events = 60
	a, err = CheckAssembly(ms)
	require.ErrorIs(t, err, ErrStaleMember)
	require.NotNil(t, a)
	assert.Equal(t, uint64(60), a.Newest.Events)
	assert.Equal(t, "renamed", a.Newest.Name, "array-wide fields come from the newest member")
	assert.Equal(t, StateClean, a.Newest.State)
	assert.Equal(t, []MemberSB{ms[0], ms[2]}, a.Stale)
}

func TestCheckAssemblyStale(t *testing.T) {
	ms := testArray(t, 2, func(sb *Superblock) {
		sb.Level, sb.Layout, sb.ChunkSize, sb.Events = mapping.RAID1, mapping.NoLayout, 0, 57
	})
	ms[1].SB.Events = 41
	a, err := CheckAssembly(ms)
	require.ErrorIs(t, err, ErrStaleMember)
	assert.NotErrorIs(t, err, ErrMissingMember)
	assert.Contains(t, err.Error(), "member /dev/m1 (index 1): events 41 behind 57: stale, it missed writes")
	assert.NotContains(t, err.Error(), "degraded", "what to do is the caller's to say, once (DegradedHint)")
	assert.NotContains(t, err.Error(), "/dev/m0")
	assert.NotContains(t, err.Error(), "no redundancy")
	require.NotNil(t, a)
	assert.True(t, a.Degraded())
	assert.Equal(t, []MemberSB{ms[1]}, a.Stale)
	assert.Equal(t, []MemberSB{ms[0], {}}, a.Members, "a stale member does not take its slot")
	assert.Empty(t, a.Missing)
}

func TestCheckAssemblyMissing(t *testing.T) {
	tests := []struct {
		name      string
		level     mapping.Level
		layout    mapping.Layout
		chunk     uint64
		given     []int
		missing   []uint32
		msg       string
		redundant bool
	}{
		{"raid1 one gone", mapping.RAID1, mapping.NoLayout, 0, []int{0, 2, 3}, []uint32{1}, "member index 1 missing", true},
		{"raid10 two gone", mapping.RAID10, mapping.Near2, 65536, []int{3, 0}, []uint32{1, 2}, "member indexes 1, 2 missing: no given device claims them", true},
		{"raid0 one gone", mapping.RAID0, mapping.NoLayout, 65536, []int{1, 2, 3}, []uint32{0}, "member index 0 missing", false},
		{"linear one gone", mapping.Linear, mapping.NoLayout, 0, []int{0, 1, 2}, []uint32{3}, "member index 3 missing", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := testArray(t, 4, func(sb *Superblock) { sb.Level, sb.Layout, sb.ChunkSize = tt.level, tt.layout, tt.chunk })
			var given []MemberSB
			for _, i := range tt.given {
				given = append(given, ms[i])
			}
			a, err := CheckAssembly(given)
			require.ErrorIs(t, err, ErrMissingMember)
			assert.NotErrorIs(t, err, ErrStaleMember)
			assert.Contains(t, err.Error(), tt.msg)
			assert.NotContains(t, err.Error(), "degraded", "what to do is the caller's to say, once (DegradedHint)")
			if tt.redundant {
				assert.Equal(t, "; name every member, or assemble with --degraded to run without the missing or stale members (uraid add brings them back)", DegradedHint(a, "name every member"))
				assert.NotContains(t, err.Error(), "no redundancy")
			} else {
				assert.Contains(t, err.Error(), fmt.Sprintf("level %s has no redundancy", tt.level.ShortName()))
				assert.Empty(t, DegradedHint(a, "name every member"), "no way to run it degraded")
			}
			require.NotNil(t, a)
			assert.Equal(t, tt.missing, a.Missing)
			for i, m := range a.Members {
				if slices.Contains(tt.missing, uint32(i)) {
					assert.Equal(t, MemberSB{}, m, "slot %d", i)
				} else {
					assert.Equal(t, ms[i], m, "slot %d", i)
				}
			}
		})
	}
}

func TestCheckAssemblyMissingAndStale(t *testing.T) {
	ms := testArray(t, 4, nil)
	ms[3].SB.Events = 10
	a, err := CheckAssembly([]MemberSB{ms[0], ms[1], ms[3]})
	require.ErrorIs(t, err, ErrMissingMember)
	require.ErrorIs(t, err, ErrStaleMember)
	assert.Contains(t, err.Error(), "member /dev/m3 (index 3): events 10 behind 57")
	assert.Contains(t, err.Error(), "member index 2 missing")
	require.NotNil(t, a)
	assert.Equal(t, []uint32{2}, a.Missing)
	assert.Equal(t, []MemberSB{ms[3]}, a.Stale)
}

// TestCheckAssemblyRefuses covers the conflicts after which no Assembly
// is returned. want lists substrings the error must hold; absent lists
// ones it must not (members that are fine must not be blamed).
func TestCheckAssemblyRefuses(t *testing.T) {
	other := func(t *testing.T) []MemberSB {
		return testArray(t, 2, func(sb *Superblock) {
			sb.ArrayUUID[0] = 0xee
			sb.Name = "other"
			sb.Level, sb.Layout, sb.ChunkSize = mapping.RAID1, mapping.NoLayout, 0
		})
	}
	tests := []struct {
		name   string
		given  func(t *testing.T) []MemberSB
		err    error
		want   []string
		absent []string
	}{
		{
			name:  "nothing given",
			given: func(*testing.T) []MemberSB { return nil },
			err:   ErrNoMembers,
		},
		{
			name: "no superblock",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				ms[1].SB = nil
				return ms
			},
			want: []string{"member /dev/m1: no superblock was read"},
		},
		{
			name: "invalid superblock",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				ms[0].SB.Index = 7
				return ms
			},
			err:  ErrInvalid,
			want: []string{"member /dev/m0: invalid superblock: member index 7"},
		},
		{
			name: "path named twice",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				return []MemberSB{ms[0], ms[1], ms[0]}
			},
			want: []string{"member /dev/m0 is named twice"},
		},
		{
			name: "one foreign member",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 3, nil)
				o := other(t)[1]
				o.Path = "/dev/x"
				return []MemberSB{ms[0], o, ms[1], ms[2]}
			},
			err: ErrForeignMember,
			want: []string{
				`member /dev/x: belongs to another array "other" (ee`,
				`not to array "fast_scratch-1.0" (a1a2a3a4-a5a6-47a8-89aa-abacadaeafb0) held by /dev/m0, /dev/m1, /dev/m2: leave it out`,
			},
			absent: []string{"member /dev/m0:", "member /dev/m1:", "member /dev/m2:"},
		},
		{
			name: "two arrays one each: the newer is the reference",
			given: func(t *testing.T) []MemberSB {
				o := other(t)[0]
				o.SB.Events = 1000
				o.Path = "/dev/x"
				return []MemberSB{testArray(t, 2, nil)[0], o}
			},
			err:    ErrForeignMember,
			want:   []string{`member /dev/m0: belongs to another array "fast_scratch-1.0"`, `held by /dev/x`},
			absent: []string{"member /dev/x:"},
		},
		{
			name: "level differs",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 3, nil)
				ms[2].SB.Level, ms[2].SB.Layout = mapping.RAID0, mapping.NoLayout
				ms[2].SB.Events = 3
				return ms
			},
			err:    ErrGeometryMismatch,
			want:   []string{"member /dev/m2 (index 2, events 3): geometry mismatch: level 0, but newest member /dev/m0 (events 57) says level 10"},
			absent: []string{"member /dev/m1"},
		},
		{
			name: "layout differs",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				ms[1].SB.Layout = mapping.Near2
				return ms
			},
			err:  ErrGeometryMismatch,
			want: []string{`member /dev/m1 (index 1, events 57): geometry mismatch: layout "n2", but newest member /dev/m0 (events 57) says layout "f2"`},
		},
		{
			name: "chunk differs",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				ms[0].SB.ChunkSize = 4096
				ms[1].SB.Events++
				return ms
			},
			err:  ErrGeometryMismatch,
			want: []string{"member /dev/m0 (index 0, events 57): geometry mismatch: chunk size 4096, but newest member /dev/m1 (events 58) says chunk size 524288"},
		},
		{
			name: "member count differs",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 3, nil)
				ms[1].SB.Members = 2
				return ms
			},
			err:  ErrGeometryMismatch,
			want: []string{"member /dev/m1 (index 1, events 57): geometry mismatch: member count 2, but newest member /dev/m0 (events 57) says member count 3"},
		},
		{
			name: "data size differs",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				ms[1].SB.DataSize -= 512
				return ms
			},
			err:  ErrGeometryMismatch,
			want: []string{"member /dev/m1 (index 1, events 57): geometry mismatch: data size 1099511627264"},
		},
		{
			name: "same device under two paths",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				alias := ms[1]
				alias.Path = "/dev/disk/by-id/nvme-x"
				return append(ms, alias)
			},
			err:  ErrDuplicateIndex,
			want: []string{"members /dev/m1, /dev/disk/by-id/nvme-x all claim index 1", "named twice under different paths"},
		},
		{
			name: "two fresh members in one slot",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 2, nil)
				twin := *ms[0].SB
				twin.MemberUUID[0] ^= 0xff
				return append(ms, MemberSB{Path: "/dev/twin", SB: &twin})
			},
			err:  ErrDuplicateIndex,
			want: []string{"members /dev/m0, /dev/twin all claim index 0", "same events but are different members", "leave all but one out"},
		},
		{
			name: "several problems are all named",
			given: func(t *testing.T) []MemberSB {
				ms := testArray(t, 3, nil)
				ms[1].SB.DataSize = 4096
				o := other(t)[0]
				o.Path = "/dev/x"
				return append(ms, o)
			},
			err:  ErrForeignMember,
			want: []string{"member /dev/x: belongs to another array", "member /dev/m1 (index 1, events 57): geometry mismatch: data size 4096"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := CheckAssembly(tt.given(t))
			require.Error(t, err)
			assert.Nil(t, a)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
			}
			assert.NotErrorIs(t, err, ErrMissingMember)
			assert.NotErrorIs(t, err, ErrStaleMember)
			for _, s := range tt.want {
				assert.Contains(t, err.Error(), s)
			}
			for _, s := range tt.absent {
				assert.NotContains(t, err.Error(), s)
			}
		})
	}
}

// otherClaimant is another device at path whose superblock claims m's slot with events.
func otherClaimant(m MemberSB, path string, events uint64) MemberSB {
	sb := *m.SB
	sb.MemberUUID[0] ^= 0xff
	sb.Events = events
	return MemberSB{Path: path, SB: &sb}
}

// TestCheckAssemblySuperseded: a device whose superblock still claims a slot that another given
// device claims with newer events is left out, not a reason to refuse the array. assemble --scan
// finds such devices: the old device of a finished replace, and a replacement let go when the
// member it replaced failed and was then added back (found by the robustness harness).
func TestCheckAssemblySuperseded(t *testing.T) {
	t.Run("old device of a finished replace", func(t *testing.T) {
		ms := testArray(t, 2, nil)
		old := otherClaimant(ms[1], "/dev/old", 40)
		a, err := CheckAssembly(append(ms, old))
		require.NoError(t, err)
		assert.Equal(t, ms, a.Members)
		assert.Equal(t, []MemberSB{old}, a.Superseded)
		assert.False(t, a.Degraded())
	})
	t.Run("replacement let go, its member added back", func(t *testing.T) {
		ms := testArray(t, 2, nil)
		ms[1].SB.Role = RoleRebuilding
		a, err := CheckAssembly(append(ms, otherClaimant(ms[1], "/dev/let-go", 55)))
		require.NoError(t, err)
		assert.Equal(t, ms, a.Members)
		assert.Equal(t, []uint32{1}, a.Rebuilding)
		assert.Empty(t, a.Replacing, "the let-go device is no replacement under way")
		assert.Equal(t, "/dev/let-go", a.Superseded[0].Path)
	})
	t.Run("both claimants behind the array: the newer is stale, the older superseded", func(t *testing.T) {
		ms := testArray(t, 2, nil)
		ms[1].SB.Events = 50
		a, err := CheckAssembly(append(ms, otherClaimant(ms[1], "/dev/old", 40)))
		require.ErrorIs(t, err, ErrStaleMember)
		assert.Equal(t, []MemberSB{ms[1]}, a.Stale)
		assert.Equal(t, "/dev/old", a.Superseded[0].Path)
	})
}

// TestPropertyAssembly checks CheckAssembly against a model: any subset of
// an array's members, in any order, some of them behind on events, comes
// back slotted by index with exactly the absent slots missing and the
// behind members stale, but for one update behind in a slot the newest
// superblock's table still gives them.
func TestPropertyAssembly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tmpl := genSuperblock.Draw(t, "sb")
		minMembers := uint32(1)
		if tmpl.Level == mapping.RAID10 {
			minMembers = 2
		}
		tmpl.Members = rapid.Uint32Range(minMembers, 16).Draw(t, "members")
		newest := rapid.Uint64Range(1, 1<<62).Draw(t, "newest")
		all := make([]MemberSB, tmpl.Members)
		for i := range tmpl.Members {
			sb := tmpl
			sb.Index = i
			sb.MemberUUID[0] = byte(i)
			sb.MemberUUID[1] = 1
			sb.Events = newest
			all[i] = MemberSB{Path: fmt.Sprintf("/dev/d%d", i), SB: &sb}
		}
		present := rapid.SliceOfNDistinct(rapid.Uint32Range(0, tmpl.Members-1), 1, int(tmpl.Members), rapid.ID[uint32]).Draw(t, "present")
		// The newest update's slot table (none before minor 2) names every member it kept in
		// service; a member one update behind is current when it names it (the crash tore the
		// update), stale when not (the update recorded its failure) or when further behind.
		var table []uint64
		if rapid.Bool().Draw(t, "table") {
			table = make([]uint64, tmpl.Members)
			for i := range table {
				table[i] = all[i].SB.MemberUUID.Tag()
			}
		}
		stale := make(map[uint32]bool)
		for _, i := range present[1:] {
			if !rapid.Bool().Draw(t, fmt.Sprintf("behind%d", i)) {
				continue
			}
			named := table != nil && rapid.Bool().Draw(t, fmt.Sprintf("named%d", i))
			if table != nil && !named {
				table[i] = 0
			}
			ev := rapid.Uint64Range(0, newest-1).Draw(t, fmt.Sprintf("events%d", i))
			all[i].SB.Events = ev
			stale[i] = !named || ev+1 < newest
		}
		for i := range all {
			all[i].SB.Slots = table
		}
		given := make([]MemberSB, len(present))
		for j, i := range present {
			given[j] = all[i]
		}

		a, err := CheckAssembly(given)
		require.NotNil(t, a, "err: %v", err)
		require.Equal(t, newest, a.Newest.Events)
		require.Len(t, a.Members, int(tmpl.Members))
		var wantMissing []uint32
		var wantStale []MemberSB
		for i := range tmpl.Members {
			switch {
			case !slices.Contains(present, i):
				wantMissing = append(wantMissing, i)
				require.Equal(t, MemberSB{}, a.Members[i])
			case stale[i]:
				wantStale = append(wantStale, all[i])
				require.Equal(t, MemberSB{}, a.Members[i])
			default:
				require.Equal(t, all[i], a.Members[i])
			}
		}
		require.Equal(t, wantMissing, a.Missing)
		require.Equal(t, wantStale, a.Stale)
		require.Equal(t, len(wantMissing) > 0, errors.Is(err, ErrMissingMember))
		require.Equal(t, len(wantStale) > 0, errors.Is(err, ErrStaleMember))
		require.Equal(t, a.Degraded(), err != nil)
	})
}

// TestCheckAssemblyGrownPast: a device that left before the array grew carries the old data size;
// it is stale by its events, not of another geometry, and the rest assembles. One one update
// behind (the grow's superblock write did not reach it) and named in the slot table is current.
// The same data size difference at equal events is a mismatch still.
func TestCheckAssemblyGrownPast(t *testing.T) {
	ms := testArray(t, 2, func(sb *Superblock) {
		sb.Level, sb.Layout, sb.ChunkSize, sb.Events = mapping.RAID1, mapping.NoLayout, 0, 57
	})
	ms[0].SB.DataSize *= 2
	ms[1].SB.Events = 41
	a, err := CheckAssembly(ms)
	require.ErrorIs(t, err, ErrStaleMember)
	assert.NotErrorIs(t, err, ErrGeometryMismatch)
	require.NotNil(t, a)
	assert.Equal(t, []MemberSB{ms[1]}, a.Stale)
	assert.Equal(t, ms[0].SB.DataSize, a.Newest.DataSize)

	ms[1].SB.Events = 56
	ms[0].SB.Slots = []uint64{ms[0].SB.MemberUUID.Tag(), ms[1].SB.MemberUUID.Tag()}
	ms[1].SB.Slots = ms[0].SB.Slots
	a, err = CheckAssembly(ms)
	require.NoError(t, err, "one update behind, named in the newest slot table: current")
	assert.Equal(t, ms[0].SB.DataSize, a.Newest.DataSize)

	ms[1].SB.Events = 57
	_, err = CheckAssembly(ms)
	require.ErrorIs(t, err, ErrGeometryMismatch)
}

// A raid1 whose copies changed (array.SetCopies) assembles from members a crash left one update
// behind: the new slot count is the newest's, and a member the change renumbered is found in the
// slot where the newest slot table names it.
func TestCheckAssemblyCopiesChanged(t *testing.T) {
	raid1 := func(sb *Superblock) {
		sb.Level, sb.Layout, sb.ChunkSize, sb.Events = mapping.RAID1, mapping.NoLayout, 0, 10
	}
	tags := func(ms []MemberSB, idx ...int) []uint64 {
		var s []uint64
		for _, i := range idx {
			if i < 0 {
				s = append(s, 0)
			} else {
				s = append(s, ms[i].SB.MemberUUID.Tag())
			}
		}
		return s
	}

	distinct := func(ms []MemberSB) []MemberSB {
		for i, m := range ms {
			m.SB.MemberUUID[0] = byte(i + 1) // in the tag
		}
		return ms
	}

	t.Run("gained a copy", func(t *testing.T) {
		ms := distinct(testArray(t, 2, raid1))
		for _, m := range ms {
			m.SB.Slots = tags(ms, 0, 1)
		}
		ms[0].SB.Members, ms[0].SB.Events, ms[0].SB.Slots = 3, 11, tags(ms, 0, 1, -1)
		a, err := CheckAssembly(ms)
		require.ErrorIs(t, err, ErrMissingMember, "the new slot waits for its device")
		assert.NotErrorIs(t, err, ErrGeometryMismatch)
		assert.NotErrorIs(t, err, ErrStaleMember)
		require.NotNil(t, a)
		assert.Equal(t, uint32(3), a.Newest.Members)
		assert.Equal(t, []uint32{2}, a.Missing)
		assert.Equal(t, ms[1], a.Members[1], "one update behind, named in its slot: current")
	})

	t.Run("dropped a copy", func(t *testing.T) {
		ms := distinct(testArray(t, 3, raid1))
		for _, m := range ms {
			m.SB.Slots = tags(ms, 0, -1, 2) // slot 1's device was removed
		}
		ms[0].SB.Members, ms[0].SB.Events, ms[0].SB.Slots = 2, 11, tags(ms, 0, 2)
		a, err := CheckAssembly([]MemberSB{ms[0], ms[2]})
		require.NoError(t, err)
		assert.Equal(t, ms[2], a.Members[1], "renumbered by the update it missed")

		ms[2].SB.Events = 9
		a, err = CheckAssembly([]MemberSB{ms[0], ms[2]})
		require.ErrorIs(t, err, ErrMissingMember, "two updates behind: not placed by the new table")
		assert.Equal(t, []uint32{1}, a.Missing)
	})

	t.Run("raid10 member count", func(t *testing.T) {
		// A reshape (array.Reshape) gives a raid10 more members: a device of the old count,
		// behind the newest, left before it and is stale, not of another geometry. One with
		// more members than the newest is.
		ms := testArray(t, 4, func(sb *Superblock) { sb.Events = 10 })
		ms[0].SB.Members, ms[0].SB.Events = 6, 11
		a, err := CheckAssembly(ms)
		require.ErrorIs(t, err, ErrStaleMember)
		assert.NotErrorIs(t, err, ErrGeometryMismatch)
		require.NotNil(t, a)
		assert.Len(t, a.Stale, 3)

		ms[1].SB.Members = 8
		_, err = CheckAssembly(ms)
		require.ErrorIs(t, err, ErrGeometryMismatch, "more members than the newest: no reshape leaves that")
	})
}

// A linear array appended to: a device prepared for the append (a slot past the count, the old
// events) is not a member until an old member commits, whichever order the devices come in; once
// one has, the members that missed the commit are one update behind and current.
func TestCheckAssemblyAppended(t *testing.T) {
	linear := func(sb *Superblock) {
		sb.Level, sb.Layout, sb.ChunkSize, sb.Events = mapping.Linear, mapping.NoLayout, 0, 10
	}
	// Three devices; the third is the one appended.
	setup := func() []MemberSB {
		ms := testArray(t, 3, linear)
		for i, m := range ms {
			m.SB.MemberUUID[0] = byte(i + 1) // in the tag
		}
		tags := []uint64{ms[0].SB.MemberUUID.Tag(), ms[1].SB.MemberUUID.Tag(), ms[2].SB.MemberUUID.Tag()}
		for _, m := range ms[:2] {
			m.SB.Members, m.SB.Slots = 2, tags[:2]
		}
		ms[2].SB.Slots = tags
		return ms
	}
	commit := func(m MemberSB, tags []uint64) { m.SB.Members, m.SB.Events, m.SB.Slots = 3, 11, tags }

	t.Run("not committed", func(t *testing.T) {
		ms := setup()
		for _, order := range [][]MemberSB{{ms[2], ms[0], ms[1]}, {ms[0], ms[2], ms[1]}, {ms[0], ms[1], ms[2]}} {
			a, err := CheckAssembly(order)
			require.NoError(t, err)
			assert.Equal(t, uint32(2), a.Newest.Members, "the tie goes to the fewer members")
			assert.Equal(t, ms[:2], a.Members)
			assert.Equal(t, []MemberSB{ms[2]}, a.NotMembers)
		}
	})
	t.Run("ran on without it", func(t *testing.T) {
		ms := setup()
		ms[0].SB.Events, ms[1].SB.Events = 13, 13
		a, err := CheckAssembly([]MemberSB{ms[2], ms[1], ms[0]})
		require.NoError(t, err)
		assert.Equal(t, ms[:2], a.Members)
		assert.Equal(t, []MemberSB{ms[2]}, a.NotMembers)
	})
	t.Run("commit torn", func(t *testing.T) {
		ms := setup()
		commit(ms[1], ms[2].SB.Slots)
		a, err := CheckAssembly([]MemberSB{ms[2], ms[0], ms[1]})
		require.NoError(t, err)
		assert.Equal(t, uint32(3), a.Newest.Members)
		assert.Equal(t, ms, a.Members, "one update behind and named in the newest table: current")
		assert.Empty(t, a.NotMembers)
	})
	t.Run("committed, the new device missing", func(t *testing.T) {
		ms := setup()
		commit(ms[0], ms[2].SB.Slots)
		commit(ms[1], ms[2].SB.Slots)
		a, err := CheckAssembly(ms[:2])
		require.ErrorIs(t, err, ErrMissingMember)
		assert.Contains(t, err.Error(), "no redundancy")
		assert.Equal(t, []uint32{2}, a.Missing)
	})
	t.Run("not linear", func(t *testing.T) {
		ms := testArray(t, 3, func(sb *Superblock) { sb.Level, sb.Layout, sb.ChunkSize = mapping.RAID0, mapping.NoLayout, 64<<10 })
		ms[0].SB.Members, ms[1].SB.Members = 2, 2
		ms[0].SB.Index, ms[1].SB.Index = 0, 1
		_, err := CheckAssembly(ms)
		require.ErrorIs(t, err, ErrGeometryMismatch, "only a linear array appends")
	})
}
