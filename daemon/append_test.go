package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/internal/testutil"
	"uraid/internal/testutil/raidtest"
	"uraid/mapping"
)

// TestServedAppend: a running linear array appends a member in a hand-over: the append is an
// event before the hand-over, the record names the new member for the successor, and every
// member's superblock counts it. A raid1 refuses, and serves on with nothing written.
func TestServedAppend(t *testing.T) {
	t.Run("raid1 refuses", func(t *testing.T) {
		l := startLifecycle(t, newFakeDevice(true), Config{})
		dev := filepath.Join(t.TempDir(), "new")
		require.NoError(t, os.WriteFile(dev, nil, 0o600))
		require.NoError(t, os.Truncate(dev, 16<<20))
		_, err := l.s.Append(AppendRequest{Add: []string{dev}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--copies N --add DEV")
		assert.True(t, l.running(), "a refusal leaves the array serving")
		b, err := os.ReadFile(dev)
		require.NoError(t, err)
		assert.Equal(t, make([]byte, 16<<20), b, "nothing written")
		require.NoError(t, l.s.Stop())
		require.NoError(t, l.ended())
	})
	t.Run("linear appends", func(t *testing.T) {
		l := startLifecycleOf(t, newFakeDevice(true), Config{}, mapping.Linear)
		ch, cancel := l.s.Subscribe()
		defer cancel()
		assert.Equal(t, EventWatching, recv(t, ch).Type)
		old := l.s.a.Map().Size()
		dev := filepath.Join(t.TempDir(), "new")
		require.NoError(t, os.WriteFile(dev, nil, 0o600))
		require.NoError(t, os.Truncate(dev, 16<<20))
		_, err := l.s.Append(AppendRequest{Add: []string{"new"}})
		require.ErrorContains(t, err, "absolute path")

		res, err := l.s.Append(AppendRequest{Add: []string{dev}})
		require.NoError(t, err)
		require.NoError(t, l.ended(), "handed over")
		assert.Equal(t, 2, res.OldMembers)
		assert.Equal(t, 3, res.NewMembers)
		assert.Equal(t, []string{dev}, res.Added)
		assert.Equal(t, old, res.OldSize)
		assert.Equal(t, old+res.DataSize, res.NewSize)
		assert.Empty(t, res.Error)
		e := recv(t, ch)
		assert.Equal(t, EventMembersAppended, e.Type)
		assert.Contains(t, e.Message, "3 members (was 2)")
		assert.Equal(t, EventHandedOver, recv(t, ch).Type)
		rec, err := ReadRecord("life")
		require.NoError(t, err)
		assert.Equal(t, append(l.members[:2:2], dev), rec.Members, "the successor assembles the new member")
		assert.True(t, rec.Handover)
		for i, p := range rec.Members {
			sb := raidtest.Superblock(t, p)
			assert.Equal(t, uint32(3), sb.Members, p)
			assert.Equal(t, uint32(i), sb.Index, p)
		}
	})
	t.Run("raid0 reshapes", func(t *testing.T) {
		l := startLifecycleOf(t, newFakeDevice(true), Config{}, mapping.RAID0)
		ch, cancel := l.s.Subscribe()
		defer cancel()
		assert.Equal(t, EventWatching, recv(t, ch).Type)
		old := l.s.a.Map().Size()
		fi, err := os.Stat(l.members[0])
		require.NoError(t, err)
		small := filepath.Join(t.TempDir(), "small")
		require.NoError(t, os.WriteFile(small, nil, 0o600))
		require.NoError(t, os.Truncate(small, fi.Size()/2))
		_, err = l.s.Append(AppendRequest{Add: []string{small}})
		require.ErrorContains(t, err, "too small")
		assert.True(t, l.running(), "a refusal leaves the array serving")

		dev := filepath.Join(t.TempDir(), "new")
		require.NoError(t, os.WriteFile(dev, nil, 0o600))
		require.NoError(t, os.Truncate(dev, fi.Size()))
		res, err := l.s.Append(AppendRequest{Add: []string{dev}, MaxRateBytesPS: 1 << 30})
		require.NoError(t, err)
		require.NoError(t, l.ended(), "handed over")
		assert.True(t, res.Reshape)
		assert.Equal(t, 2, res.OldMembers)
		assert.Equal(t, 3, res.NewMembers)
		assert.Equal(t, old, res.OldSize)
		assert.Equal(t, old/2*3, res.NewSize)
		assert.Empty(t, res.Error)
		e := recv(t, ch)
		assert.Equal(t, EventReshapeStarted, e.Type)
		assert.Contains(t, e.Message, "reshape to 3 members")
		assert.Equal(t, EventHandedOver, recv(t, ch).Type)
		rec, err := ReadRecord("life")
		require.NoError(t, err)
		assert.Equal(t, append(l.members[:2:2], dev), rec.Members, "the successor assembles the new member")
		assert.Equal(t, int64(1<<30), rec.Options.ReshapeMaxRate, "and paces the reshape")
		for _, p := range rec.Members {
			sb := raidtest.Superblock(t, p)
			require.NotNil(t, sb.Reshape, p)
			assert.Equal(t, int64(0), sb.Reshape.State.Cursor, p)
		}

		// The successor serves while the reshape runs, and hears of its end.
		a, err := array.Assemble("life", rec.Members, rec.Options.raidOptions())
		require.NoError(t, err)
		grown := make(chan int64, 1)
		a.OnReshaped(func(size int64) { grown <- size })
		require.NoError(t, a.MarkDirty())
		assert.Equal(t, res.NewSize, testutil.Receive(t, grown, "the reshape's end"))
		assert.Equal(t, res.NewSize, a.Map().Size())
		require.NoError(t, a.MarkClean())
		require.NoError(t, a.Close())
	})
}
