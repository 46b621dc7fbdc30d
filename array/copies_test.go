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
	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
	"uraid/raid"
)

// copiesHold checks that every member of a raid1 at paths holds model whole: each copy is the
// array at the data offset.
func copiesHold(t *testing.T, paths []string, model []byte) {
	t.Helper()
	for _, p := range paths {
		sb := raidtest.Superblock(t, p)
		f, err := os.Open(p)
		require.NoError(t, err)
		got := make([]byte, len(model))
		_, err = f.ReadAt(got, int64(sb.DataOffset))
		f.Close()
		require.NoError(t, err)
		require.True(t, bytes.Equal(model, got), "copy on %s", p)
	}
}

// assembleOK assembles paths and checks what the array serves against model and its slots.
func assembleOK(t *testing.T, paths []string, model []byte, slots int, degraded bool) *Array {
	t.Helper()
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8, Degraded: degraded})
	require.NoError(t, err)
	require.Len(t, a.members, slots)
	assert.Equal(t, uint32(slots), a.Superblock().Members)
	h := harness(t, a)
	for off := int64(0); off < int64(len(model)); off += harnessMaxIO {
		n := min(harnessMaxIO, int64(len(model))-off)
		got := ublktest.Read(t, h, off, int(n))
		require.True(t, bytes.Equal(model[off:off+n], got), "bytes at %d", off)
	}
	require.NoError(t, h.Close())
	return a
}

// TestSetCopies gives a raid1 of two a third copy, rebuilt onto the added device once the array
// is assembled again, then takes a copy out and drops its slot; a power cut before each commit
// leaves the array as it was, and one between members (a member one update behind) assembles as
// the change left it.
func TestSetCopies(t *testing.T) {
	paths, model := filledArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0})
	fi, err := os.Stat(paths[0])
	require.NoError(t, err)
	dev := testutil.SparseFile(t, filepath.Dir(paths[0]), "new", fi.Size())

	var before []string
	failpoint.Set(func(name string, _ failpoint.Span) {
		if name == FailpointCopiesCommit {
			before = snapshot(t, append(paths[:2:2], dev))
		}
	})
	defer failpoint.Set(nil)
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	p, err := a.SetCopies(3, []string{dev}, false)
	require.NoError(t, err)
	assert.Equal(t, CopiesPlan{Old: 2, New: 3, Spares: []string{dev}}, p)
	require.ErrorIs(t, a.MarkClean(), errSuperseded, "the old Array writes no superblock after the change")
	require.NoError(t, a.Close())
	failpoint.Set(nil)

	// Cut before the commit: two copies, the device blank.
	b := assembleOK(t, before[:2], model, 2, false)
	require.NoError(t, b.Close())
	f, err := os.Open(before[2])
	require.NoError(t, err)
	_, err = raid.ReadSuperblock(f)
	f.Close()
	require.ErrorIs(t, err, raid.ErrNotMember, "the device is written only after the commit")

	// Cut between members: the second still says two slots, one update behind.
	torn := snapshot(t, append(paths[:2:2], dev))
	copySuperblock(t, before[1], torn[1])
	b = assembleOK(t, torn, model, 3, true)
	require.NoError(t, b.Close())

	// The change whole: the spare fills the new slot once the array serves.
	b = assembleOK(t, append(paths[:2:2], dev), model, 3, true)
	require.NoError(t, b.MarkDirty())
	testutil.WaitFor(t, "the spare's rebuild into slot 2", func() bool { return !b.Degraded() && b.syncer.busyWith() == "" })
	b.WaitSync()
	require.NoError(t, b.MarkClean())
	require.NoError(t, b.Close())
	all := append(paths[:2:2], dev)
	copiesHold(t, all, model)
	assert.Equal(t, uint32(2), raidtest.Superblock(t, dev).Index)

	// Drop: slot 0's member is taken out, its slot dropped, the others move down.
	c := assembleOK(t, all, model, 3, false)
	_, err = c.SetCopies(2, nil, false)
	require.ErrorIs(t, err, ErrCopies, "no empty slot to drop")
	require.NoError(t, c.FailMember(paths[0]))
	require.NoError(t, c.RemoveMember(paths[0]))
	failpoint.Set(func(name string, _ failpoint.Span) {
		if name == FailpointCopiesCommit {
			before = snapshot(t, all[1:])
		}
	})
	p, err = c.SetCopies(2, nil, false)
	require.NoError(t, err)
	failpoint.Set(nil)
	assert.Equal(t, CopiesPlan{Old: 3, New: 2, Dropped: []int{0}}, p)
	require.NoError(t, c.Close())
	afterDrop := snapshot(t, all[1:])
	assert.Equal(t, uint32(0), raidtest.Superblock(t, paths[1]).Index)
	assert.Equal(t, uint32(1), raidtest.Superblock(t, dev).Index)
	d := assembleOK(t, all[1:], model, 2, false)
	assert.False(t, d.Degraded(), "whole with two copies")
	// The dropped member, back in an empty slot of the same number, missed what was written
	// since it left: a whole rebuild, not a re-add by the map's regions.
	d.MarkDirty()
	require.NoError(t, d.FailMember(paths[1]))
	require.NoError(t, d.RemoveMember(paths[1]))
	msg, err := d.AddMember(paths[0], false)
	require.NoError(t, err)
	assert.Contains(t, msg, "rebuilt whole")
	d.WaitSync()
	require.NoError(t, d.MarkClean())
	require.NoError(t, d.Close())
	all = []string{paths[0], dev}
	copiesHold(t, all[1:], model)

	// Cut between members of the drop: the device, renumbered by the update it missed, is found
	// in the slot the newest table names it in.
	torn = afterDrop
	copySuperblock(t, before[1], torn[1])
	require.Equal(t, uint32(2), raidtest.Superblock(t, torn[1]).Index)
	d = assembleOK(t, torn, model, 2, false)
	assert.False(t, d.Degraded())
	// Its next superblock is of its new slot (the robustness harness found it written with the
	// old slot count and refused as invalid).
	require.NoError(t, d.MarkDirty())
	require.NoError(t, d.MarkClean())
	require.NoError(t, d.Close())
	assert.Equal(t, uint32(1), raidtest.Superblock(t, torn[1]).Index)
	assert.Equal(t, uint32(2), raidtest.Superblock(t, torn[1]).Members)
}

