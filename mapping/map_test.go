package mapping

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteNear2ThreeMembers(t *testing.T) {
	// Slots run 2c, 2c+1 across members 0, 1, 2, so chunk 1 is on member 2
	// row 0 and member 0 row 1 (see docs/layouts.md).
	m, err := New(Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 4 * kib, MemberBytes: []int64{16 * kib, 16 * kib, 16 * kib}})
	require.NoError(t, err)
	got, err := m.Write(5*kib, 8*kib, nil)
	require.NoError(t, err)
	assert.Equal(t, []Extent{
		{Member: 2, Offset: 1 * kib, Length: 3 * kib, Logical: 5 * kib},
		{Member: 0, Offset: 5 * kib, Length: 3 * kib, Logical: 5 * kib},
		{Member: 1, Offset: 4 * kib, Length: 4 * kib, Logical: 8 * kib},
		{Member: 2, Offset: 4 * kib, Length: 4 * kib, Logical: 8 * kib},
		{Member: 0, Offset: 8 * kib, Length: 1 * kib, Logical: 12 * kib},
		{Member: 1, Offset: 8 * kib, Length: 1 * kib, Logical: 12 * kib},
	}, got)
}

func TestReadFar2(t *testing.T) {
	m, err := New(Geometry{Level: RAID10, Layout: Far2, ChunkBytes: 4 * kib, MemberBytes: []int64{32 * kib, 32 * kib, 32 * kib, 32 * kib}})
	require.NoError(t, err)
	got, err := m.Read(14*kib, 4*kib, nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	// Chunk 3: member 3 row 0, copy on member 0 in the second half (row 4).
	assert.Equal(t, int64(14*kib), got[0].Logical)
	assert.Equal(t, 2, got[0].N)
	assert.Equal(t, Extent{Member: 3, Offset: 2 * kib, Length: 2 * kib, Logical: 14 * kib}, got[0].Copies[0])
	assert.Equal(t, Extent{Member: 0, Offset: 18 * kib, Length: 2 * kib, Logical: 14 * kib}, got[0].Copies[1])
	// Chunk 4: member 0 row 1, copy on member 1 row 5.
	assert.Equal(t, Extent{Member: 0, Offset: 4 * kib, Length: 2 * kib, Logical: 16 * kib}, got[1].Copies[0])
	assert.Equal(t, Extent{Member: 1, Offset: 20 * kib, Length: 2 * kib, Logical: 16 * kib}, got[1].Copies[1])
}

func TestReadRAID1(t *testing.T) {
	m, err := New(Geometry{Level: RAID1, MemberBytes: []int64{1 << 20, 1 << 20, 1 << 20}})
	require.NoError(t, err)
	got, err := m.Read(4096, 1<<19, nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, 3, got[0].N)
	for i, c := range got[0].Copies[:3] {
		assert.Equal(t, Extent{Member: i, Offset: 4096, Length: 1 << 19, Logical: 4096}, c)
	}
}

func TestRequestErrors(t *testing.T) {
	m, err := New(Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 4 * kib, MemberBytes: []int64{64 * kib, 64 * kib}})
	require.NoError(t, err)
	size := m.Size()
	tests := []struct {
		name        string
		off, length int64
		want        error
	}{
		{"offset inside a sector", 100, 512, ErrMisaligned},
		{"length inside a sector", 0, 1000, ErrMisaligned},
		{"zero length", 0, 0, ErrRange},
		{"negative length", 512, -512, ErrRange},
		{"negative offset", -512, 1024, ErrRange},
		{"past the end", size - 512, 1024, ErrRange},
		{"at the end", size, 512, ErrRange},
		{"wraps around", math.MaxInt64 - 511, 1024, ErrRange},
		{"largest offset and length", math.MaxInt64 - 511, math.MaxInt64 - 511, ErrRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []Extent{{Member: 5}}
			w, err := m.Write(tt.off, tt.length, dst)
			assert.ErrorIs(t, err, tt.want)
			assert.Equal(t, dst, w)
			_, err = m.Read(tt.off, tt.length, nil)
			assert.ErrorIs(t, err, tt.want)
			d, err := m.Discard(tt.off, tt.length, nil, dst)
			assert.ErrorIs(t, err, tt.want)
			assert.Equal(t, dst, d)
		})
	}
}

