package mapping

import (
	"fmt"
	"testing"
)

// BenchmarkDiscardRAID0 plans a 1 GiB discard over 4 KiB chunks, 262144
// chunks whatever the member count: the time must follow the members, and a
// 1 MiB discard on the same array must cost about the same.
func BenchmarkDiscardRAID0(b *testing.B) {
	for _, members := range []int{4, 16, 64} {
		for _, length := range []int64{1 << 20, 1 << 30} {
			b.Run(fmt.Sprintf("members=%d/len=%dMiB", members, length>>20), func(b *testing.B) {
				sizes := make([]int64, members)
				for i := range sizes {
					sizes[i] = 1 << 30
				}
				m, err := New(Geometry{Level: RAID0, ChunkBytes: 4 << 10, MemberBytes: sizes})
				if err != nil {
					b.Fatal(err)
				}
				gran := make([]Granularity, members)
				for i := range gran {
					gran[i].Bytes = 4096
				}
				dst := make([]Extent, 0, m.MaxDiscardExtents())
				off := int64(3<<12 + 512) // unaligned head and tail
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Discard(off, length, gran, dst[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
