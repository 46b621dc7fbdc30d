package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in   string
		want Level
	}{
		{"linear", Linear}, {"LINEAR", Linear},
		{"0", RAID0}, {"raid0", RAID0}, {"RAID0", RAID0},
		{"1", RAID1}, {"raid1", RAID1},
		{"10", RAID10}, {"raid10", RAID10}, {" raid10 ", RAID10},
	}
	for _, tt := range tests {
		got, err := ParseLevel(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		// The canonical name parses back to the same level.
		back, err := ParseLevel(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, back)
	}
	for _, bad := range []string{"", "5", "raid", "raid5", "01", "linear0", "mirror"} {
		_, err := ParseLevel(bad)
		assert.ErrorIs(t, err, ErrParse, bad)
	}
	assert.Equal(t, "Level(0)", Level(0).String())
}

// TestLevelNames pins both names of every level and its predicates: the long
// name is what the text views print, the short one what --level takes and the
// JSON carries, and scripts read both.
func TestLevelNames(t *testing.T) {
	tests := []struct {
		level                         Level
		long, short                   string
		striped, redundant, hasLayout bool
	}{
		{Linear, "linear", "linear", false, false, false},
		{RAID0, "raid0", "0", true, false, false},
		{RAID1, "raid1", "1", false, true, false},
		{RAID10, "raid10", "10", true, true, true},
	}
	for _, tt := range tests {
		assert.True(t, tt.level.Valid(), tt.long)
		assert.Equal(t, tt.long, tt.level.String())
		assert.Equal(t, tt.short, tt.level.ShortName())
		for _, name := range []string{tt.long, tt.short} {
			back, err := ParseLevel(name)
			require.NoError(t, err, name)
			assert.Equal(t, tt.level, back, name)
		}
		assert.Equal(t, tt.striped, tt.level.Striped(), tt.long)
		assert.Equal(t, tt.redundant, tt.level.Redundant(), tt.long)
		assert.Equal(t, tt.hasLayout, tt.level.HasLayout(), tt.long)
	}
	for _, bad := range []Level{-1, 0, RAID10 + 1} {
		assert.False(t, bad.Valid(), "%d", int(bad))
		assert.Equal(t, bad.String(), bad.ShortName(), "an invalid level has no short name")
	}
}

func TestParseLayout(t *testing.T) {
	tests := []struct {
		in   string
		want Layout
	}{
		{"n2", Near2}, {"N2", Near2}, {"near", Near2},
		{"f2", Far2}, {"far", Far2},
		{"o2", Offset2}, {"offset", Offset2},
	}
	for _, tt := range tests {
		got, err := ParseLayout(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		back, err := ParseLayout(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, back)
	}
	for _, bad := range []string{"", "n3", "f1", "o", "2"} {
		_, err := ParseLayout(bad)
		assert.ErrorIs(t, err, ErrParse, bad)
	}
	assert.Equal(t, NoLayout, Layout(0), "the zero value is the layout of levels without one")
	assert.Equal(t, "none", NoLayout.String())
	_, err := ParseLayout("none")
	assert.ErrorIs(t, err, ErrParse, "nobody types a layout of none: it is what leaving --layout out means")
	for _, l := range []Layout{NoLayout, Near2, Far2, Offset2} {
		assert.True(t, l.Valid(), "%v", l)
	}
	for _, l := range []Layout{-1, Offset2 + 1} {
		assert.False(t, l.Valid(), "%d", int(l))
	}
}

func TestLevelFlagValue(t *testing.T) {
	var l Level
	require.NoError(t, l.Set("10"))
	assert.Equal(t, RAID10, l)
	assert.Error(t, l.Set("6"))
	assert.Equal(t, RAID10, l, "a failed Set keeps the old value")

	var lay Layout
	require.NoError(t, lay.Set("o2"))
	assert.Equal(t, Offset2, lay)
	assert.Error(t, lay.Set("x"))
}
