package raid

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/mapping"
)

// fullSum hashes every byte of each path (holes read as the zeros they are), or says it is absent.
func fullSum(t *testing.T, paths []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out[p] = "directory"
			continue
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			out[p] = "absent"
			continue
		}
		require.NoError(t, err)
		h := sha256.Sum256(b)
		out[p] = string(h[:])
	}
	return out
}

// patterned is a member file of size bytes whose bytes from 4096 on (the superblock area, the
// region map area and data) carry a pattern, so that a restore that writes zeros or the wrong
// bytes shows; its first 4096 bytes stay zero, so no probe takes it for a filesystem.
func patterned(t *testing.T, dir, name string, size int64) string {
	t.Helper()
	p := testutil.SparseFile(t, dir, name, size)
	b := make([]byte, 2*mib)
	for i := range b {
		b[i] = byte(i*7 + 13)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, SuperblockOffset)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return p
}

// TestCreateUndoAtEveryWrite fails a create at each of its writes in turn (each member file it
// makes, each superblock it writes) and checks that every member is byte for byte as it was and
// that no file or directory create made is left.
func TestCreateUndoAtEveryWrite(t *testing.T) {
	dir := testutil.MemDir(t)
	sub := filepath.Join(dir, "sub")
	members := []string{
		patterned(t, dir, "m0", 8*mib), filepath.Join(sub, "deeper", "m1"),
		testutil.SparseFile(t, dir, "m2", 8*mib), filepath.Join(dir, "m3"),
	}
	spare := patterned(t, dir, "spare", 8*mib)
	all := append(append([]string(nil), members...), spare, sub)
	o := CreateOptions{Name: "undo", Level: mapping.RAID10, Size: 8 * mib, Members: members, Spares: []string{spare}}

	var steps []string
	createFault = func(step string) error { steps = append(steps, step); return nil }
	t.Cleanup(func() { createFault = nil })
	before := fullSum(t, all)
	ms, _, err := Create(o)
	require.NoError(t, err)
	closeAll(ms)
	require.Equal(t, []string{
		"make " + members[1], "make " + members[3],
		"superblock " + members[0], "superblock " + members[1], "superblock " + members[2],
		"superblock " + members[3], "superblock " + spare,
	}, steps)
	// Put everything back for the runs that fail.
	require.NoError(t, os.RemoveAll(sub))
	require.NoError(t, os.Remove(members[3]))
	require.NoError(t, os.WriteFile(members[2], nil, 0o600))
	require.NoError(t, os.Truncate(members[2], 8*mib))
	for _, p := range []string{members[0], spare} {
		require.NoError(t, os.Remove(p))
		patterned(t, dir, filepath.Base(p), 8*mib)
	}
	require.Equal(t, before, fullSum(t, all))

	for _, failAt := range steps {
		t.Run(failAt, func(t *testing.T) {
			injected := errors.New("injected write error")
			createFault = func(step string) error {
				if step == failAt {
					return injected
				}
				return nil
			}
			ms, _, err := Create(o)
			require.ErrorIs(t, err, injected)
			assert.Nil(t, ms)
			assert.Contains(t, err.Error(), "every member is as it was")
			assert.Equal(t, before, fullSum(t, all), "a member changed")
			_, err = os.Stat(sub)
			assert.True(t, os.IsNotExist(err), "the directory create made is left")
		})
	}
}

// TestCreatedUndo: a committed create whose array then failed to start is undone whole, the
// region map area its daemon would have written included.
func TestCreatedUndo(t *testing.T) {
	dir := testutil.MemDir(t)
	members := []string{patterned(t, dir, "m0", 8*mib), filepath.Join(dir, "new", "m1")}
	all := append(append([]string(nil), members...), filepath.Join(dir, "new"))
	before := fullSum(t, all)
	p, err := PlanCreate(CreateOptions{Name: "undo", Level: mapping.RAID1, Size: 8 * mib, Members: members})
	require.NoError(t, err)
	c, err := p.Commit()
	require.NoError(t, err)
	// What a daemon writes as it starts: beyond the superblock, in the region map area.
	_, err = c.Members[0].File.WriteAt([]byte(strings.Repeat("map", 1000)), SuperblockOffset+SuperblockSize)
	require.NoError(t, err)
	closeAll(c.Members)
	require.NotEqual(t, before, fullSum(t, all))
	require.NoError(t, c.Undo())
	assert.Equal(t, before, fullSum(t, all))
}
