package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const kib = 1 << 10

// TestDiscardExamples are worked by hand in docs/layouts.md.
func TestDiscardExamples(t *testing.T) {
	tests := []struct {
		name        string
		geo         Geometry
		off, length int64
		gran        []Granularity
		want        []Extent
	}{{
		// md lost data here in 2020: the head chunk starts 2 KiB in, and
		// its mirror must start 2 KiB in as well, not at the chunk start.
		name: "raid10 n2, 2 members, unaligned head",
		geo:  Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 4 * kib, MemberBytes: []int64{64 * kib, 64 * kib}},
		off:  6 * kib, length: 12 * kib,
		want: []Extent{
			{Member: 0, Offset: 6 * kib, Length: 12 * kib, Logical: 6 * kib},
			{Member: 1, Offset: 6 * kib, Length: 12 * kib, Logical: 6 * kib},
		},
	}, {
		// Chunk 1's copies are member 2 row 0 and member 0 row 1: both
		// start 1 KiB into their chunk.
		name: "raid10 n2, 3 members, unaligned head and tail",
		geo:  Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 4 * kib, MemberBytes: []int64{16 * kib, 16 * kib, 16 * kib}},
		off:  5 * kib, length: 8 * kib,
		want: []Extent{
			{Member: 0, Offset: 5 * kib, Length: 4 * kib, Logical: 5 * kib},
			{Member: 1, Offset: 4 * kib, Length: 5 * kib, Logical: 8 * kib},
			{Member: 2, Offset: 1 * kib, Length: 7 * kib, Logical: 5 * kib},
		},
	}, {
		// Members are cut to the smallest, 16.5 KiB, rounded down to four
		// 4 KiB chunks; the larger members' extra space is never touched.
		name: "raid0, unequal members",
		geo:  Geometry{Level: RAID0, ChunkBytes: 4 * kib, MemberBytes: []int64{20 * kib, 16*kib + 512, 40 * kib}},
		off:  2 * kib, length: 40 * kib,
		want: []Extent{
			{Member: 0, Offset: 2 * kib, Length: 14 * kib, Logical: 2 * kib},
			{Member: 1, Offset: 0, Length: 14 * kib, Logical: 4 * kib},
			{Member: 2, Offset: 0, Length: 12 * kib, Logical: 8 * kib},
		},
	}, {
		name: "raid0, unequal members, whole array",
		geo:  Geometry{Level: RAID0, ChunkBytes: 4 * kib, MemberBytes: []int64{20 * kib, 16*kib + 512, 40 * kib}},
		off:  0, length: 48 * kib,
		want: []Extent{
			{Member: 0, Offset: 0, Length: 16 * kib, Logical: 0},
			{Member: 1, Offset: 0, Length: 16 * kib, Logical: 4 * kib},
			{Member: 2, Offset: 0, Length: 16 * kib, Logical: 8 * kib},
		},
	}, {
		// Member 0 rounds its start up to 4 KiB, member 1 its end down to
		// 8 KiB, and member 2 cannot discard at all.
		name: "raid0, granularity",
		geo:  Geometry{Level: RAID0, ChunkBytes: 4 * kib, MemberBytes: []int64{20 * kib, 16*kib + 512, 40 * kib}},
		off:  2 * kib, length: 40 * kib,
		gran: []Granularity{{Bytes: 4 * kib}, {Bytes: 8 * kib}, {}},
		want: []Extent{
			{Member: 0, Offset: 4 * kib, Length: 12 * kib, Logical: 12 * kib},
			{Member: 1, Offset: 0, Length: 8 * kib, Logical: 4 * kib},
		},
	}, {
		// A unit of 3 KiB aligned at 1 KiB: boundaries at 1, 4, 7, 10, 13 KiB.
		name: "raid0, odd granularity with alignment",
		geo:  Geometry{Level: RAID0, ChunkBytes: 4 * kib, MemberBytes: []int64{16 * kib}},
		off:  512, length: 12 * kib,
		gran: []Granularity{{Bytes: 3 * kib, Alignment: 1 * kib}},
		want: []Extent{{Member: 0, Offset: 1 * kib, Length: 9 * kib, Logical: 1 * kib}},
	}, {
		// Each member gets a range in each half; the copy of the unaligned
		// head chunk 0 on member 1 starts 2 KiB in, like the original.
		name: "raid10 f2, 4 members",
		geo:  Geometry{Level: RAID10, Layout: Far2, ChunkBytes: 4 * kib, MemberBytes: []int64{32 * kib, 32 * kib, 32 * kib, 32 * kib}},
		off:  2 * kib, length: 16 * kib,
		want: []Extent{
			{Member: 0, Offset: 2 * kib, Length: 4 * kib, Logical: 2 * kib},
			{Member: 0, Offset: 16 * kib, Length: 4 * kib, Logical: 12 * kib},
			{Member: 1, Offset: 0, Length: 4 * kib, Logical: 4 * kib},
			{Member: 1, Offset: 18 * kib, Length: 4 * kib, Logical: 2 * kib},
			{Member: 2, Offset: 0, Length: 4 * kib, Logical: 8 * kib},
			{Member: 2, Offset: 16 * kib, Length: 4 * kib, Logical: 4 * kib},
			{Member: 3, Offset: 0, Length: 4 * kib, Logical: 12 * kib},
			{Member: 3, Offset: 16 * kib, Length: 4 * kib, Logical: 8 * kib},
		},
	}, {
		// The two halves of a member meet when the whole array goes.
		name: "raid10 f2, whole array",
		geo:  Geometry{Level: RAID10, Layout: Far2, ChunkBytes: 4 * kib, MemberBytes: []int64{32 * kib, 32 * kib, 36 * kib}},
		off:  0, length: 48 * kib,
		want: []Extent{
			{Member: 0, Offset: 0, Length: 32 * kib, Logical: 0},
			{Member: 1, Offset: 0, Length: 32 * kib, Logical: 4 * kib},
			{Member: 2, Offset: 0, Length: 32 * kib, Logical: 8 * kib},
		},
	}, {
		// Member 1 holds chunk 1's head, then chunk 0's copy (not
		// discarded), then whole stripe 1, then chunk 8's copy: three
		// ranges. Both copies of chunk 1 start 2 KiB into their chunk.
		name: "raid10 o2, 4 members, head and tail",
		geo:  Geometry{Level: RAID10, Layout: Offset2, ChunkBytes: 4 * kib, MemberBytes: []int64{32 * kib, 32 * kib, 32 * kib, 32 * kib}},
		off:  6 * kib, length: 32 * kib,
		want: []Extent{
			{Member: 0, Offset: 4 * kib, Length: 16 * kib, Logical: 12 * kib},
			{Member: 1, Offset: 2 * kib, Length: 2 * kib, Logical: 6 * kib},
			{Member: 1, Offset: 8 * kib, Length: 10 * kib, Logical: 20 * kib},
			{Member: 1, Offset: 20 * kib, Length: 4 * kib, Logical: 32 * kib},
			{Member: 2, Offset: 0, Length: 4 * kib, Logical: 8 * kib},
			{Member: 2, Offset: 6 * kib, Length: 10 * kib, Logical: 6 * kib},
			{Member: 2, Offset: 20 * kib, Length: 2 * kib, Logical: 36 * kib},
			{Member: 3, Offset: 0, Length: 16 * kib, Logical: 12 * kib},
		},
	}, {
		name: "linear, split at member boundaries",
		geo:  Geometry{Level: Linear, MemberBytes: []int64{10 * kib, 5*kib + 100, 20 * kib}},
		off:  8 * kib, length: 10 * kib,
		want: []Extent{
			{Member: 0, Offset: 8 * kib, Length: 2 * kib, Logical: 8 * kib},
			{Member: 1, Offset: 0, Length: 5 * kib, Logical: 10 * kib},
			{Member: 2, Offset: 0, Length: 3 * kib, Logical: 15 * kib},
		},
	}, {
		name: "raid1, every mirror, each with its own granularity",
		geo:  Geometry{Level: RAID1, MemberBytes: []int64{8 * kib, 12 * kib, 9*kib + 1}},
		off:  1 * kib, length: 6 * kib,
		gran: []Granularity{{Bytes: 512}, {Bytes: 2 * kib}, {Bytes: 4 * kib, Alignment: 512}},
		want: []Extent{
			{Member: 0, Offset: 1 * kib, Length: 6 * kib, Logical: 1 * kib},
			{Member: 1, Offset: 2 * kib, Length: 4 * kib, Logical: 2 * kib},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.geo)
			require.NoError(t, err)
			got, err := m.Discard(tt.off, tt.length, tt.gran, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestDiscardMiddleIsRows checks a discard over many stripes directly: every
// raid0 member gets one range, whatever the chunk count.
func TestDiscardMiddleIsRows(t *testing.T) {
	const members, chunk = 64, 4 * kib
	sizes := make([]int64, members)
	for i := range sizes {
		sizes[i] = 1 << 30
	}
	m, err := New(Geometry{Level: RAID0, ChunkBytes: chunk, MemberBytes: sizes})
	require.NoError(t, err)
	got, err := m.Discard(3*chunk+512, 1<<30, nil, nil)
	require.NoError(t, err)
	require.Len(t, got, members)
	var total int64
	for i, e := range got {
		assert.Equal(t, i, e.Member)
		total += e.Length
	}
	assert.Equal(t, int64(1<<30), total)
	// Member 3 starts 512 bytes into row 0; members 0 to 2 start at row 1.
	assert.Equal(t, int64(512), got[3].Offset)
	assert.Equal(t, int64(chunk), got[0].Offset)
}
