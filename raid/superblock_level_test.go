package raid

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
)

// The on-disk codes as docs/superblock.md gives them, written out here rather
// than read from the tables the codec uses, so a change to those tables fails
// this test instead of silently changing the format.
var (
	wantLevelCodes  = map[uint8]mapping.Level{1: mapping.Linear, 2: mapping.RAID0, 3: mapping.RAID1, 4: mapping.RAID10}
	wantLayoutCodes = map[uint8]mapping.Layout{0: mapping.NoLayout, 1: mapping.Near2, 2: mapping.Far2, 3: mapping.Offset2}
)

// TestLevelCodes: the level byte and mapping.Level are a bijection between
// the four known codes and the four levels; every other byte value is
// refused, and so is every value that is not a level.
func TestLevelCodes(t *testing.T) {
	seen := map[mapping.Level]bool{}
	for b := range 256 {
		code := uint8(b)
		l, ok := levelOfCode(code)
		want, known := wantLevelCodes[code]
		require.Equal(t, known, ok, "code %d", code)
		if !known {
			continue
		}
		assert.Equal(t, want, l, "code %d", code)
		back, ok := levelCode(l)
		require.True(t, ok, "%v", l)
		assert.Equal(t, code, back, "%v encodes to the code it came from", l)
		assert.False(t, seen[l], "%v decoded from two codes", l)
		seen[l] = true
	}
	for l := mapping.Level(-2); l <= mapping.RAID10+2; l++ {
		code, ok := levelCode(l)
		require.Equal(t, l.Valid(), ok, "%v", l)
		if ok {
			back, ok := levelOfCode(code)
			require.True(t, ok)
			assert.Equal(t, l, back, "%v decodes from the code it encodes to", l)
			assert.True(t, seen[l], "%v has a code", l)
		}
	}
	assert.Len(t, seen, len(wantLevelCodes))
}

// TestLayoutCodes is TestLevelCodes for the layout byte.
func TestLayoutCodes(t *testing.T) {
	seen := map[mapping.Layout]bool{}
	for b := range 256 {
		code := uint8(b)
		l, ok := layoutOfCode(code)
		want, known := wantLayoutCodes[code]
		require.Equal(t, known, ok, "code %d", code)
		if !known {
			continue
		}
		assert.Equal(t, want, l, "code %d", code)
		back, ok := layoutCode(l)
		require.True(t, ok, "%v", l)
		assert.Equal(t, code, back, "%v encodes to the code it came from", l)
		assert.False(t, seen[l], "%v decoded from two codes", l)
		seen[l] = true
	}
	for l := mapping.Layout(-2); l <= mapping.Offset2+2; l++ {
		code, ok := layoutCode(l)
		require.Equal(t, l.Valid(), ok, "%v", l)
		if ok {
			back, ok := layoutOfCode(code)
			require.True(t, ok)
			assert.Equal(t, l, back, "%v decodes from the code it encodes to", l)
			assert.True(t, seen[l], "%v has a code", l)
		}
	}
	assert.Len(t, seen, len(wantLayoutCodes))
}

// TestLevelLayoutBytes drives the codes through the whole encoder and decoder:
// every level and layout lands in its byte, and every byte value nobody
// defined is refused as the work of a newer uraid.
func TestLevelLayoutBytes(t *testing.T) {
	for code, level := range wantLevelCodes {
		sb := validSB()
		sb.Level, sb.Layout, sb.ChunkSize = level, mapping.NoLayout, 0
		if level.HasLayout() {
			sb.Layout = mapping.Near2
		}
		if level.Striped() {
			sb.ChunkSize = 64 << 10
		}
		b := mustMarshal(t, sb)
		assert.Equal(t, code, b[offLevel], "%v", level)
		var got Superblock
		require.NoError(t, got.UnmarshalBinary(b))
		assert.Equal(t, sb, got)
	}
	for code, layout := range wantLayoutCodes {
		if layout == mapping.NoLayout {
			continue // raid10 always has one; the loop above wrote code 0 for the other levels
		}
		sb := validSB()
		sb.Layout = layout
		b := mustMarshal(t, sb)
		assert.Equal(t, code, b[offLayout], "%v", layout)
		var got Superblock
		require.NoError(t, got.UnmarshalBinary(b))
		assert.Equal(t, layout, got.Layout)
	}
	for v := range 256 {
		code := uint8(v)
		if _, known := wantLevelCodes[code]; !known {
			b := mustMarshal(t, validSB())
			b[offLevel] = code
			reseal(b)
			var got Superblock
			err := got.UnmarshalBinary(b)
			require.ErrorIs(t, err, ErrInvalid, "level code %d", code)
			assert.Contains(t, err.Error(), fmt.Sprintf("unknown level code %d (written by a newer uraid? upgrade it)", code))
			assert.Equal(t, Superblock{}, got, "a refused block leaves the superblock unchanged")
		}
		if _, known := wantLayoutCodes[code]; !known {
			b := mustMarshal(t, validSB())
			b[offLayout] = code
			reseal(b)
			var got Superblock
			err := got.UnmarshalBinary(b)
			require.ErrorIs(t, err, ErrInvalid, "layout code %d", code)
			assert.Contains(t, err.Error(), fmt.Sprintf("unknown layout code %d (written by a newer uraid? upgrade it)", code))
		}
	}
}

// TestMarshalRefusesUnknownLevel: a value with no code is never written.
func TestMarshalRefusesUnknownLevel(t *testing.T) {
	for _, mutate := range []func(*Superblock){
		func(sb *Superblock) { sb.Level = 0 },
		func(sb *Superblock) { sb.Level = mapping.RAID10 + 1 },
		func(sb *Superblock) { sb.Layout = mapping.Offset2 + 1 },
		func(sb *Superblock) { sb.Layout = -1 },
	} {
		sb := validSB()
		mutate(&sb)
		_, err := sb.MarshalBinary()
		require.ErrorIs(t, err, ErrInvalid, "%+v", sb)
		assert.Contains(t, err.Error(), "is not")
	}
}

func TestState(t *testing.T) {
	assert.Equal(t, "clean", StateClean.String())
	assert.Equal(t, "dirty", StateDirty.String())
	assert.False(t, State(0).Valid())
	assert.Equal(t, "state(3)", State(3).String())
}
