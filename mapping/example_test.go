package mapping_test

import (
	"fmt"

	"uraid/mapping"
)

// A discard that starts inside a chunk of a near raid10: both copies of the
// partial chunk start at the same place within their chunk, and each member
// gets one merged range.
func ExampleMap_Discard() {
	m, err := mapping.New(mapping.Geometry{
		Level:       mapping.RAID10,
		Layout:      mapping.Near2,
		ChunkBytes:  4096,
		MemberBytes: []int64{16384, 16384, 16384},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := m.Discard(5120, 8192, nil, make([]mapping.Extent, 0, m.MaxDiscardExtents()))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range plan {
		fmt.Printf("member %d: bytes [%d, %d) from logical %d\n", e.Member, e.Offset, e.End(), e.Logical)
	}
	// Output:
	// member 0: bytes [5120, 9216) from logical 5120
	// member 1: bytes [4096, 9216) from logical 8192
	// member 2: bytes [1024, 8192) from logical 5120
}

func ExampleNew_error() {
	_, err := mapping.New(mapping.Geometry{Level: mapping.RAID0, ChunkBytes: 3000, MemberBytes: []int64{1 << 20}})
	fmt.Println(err)
	// Output:
	// invalid array geometry: chunk 3000 bytes, need a power of two from 4096 to 1073741824 (e.g. 524288 for 512 KiB)
}
