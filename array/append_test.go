package array

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/failpoint"
	"uraid/internal/testutil"
	"uraid/internal/testutil/raidtest"
	"uraid/mapping"
	"uraid/raid"
)

// TestAppend appends a member to a linear array of two, cutting the power (a copy of the members
// and the new device) at every failpoint of the append and between the old members' commit
// writes: each copy assembles, from every device, either as the old array or as the new one,
// with every byte written before intact and the new space reading as zeros; one cut before the
// commit also assembles without the new device, and runs on, after which the device is still
// left out and can be appended again.
func TestAppend(t *testing.T) {
	paths, model := filledArray(t, arrayCase{mapping.Linear, mapping.NoLayout, 2, 0})
	fi, err := os.Stat(paths[0])
	require.NoError(t, err)
	dev := testutil.SparseFile(t, filepath.Dir(paths[0]), "new", fi.Size())
	// The device held something: the trim must leave the new space reading as zeros.
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0xa5}, 1<<20), int64(raid.DefaultDataOffset))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	all := append(paths[:2:2], dev)
	cuts := map[string][]string{}
	var committing []string
	failpoint.Set(func(name string, _ failpoint.Span) {
		switch name {
		case FailpointAppendTrim, FailpointAppendMember, FailpointAppendCommit, FailpointAppendSettle:
			cuts[name] = snapshot(t, all)
		}
	})
	defer failpoint.Set(nil)
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	p, err := a.Append(AppendOptions{Add: []string{dev}, BeforeCommit: func(m []string) error {
		committing = m
		return nil
	}})
	require.NoError(t, err)
	require.ErrorIs(t, a.MarkClean(), errSuperseded, "the old Array writes no superblock after the append")
	require.NoError(t, a.Close())
	failpoint.Set(nil)
	assert.Equal(t, all, committing, "the members recorded before the commit")
	assert.Equal(t, 2, p.OldMembers)
	assert.Equal(t, 3, p.NewMembers)
	assert.Equal(t, int64(len(model)), p.OldSize)
	assert.Equal(t, p.OldSize+p.DataSize, p.NewSize)
	require.Len(t, cuts, 4)

	b, grown := checkArray(t, all, model, p.NewSize)
	assert.True(t, grown)
	require.Len(t, b.members, 3)
	require.NoError(t, b.Close())
	assert.Equal(t, uint32(2), raidtest.Superblock(t, dev).Index)

	// Before the new device's superblock it carries none: neither a record (written just before
	// the commit) nor a scan names it, and the members assemble as they were.
	for _, name := range []string{FailpointAppendTrim, FailpointAppendMember} {
		f, err := os.Open(cuts[name][2])
		require.NoError(t, err)
		_, err = raid.ReadSuperblock(f)
		f.Close()
		require.ErrorIs(t, err, raid.ErrNotMember, "cut at %s", name)
		b, grown := checkArray(t, cuts[name][:2], model, p.NewSize)
		assert.False(t, grown, "cut at %s", name)
		require.NoError(t, b.Close())
	}
	for _, c := range []struct {
		name  string
		grown bool
	}{
		{FailpointAppendCommit, false}, {FailpointAppendSettle, true},
	} {
		b, grown := checkArray(t, cuts[c.name], model, p.NewSize)
		assert.Equal(t, c.grown, grown, "cut at %s", c.name)
		require.NoError(t, b.Close())
	}

	// Cut between the old members' commit writes: the second is one update behind, with the old
	// member count; the new device too. The newest slot table names both: the new array.
	torn := snapshot(t, cuts[FailpointAppendSettle])
	copySuperblock(t, cuts[FailpointAppendCommit][1], torn[1])
	b, grown = checkArray(t, torn, model, p.NewSize)
	assert.True(t, grown, "torn commit")
	// Its next update brings every member level, with the new member count.
	require.NoError(t, b.MarkDirty())
	require.NoError(t, b.MarkClean())
	require.NoError(t, b.Close())
	assert.Equal(t, uint32(3), raidtest.Superblock(t, torn[1]).Members)
	b, grown = checkArray(t, torn, model, p.NewSize)
	assert.True(t, grown)
	require.NoError(t, b.Close())

	// The other way round: the first member missed the commit.
	torn = snapshot(t, cuts[FailpointAppendSettle])
	copySuperblock(t, cuts[FailpointAppendCommit][0], torn[0])
	b, grown = checkArray(t, torn, model, p.NewSize)
	assert.True(t, grown, "torn commit, first member behind")
	require.NoError(t, b.Close())

	// Cut before the commit, and the old array assembled without the new device runs on: its
	// events pass the device's, which is still left out, and appends again without --force.
	old := cuts[FailpointAppendCommit]
	b, grown = checkArray(t, old[:2], model, p.NewSize)
	assert.False(t, grown)
	require.NoError(t, b.MarkDirty())
	require.NoError(t, b.MarkClean())
	require.NoError(t, b.Close())
	b, grown = checkArray(t, []string{old[2], old[0], old[1]}, model, p.NewSize)
	assert.False(t, grown, "the device named first is still not a member")
	p2, err := b.Append(AppendOptions{Add: []string{old[2]}})
	require.NoError(t, err)
	assert.Equal(t, p.NewSize, p2.NewSize)
	require.NoError(t, b.Close())
	b, grown = checkArray(t, old, model, p.NewSize)
	assert.True(t, grown)
	require.NoError(t, b.Close())
}

