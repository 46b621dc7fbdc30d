package raid

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in        string
		want      Level
		name      string
		striped   bool
		redundant bool
	}{
		{"linear", LevelLinear, "linear", false, false},
		{"0", LevelRAID0, "0", true, false},
		{"raid0", LevelRAID0, "0", true, false},
		{"1", LevelRAID1, "1", false, true},
		{"raid1", LevelRAID1, "1", false, true},
		{"10", LevelRAID10, "10", true, true},
		{"raid10", LevelRAID10, "10", true, true},
	}
	for _, tt := range tests {
		l, err := ParseLevel(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, l, tt.in)
		assert.Equal(t, tt.name, l.String(), tt.in)
		assert.True(t, l.Valid(), tt.in)
		assert.Equal(t, tt.striped, l.Striped(), tt.in)
		assert.Equal(t, tt.redundant, l.Redundant(), tt.in)
	}
	for _, bad := range []string{"", "5", "raid5", "Linear", "01"} {
		_, err := ParseLevel(bad)
		assert.Error(t, err, bad)
	}
	assert.False(t, Level(0).Valid())
	assert.Equal(t, "level(9)", Level(9).String())
}

func TestParseLayout(t *testing.T) {
	for _, l := range []Layout{LayoutNone, LayoutN2, LayoutF2, LayoutO2} {
		p, err := ParseLayout(l.String())
		require.NoError(t, err)
		assert.Equal(t, l, p)
		assert.True(t, l.Valid())
	}
	assert.Equal(t, "f2", LayoutF2.String())
	for _, bad := range []string{"n3", "near", "F2", " "} {
		_, err := ParseLayout(bad)
		assert.Error(t, err, bad)
	}
	assert.False(t, Layout(4).Valid())
}

func TestState(t *testing.T) {
	assert.Equal(t, "clean", StateClean.String())
	assert.Equal(t, "dirty", StateDirty.String())
	assert.False(t, State(0).Valid())
	assert.Equal(t, "state(3)", State(3).String())
}
