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

func TestParseLayout10(t *testing.T) {
	tests := []struct {
		in   string
		want Layout10
	}{
		{"n2", Near2}, {"N2", Near2}, {"near", Near2},
		{"f2", Far2}, {"far", Far2},
		{"o2", Offset2}, {"offset", Offset2},
	}
	for _, tt := range tests {
		got, err := ParseLayout10(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		back, err := ParseLayout10(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, back)
	}
	for _, bad := range []string{"", "n3", "f1", "o", "2"} {
		_, err := ParseLayout10(bad)
		assert.ErrorIs(t, err, ErrParse, bad)
	}
	assert.Equal(t, Near2, Layout10(0), "the zero layout is md's default")
}

func TestLevelFlagValue(t *testing.T) {
	var l Level
	require.NoError(t, l.Set("10"))
	assert.Equal(t, RAID10, l)
	assert.Error(t, l.Set("6"))
	assert.Equal(t, RAID10, l, "a failed Set keeps the old value")

	var lay Layout10
	require.NoError(t, lay.Set("o2"))
	assert.Equal(t, Offset2, lay)
	assert.Error(t, lay.Set("x"))
}
