package array

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil/ublktest"
	"uraid/mapping"
)

// An array whose last run ended without a clean stop (its members still say dirty) assembles as
// unclean; a mirror's regions written then need a resync, which status calls pending until the
// array starts serving, and which the resync clears. A clean stop leaves a clean array.
func TestUncleanFromDirtySuperblocks(t *testing.T) {
	for _, c := range []struct {
		ac       arrayCase
		mirrored bool
	}{
		{arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, true},
		{arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, true},
		{arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, false},
	} {
		t.Run(c.ac.String(), func(t *testing.T) {
			a, paths := createArray(t, c.ac, "sync")
			assert.False(t, a.Unclean(), "a new array is clean")
			require.NoError(t, a.MarkDirty())
			h := harness(t, a)
			ublktest.Write(t, h, 0, make([]byte, 64<<10))
			require.NoError(t, h.Close())
			require.NoError(t, a.Close()) // as a daemon that dies: never marked clean

			o := Options{Queues: 1, Depth: 8}
			a, err := Assemble("t", paths, o)
			require.NoError(t, err)
			assert.True(t, a.Unclean())
			st := a.Status("", 0)
			assert.True(t, st.Unclean)
			if c.mirrored {
				assert.Equal(t, ResyncPending, st.Resync, "the regions being written need a resync")
				require.NoError(t, a.MarkDirty()) // serving starts the resync
				a.WaitSync()
				st = a.Status("", 0)
				assert.Empty(t, st.Resync, "the resync is done")
				assert.Zero(t, st.Regions.NeedResync)
				assert.True(t, st.Unclean, "the run still started from an unclean end")
			} else {
				assert.Empty(t, st.Resync, "no copies, nothing to resync")
				require.NoError(t, a.MarkDirty())
			}
			require.NoError(t, a.MarkClean())
			require.NoError(t, a.Close())

			a, err = Assemble("t", paths, o)
			require.NoError(t, err)
			defer a.Close()
			assert.False(t, a.Unclean(), "a clean stop leaves a clean array")
			assert.Empty(t, a.Status("", 0).Resync)
			a.SetUnclean(true)
			assert.True(t, a.Status("", 0).Unclean)
		})
	}
}
