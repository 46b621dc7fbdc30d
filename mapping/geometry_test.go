package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewSize(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name       string
		geo        Geometry
		size       int64
		chunk      int64
		copies     int
		memberUsed []int64
	}{{
		name: "linear sums whole sectors",
		geo:  Geometry{Level: Linear, MemberBytes: []int64{1000, 2048, 513}},
		size: 512 + 2048 + 512, copies: 1,
		memberUsed: []int64{512, 2048, 512},
	}, {
		name: "raid0 takes whole chunks of the smallest",
		geo:  Geometry{Level: RAID0, ChunkBytes: 64 * kib, MemberBytes: []int64{mib, mib - 1, 3 * mib}},
		size: 3 * 15 * 64 * kib, chunk: 64 * kib, copies: 1,
		memberUsed: []int64{15 * 64 * kib, 15 * 64 * kib, 15 * 64 * kib},
	}, {
		name: "raid0 default chunk",
		geo:  Geometry{Level: RAID0, MemberBytes: []int64{mib, mib}},
		size: 2 * mib, chunk: 512 * kib, copies: 1,
		memberUsed: []int64{mib, mib},
	}, {
		name: "raid1 is the smallest",
		geo:  Geometry{Level: RAID1, MemberBytes: []int64{mib, mib + 4096, mib - 100}},
		size: mib - 512, copies: 3,
		memberUsed: []int64{mib - 512, mib - 512, mib - 512},
	}, {
		name: "n2 on 3 members with an odd slot count leaves the last slot unused",
		geo:  Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 4 * kib, MemberBytes: []int64{12 * kib, 12 * kib, 13 * kib}},
		size: 4 * 4 * kib, chunk: 4 * kib, copies: 2, // 9 slots hold 4 chunks
		memberUsed: []int64{12 * kib, 12 * kib, 12 * kib},
	}, {
		name: "n2 on 3 members, even slot count",
		geo:  Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 4 * kib, MemberBytes: []int64{16 * kib, 16 * kib, 16 * kib}},
		size: 6 * 4 * kib, chunk: 4 * kib, copies: 2,
		memberUsed: []int64{16 * kib, 16 * kib, 16 * kib},
	}, {
		name: "f2 uses an even number of chunks per member",
		geo:  Geometry{Level: RAID10, Layout: Far2, ChunkBytes: 4 * kib, MemberBytes: []int64{20 * kib, 24 * kib}},
		size: 2 * 2 * 4 * kib, chunk: 4 * kib, copies: 2,
		memberUsed: []int64{16 * kib, 16 * kib},
	}, {
		name: "o2 likewise",
		geo:  Geometry{Level: RAID10, Layout: Offset2, ChunkBytes: 4 * kib, MemberBytes: []int64{24 * kib, 24 * kib, 24 * kib, 24*kib + 4095}},
		size: 4 * 3 * 4 * kib, chunk: 4 * kib, copies: 2,
		memberUsed: []int64{24 * kib, 24 * kib, 24 * kib, 24 * kib},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.geo)
			require.NoError(t, err)
			assert.Equal(t, tt.size, m.Size())
			assert.Equal(t, tt.chunk, m.ChunkBytes())
			assert.Equal(t, tt.copies, m.Copies())
			assert.Equal(t, len(tt.geo.MemberBytes), m.Members())
			for i, want := range tt.memberUsed {
				assert.Equal(t, want, m.MemberBytes(i), "member %d", i)
			}
			assert.Zero(t, m.MemberBytes(-1))
			assert.Zero(t, m.MemberBytes(len(tt.geo.MemberBytes)))
		})
	}
}

func TestNewRejects(t *testing.T) {
	ok := []int64{1 << 20, 1 << 20}
	tests := []struct {
		name    string
		geo     Geometry
		mention string // the message names the problem
	}{
		{"no level", Geometry{MemberBytes: ok}, "level"},
		{"unknown level", Geometry{Level: 7, MemberBytes: ok}, "level"},
		{"no members", Geometry{Level: RAID0}, "no members"},
		{"too many members", Geometry{Level: RAID0, MemberBytes: make([]int64, MaxMembers+1)}, "members"},
		{"empty member", Geometry{Level: Linear, MemberBytes: []int64{1 << 20, 0}}, "member 1"},
		{"negative member", Geometry{Level: RAID1, MemberBytes: []int64{-512}}, "member 0"},
		{"huge member", Geometry{Level: RAID0, MemberBytes: []int64{1 << 20, MaxMemberBytes + 1}}, "member 1"},
		{"chunk not a power of two", Geometry{Level: RAID0, ChunkBytes: 12 * kib, MemberBytes: ok}, "power of two"},
		{"chunk too small", Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 2 * kib, MemberBytes: ok}, "power of two"},
		{"chunk too big", Geometry{Level: RAID0, ChunkBytes: 2 << 30, MemberBytes: ok}, "power of two"},
		{"negative chunk", Geometry{Level: RAID0, ChunkBytes: -4096, MemberBytes: ok}, "power of two"},
		{"chunk on linear", Geometry{Level: Linear, ChunkBytes: 4096, MemberBytes: ok}, "no chunk"},
		{"chunk on raid1", Geometry{Level: RAID1, ChunkBytes: 4096, MemberBytes: ok}, "no chunk"},
		{"raid1 too wide", Geometry{Level: RAID1, MemberBytes: make17()}, "copies"},
		{"raid10 on one member", Geometry{Level: RAID10, Layout: Near2, MemberBytes: []int64{1 << 20}}, "at least 2"},
		{"raid10 unknown layout", Geometry{Level: RAID10, Layout: 5, MemberBytes: ok}, "layout Layout(5) is not n2, f2 or o2"},
		{"raid10 negative layout", Geometry{Level: RAID10, Layout: -1, MemberBytes: ok}, "not n2, f2 or o2"},
		{"raid10 without layout", Geometry{Level: RAID10, MemberBytes: ok}, "raid10 needs a layout"},
		{"layout on raid0", Geometry{Level: RAID0, Layout: Far2, MemberBytes: ok}, "layout f2 given for raid0"},
		{"n2 on raid1", Geometry{Level: RAID1, Layout: Near2, MemberBytes: ok}, "only raid10 has a layout"},
		{"member smaller than a chunk", Geometry{Level: RAID0, ChunkBytes: 1 << 20, MemberBytes: []int64{1 << 20, 1<<20 - 512}}, "smaller chunk"},
		{"f2 needs two chunks per member", Geometry{Level: RAID10, Layout: Far2, ChunkBytes: 1 << 20, MemberBytes: []int64{2<<20 - 512, 4 << 20}}, "smaller chunk"},
		{"n2 member smaller than a chunk", Geometry{Level: RAID10, Layout: Near2, ChunkBytes: 1 << 20, MemberBytes: []int64{1<<20 - 512, 4 << 20}}, "smaller chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.geo)
			assert.Nil(t, m)
			require.ErrorIs(t, err, ErrGeometry)
			assert.Contains(t, err.Error(), tt.mention)
		})
	}
}

func make17() []int64 {
	v := make([]int64, MaxCopies+1)
	for i := range v {
		v[i] = 1 << 20
	}
	return v
}