func TestGranularityErrors(t *testing.T) {
	m, err := New(Geometry{Level: RAID0, ChunkBytes: 4 * kib, MemberBytes: []int64{64 * kib, 64 * kib}})
	require.NoError(t, err)
	for name, gran := range map[string][]Granularity{
		"too few":             {{Bytes: 512}},
		"too many":            {{Bytes: 512}, {Bytes: 512}, {Bytes: 512}},
		"negative bytes":      {{Bytes: 512}, {Bytes: -512}},
		"not whole sectors":   {{Bytes: 4000}, {Bytes: 512}},
		"misaligned":          {{Bytes: 4096, Alignment: 100}, {Bytes: 512}},
		"negative alignment":  {{Bytes: 4096, Alignment: -512}, {Bytes: 512}},
		"larger than members": {{Bytes: 512}, {Bytes: MaxMemberBytes + 512}},
	} {
		_, err := m.Discard(0, 8*kib, gran, nil)
		assert.ErrorIs(t, err, ErrGranularity, name)
	}
	// A member without discard support and an alignment past the unit are fine.
	got, err := m.Discard(0, 16*kib, []Granularity{{}, {Bytes: 4096, Alignment: 3 * 4096}}, nil)
	require.NoError(t, err)
	assert.Equal(t, []Extent{{Member: 1, Offset: 0, Length: 8 * kib, Logical: 4 * kib}}, got)
}

// TestNoAllocations: with room in dst, planning allocates nothing, so the
// I/O path can reuse one slice per queue.
func TestNoAllocations(t *testing.T) {
	for _, lc := range layoutCases {
		t.Run(lc.name, func(t *testing.T) {
			g := Geometry{Level: lc.level, Layout: lc.layout, MemberBytes: []int64{64 << 20, 64 << 20, 80 << 20, 64 << 20}}
			if lc.level == RAID0 || lc.level == RAID10 {
				g.ChunkBytes = 64 * kib
			}
			m, err := New(g)
			require.NoError(t, err)
			off, length := int64(100*kib), m.Size()-200*kib
			ext := make([]Extent, 0, max(m.MaxWriteExtents(length), m.MaxDiscardExtents()))
			pieces := make([]Piece, 0, m.MaxReadPieces(length))
			gran := []Granularity{{Bytes: 4096}, {Bytes: 512}, {Bytes: 1 << 20, Alignment: 4096}, {}}
			assert.Zero(t, testing.AllocsPerRun(20, func() {
				if _, err := m.Write(off, length, ext[:0]); err != nil {
					t.Fatal(err)
				}
			}), "Write")
			assert.Zero(t, testing.AllocsPerRun(20, func() {
				if _, err := m.Read(off, length, pieces[:0]); err != nil {
					t.Fatal(err)
				}
			}), "Read")
			assert.Zero(t, testing.AllocsPerRun(20, func() {
				if _, err := m.Discard(off, length, gran, ext[:0]); err != nil {
					t.Fatal(err)
				}
			}), "Discard")
		})
	}
}

// TestLogicalAtInvertsWrite checks the exported inverse on every layout:
// each sector Write places maps back to its logical sector, and bytes
// outside a member's used space hold nothing.
func TestLogicalAtInvertsWrite(t *testing.T) {
	for _, lc := range layoutCases {
		g := Geometry{Level: lc.level, Layout: lc.layout, MemberBytes: []int64{64 << 10, 64 << 10, 64 << 10}}
		if lc.level.Striped() {
			g.ChunkBytes = 4 << 10
		}
		m, err := New(g)
		if err != nil {
			t.Fatalf("%s: %v", lc.name, err)
		}
		for off := int64(0); off < m.Size(); off += sector {
			ext, err := m.Write(off, sector, nil)
			if err != nil {
				t.Fatalf("%s: Write(%d): %v", lc.name, off, err)
			}
			for _, e := range ext {
				if got := m.LogicalAt(e.Member, e.Offset); got != off {
					t.Fatalf("%s: LogicalAt(%d, %d) = %d, want %d", lc.name, e.Member, e.Offset, got, off)
				}
			}
		}
		for i := range m.Members() {
			if got := m.LogicalAt(i, m.MemberBytes(i)); got != -1 {
				t.Fatalf("%s: LogicalAt(%d, used %d) = %d, want -1", lc.name, i, m.MemberBytes(i), got)
			}
		}
		if got := m.LogicalAt(m.Members(), 0); got != -1 {
			t.Fatalf("%s: LogicalAt of a non-member = %d, want -1", lc.name, got)
		}
	}
}
