package raid

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"uraid/mapping"
)

func drawGrowSB(t *rapid.T) *Superblock {
	level := rapid.SampledFrom([]mapping.Level{mapping.Linear, mapping.RAID0, mapping.RAID1, mapping.RAID10}).Draw(t, "level")
	sb := &Superblock{Level: level, DataOffset: DefaultDataOffset}
	switch level {
	case mapping.Linear:
		sb.Members = uint32(rapid.IntRange(1, 3).Draw(t, "members"))
	case mapping.RAID1:
		sb.Members = uint32(rapid.IntRange(1, 4).Draw(t, "members"))
	case mapping.RAID0:
		sb.Members = uint32(rapid.IntRange(1, 5).Draw(t, "members"))
	default:
		sb.Members = uint32(rapid.IntRange(2, 5).Draw(t, "members"))
		sb.Layout = rapid.SampledFrom([]mapping.Layout{mapping.Near2, mapping.Far2, mapping.Offset2}).Draw(t, "layout")
	}
	if level.Striped() {
		sb.ChunkSize = 4096 << rapid.IntRange(0, 3).Draw(t, "chunkShift")
	}
	sb.DataSize = uint64(512 * rapid.Int64Range(16*8, 1024).Draw(t, "oldSectors"))
	return sb
}

// TestGrowKeepsEveryByte: for every layout PlanGrow accepts, and any old and new data size, every
// byte of the smaller array lives at the same member byte in both (so a grow moves nothing and a
// shrink only cuts the end); and for the layouts it refuses, some byte would move.
func TestGrowKeepsEveryByte(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sb := drawGrowSB(t)
		newData := 512 * rapid.Int64Range(16*8, 4096).Draw(t, "newSectors")
		oldMap, err := MapOf(sb)
		if err != nil {
			t.Skip("no array of this geometry:", err)
		}
		grown := *sb
		grown.DataSize = uint64(newData)
		newMap, err := MapOf(&grown)
		if err != nil {
			t.Skip("no array of this geometry:", err)
		}
		moved := -1
		size := min(oldMap.Size(), newMap.Size())
		for off := int64(0); off < size; off += 512 {
			a, err1 := oldMap.Write(off, 512, nil)
			b, err2 := newMap.Write(off, 512, nil)
			if err1 != nil || err2 != nil {
				t.Fatalf("write at %d: %v, %v", off, err1, err2)
			}
			if !slices.Equal(a, b) {
				moved = int(off)
				break
			}
		}
		if err := Growable(sb.Level, sb.Layout, int(sb.Members)); err == nil {
			if moved >= 0 {
				t.Fatalf("%v %v of %d: byte %d moves from data size %d to %d", sb.Level, sb.Layout, sb.Members, moved, sb.DataSize, newData)
			}
		} else if !errors.Is(err, ErrGrow) {
			t.Fatalf("Growable: %v", err)
		}
	})
	// The refusals are needed: a far layout and a linear of two members do move bytes.
	for _, sb := range []*Superblock{
		{Level: mapping.RAID10, Layout: mapping.Far2, Members: 2, ChunkSize: 4096, DataSize: 64 << 10},
		{Level: mapping.Linear, Members: 2, DataSize: 64 << 10},
	} {
		a, _ := MapOf(sb)
		g := *sb
		g.DataSize *= 2
		b, _ := MapOf(&g)
		off := a.Size() - 512
		ea, _ := a.Write(off, 512, nil)
		eb, _ := b.Write(off, 512, nil)
		assert.NotEqual(t, ea, eb, "%v %v: the last byte moves", sb.Level, sb.Layout)
		assert.ErrorIs(t, Growable(sb.Level, sb.Layout, int(sb.Members)), ErrGrow)
	}
}