// TestSetCopiesRefusals: every refusal names its cause and writes nothing.
func TestSetCopiesRefusals(t *testing.T) {
	paths, _ := filledArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0})
	fi, err := os.Stat(paths[0])
	require.NoError(t, err)
	dir := filepath.Dir(paths[0])
	good := testutil.SparseFile(t, dir, "good", fi.Size())
	small := testutil.SparseFile(t, dir, "small", fi.Size()/2)
	a, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	defer a.Close()
	was := snapshot(t, append(paths[:2:2], good, small))
	for _, c := range []struct {
		n    int
		add  []string
		want string
	}{
		{2, nil, "keeps 2 copies already"},
		{0, nil, "keeps 1 to 16"},
		{17, nil, "keeps 1 to 16"},
		{3, []string{good, small}, "2 devices for 1 new copies"},
		{3, []string{small}, "too small"},
		{4, []string{good, good}, "named twice"},
		{4, []string{good, paths[1]}, "a member already"},
		{1, nil, "need 1 empty slots, and 0 is empty"},
		{1, []string{good}, "drop the copies first"},
	} {
		_, err := a.SetCopies(c.n, c.add, false)
		require.Error(t, err, "%d copies %v", c.n, c.add)
		assert.Contains(t, err.Error(), c.want)
	}
	now := append(paths[:2:2], good, small)
	for i := range now {
		b1, err := os.ReadFile(was[i])
		require.NoError(t, err)
		b2, err := os.ReadFile(now[i])
		require.NoError(t, err)
		assert.True(t, bytes.Equal(b1, b2), "%s changed by a refusal", now[i])
	}

	r10, _ := filledArray(t, arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10})
	b, err := Assemble("t", r10, Options{Queues: 1, Depth: 8})
	require.NoError(t, err)
	defer b.Close()
	_, err = b.SetCopies(3, nil, false)
	require.ErrorIs(t, err, ErrCopies)
	assert.Contains(t, err.Error(), "a raid10 keeps the copies of its layout")
}

func copySuperblock(t *testing.T, from, to string) {
	t.Helper()
	sb := raidtest.Superblock(t, from)
	f, err := os.OpenFile(to, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, raid.WriteSuperblock(f, sb))
}
