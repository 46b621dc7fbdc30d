package raid

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
)

// An array that was not stopped cleanly (its members still say dirty) assembles as unclean, with
// a resync pending for levels that have copies; a clean stop clears it.
func TestUncleanFromDirtySuperblocks(t *testing.T) {
	for _, c := range []struct {
		ac     arrayCase
		resync string
	}{
		{arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, ResyncPending},
		{arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, ResyncPending},
		{arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, ""},
	} {
		t.Run(c.ac.String(), func(t *testing.T) {
			a, paths := createArray(t, c.ac, "sync")
			assert.False(t, a.Unclean(), "a new array is clean")
			require.NoError(t, a.MarkDirty())
			require.NoError(t, a.Close()) // as a daemon that dies: never marked clean

			o := Options{Queues: 1, Depth: 8}
			a, err := Assemble("t", paths, o)
			require.NoError(t, err)
			assert.True(t, a.Unclean())
			st := a.Status("", 0)
			assert.True(t, st.Unclean)
			assert.Equal(t, c.resync, st.Resync)
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