// TestPlanGrowProperty: a plan's new size is the largest the layout can have within what was
// asked and what the smallest device holds, its data size fits every device, and a size that
// is not one the layout can have is rounded down and said to be.
func TestPlanGrowProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sb := drawGrowSB(t)
		if Growable(sb.Level, sb.Layout, int(sb.Members)) != nil {
			return
		}
		if _, err := MapOf(sb); err != nil {
			t.Skip(err)
		}
		devs := make([]MemberSize, sb.Members)
		for i := range devs {
			devs[i] = MemberSize{Path: "m" + string(rune('0'+i)), Size: DefaultDataOffset + 512*rapid.Int64Range(16*8, 4096).Draw(t, "sectors")}
		}
		want := int64(0)
		if rapid.Bool().Draw(t, "sized") {
			want = rapid.Int64Range(1, 8<<20).Draw(t, "want")
		}
		p, err := PlanGrow(sb, devs, want)
		if err != nil {
			if !errors.Is(err, ErrGrow) && !errors.Is(err, ErrTooSmall) {
				t.Fatalf("refusal wraps neither ErrGrow nor ErrTooSmall: %v", err)
			}
			return
		}
		for _, d := range devs {
			if int64(sb.DataOffset)+p.NewDataSize > d.Size {
				t.Fatalf("data size %d does not fit %s of %d bytes", p.NewDataSize, d.Path, d.Size)
			}
		}
		if want > 0 && p.NewSize > want {
			t.Fatalf("size %d past the %d asked for", p.NewSize, want)
		}
		if p.Rounded != (want > 0 && p.NewSize != want) {
			t.Fatalf("rounded %v for %d asked, %d planned", p.Rounded, want, p.NewSize)
		}
		if p.NewSize == p.OldSize {
			t.Fatal("a plan that changes nothing")
		}
		// One more unit would pass what was asked or what a device holds.
		g := *sb
		g.DataSize = uint64(p.NewDataSize + dataUnit(sb))
		if m, err := MapOf(&g); err == nil && (want == 0 || m.Size() <= want) {
			fits := true
			for _, d := range devs {
				fits = fits && int64(g.DataOffset+g.DataSize) <= d.Size
			}
			if fits && m.Size() > p.NewSize {
				t.Fatalf("data size %d gives %d, larger than the plan's %d, within bounds", g.DataSize, m.Size(), p.NewSize)
			}
		}
	})
}

func TestPlanGrowRefusals(t *testing.T) {
	sb := &Superblock{Level: mapping.RAID10, Layout: mapping.Near2, Members: 4, ChunkSize: 512 << 10, DataOffset: DefaultDataOffset, DataSize: 63 << 20}
	same := func(size int64) []MemberSize {
		return []MemberSize{{"/a", size, false}, {"/b", size, false}, {"/c", size, false}, {"/d", size, false}}
	}
	_, err := PlanGrow(sb, same(64<<20), 0)
	require.ErrorIs(t, err, ErrGrow)
	assert.Contains(t, err.Error(), "no member has grown")

	devs := same(128 << 20)
	devs[2].Size = 96 << 20
	p, err := PlanGrow(sb, devs, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(95<<20), p.NewDataSize, "the smallest device decides")
	assert.Equal(t, int64(190<<20), p.NewSize)

	_, err = PlanGrow(sb, devs, 200<<20)
	require.ErrorIs(t, err, ErrTooSmall)
	assert.Contains(t, err.Error(), "/c", "names the smallest device")

	p, err = PlanGrow(sb, devs, 150<<20+12345)
	require.NoError(t, err)
	assert.True(t, p.Rounded)
	assert.Equal(t, int64(150<<20), p.NewSize, "rounded down to whole chunks")

	p, err = PlanGrow(sb, devs, 100<<20)
	require.NoError(t, err)
	assert.True(t, p.Shrinks())

	f2 := *sb
	f2.Layout = mapping.Far2
	_, err = PlanGrow(&f2, devs, 0)
	require.ErrorIs(t, err, ErrGrow)
	assert.Contains(t, err.Error(), "f2")
}

func TestPlanGrowRegionLimit(t *testing.T) {
	// 1 MiB regions cover 256 GiB at most; a raid1 at 200 GiB cannot grow to 300 GiB without
	// new regions.
	sb := &Superblock{Level: mapping.RAID1, Members: 2, DataOffset: DefaultDataOffset, DataSize: 200 << 30}
	devs := []MemberSize{{"/a", 1 << 40, false}, {"/b", 1 << 40, false}}
	p, err := PlanGrow(sb, devs, 256<<30)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), p.RegionSize)
	_, err = PlanGrow(sb, devs, 300<<30)
	require.ErrorIs(t, err, ErrGrow)
	assert.Contains(t, err.Error(), "274877906944") // 256 GiB, the limit
}