// TestAppendRefusals: every refusal names its cause and writes nothing.
func TestAppendRefusals(t *testing.T) {
	for _, c := range []struct {
		level mapping.Level
		n     int
		chunk int64
		want  string
	}{
		{mapping.RAID0, 2, 64 << 10, "reshape"},
		{mapping.RAID10, 2, 64 << 10, "reshape"},
		{mapping.RAID1, 2, 0, "--copies"},
	} {
		paths, _ := filledArray(t, arrayCase{c.level, mapping.NoLayout, c.n, c.chunk})
		if c.level == mapping.RAID10 {
			continue // filledArray gives raid10 no layout; its refusal is raid.Appendable's, below
		}
		fi, err := os.Stat(paths[0])
		require.NoError(t, err)
		dev := testutil.SparseFile(t, filepath.Dir(paths[0]), "new", fi.Size())
		a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
		require.NoError(t, err)
		before := snapshot(t, append(paths[:c.n:c.n], dev))
		_, err = a.Append(AppendOptions{Add: []string{dev}})
		require.ErrorIs(t, err, raid.ErrAppend)
		assert.Contains(t, err.Error(), c.want)
		require.NoError(t, a.Close())
		sameFiles(t, before, append(paths[:c.n:c.n], dev))
	}
	require.ErrorContains(t, raid.Appendable(mapping.RAID10), "reshape")

	paths, _ := filledArray(t, arrayCase{mapping.Linear, mapping.NoLayout, 2, 0})
	fi, err := os.Stat(paths[0])
	require.NoError(t, err)
	dir := filepath.Dir(paths[0])
	small := testutil.SparseFile(t, dir, "small", fi.Size()-4096)
	ok := testutil.SparseFile(t, dir, "ok", fi.Size())
	other, _ := filledArray(t, arrayCase{mapping.Linear, mapping.NoLayout, 1, 0})
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	defer a.Close()
	everything := append(paths[:2:2], small, ok, other[0])
	before := snapshot(t, everything)
	for _, c := range []struct {
		add  []string
		want error
		msg  string
	}{
		{nil, raid.ErrAppend, "no device"},
		{[]string{ok, small}, raid.ErrTooSmall, "small"},
		{[]string{ok, ok}, nil, "named twice"},
		{[]string{paths[1]}, nil, "a member already"},
		{[]string{other[0]}, raid.ErrHasSuperblock, "--force"},
	} {
		_, err := a.Append(AppendOptions{Add: c.add})
		require.Error(t, err, "%v", c.add)
		if c.want != nil {
			require.ErrorIs(t, err, c.want)
		}
		assert.Contains(t, err.Error(), c.msg)
		sameFiles(t, before, everything)
	}
	_, err = a.CheckAppend([]string{ok}, false)
	require.NoError(t, err)
	sameFiles(t, before, everything)
}

// sameFiles checks that the files at paths hold what the copies at want hold.
func sameFiles(t *testing.T, want, paths []string) {
	t.Helper()
	for i, p := range paths {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		w, err := os.ReadFile(want[i])
		require.NoError(t, err)
		require.True(t, bytes.Equal(w, got), "%s changed", p)
	}
}
