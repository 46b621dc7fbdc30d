package region_test

import (
	"fmt"
	"time"

	"uraid/region"
)

// The array's side of the protocol, with the member I/O left out: a write
// to a clean region waits for one metadata write, later writes to it go at
// once, an idle region is cleaned lazily, and a whole-region discard that
// completed everywhere marks it trimmed.
func Example() {
	uuid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	size := int64(1 << 30)
	// Members with the default 1 MiB data offset: the map lives between
	// the superblock (ending at 8 KiB) and the data.
	rs, _ := region.ChooseRegionSize(size, 1<<20-8<<10)
	m, _ := region.New(region.Geometry{ArrayUUID: uuid, ArraySize: size, RegionSize: rs}, region.InSync)
	fmt.Println("regions:", m.Regions(), "of", rs>>20, "MiB")

	// flush stands for writing the blocks to every member, durably.
	flush := func(mode region.FlushMode) {
		gen, blocks, _ := m.Flush(mode, nil)
		if gen != 0 {
			fmt.Printf("flush %d: %d block(s)\n", gen, len(blocks))
			_ = m.Flushed(gen)
		}
	}
	flush(region.FlushAll) // a new map goes to disk before any I/O

	gen, _ := m.BeginWrite(5<<20, 4096)
	fmt.Println("first write waits for flush", gen)
	flush(region.FlushUrgent)
	fmt.Println("may go:", m.Durable() >= gen)
	_ = m.EndWrite(5<<20, 4096, true)

	gen, _ = m.BeginWrite(5<<20+4096, 4096)
	fmt.Println("second write waits for:", gen) // 0: issue it now
	_ = m.EndWrite(5<<20+4096, 4096, true)

	m.Clean(time.Minute, 0) // as a stop does; a running array passes an idle time
	fmt.Println("region 5:", m.State(5))

	t, _ := m.StartTrim(8<<20, 3<<20)
	// ... the discard completes on every member ...
	fmt.Println("trimmed:", m.EndTrim(t))
	flush(region.FlushChanged) // lazy: cleans and trims
	// Output:
	// regions: 1024 of 1 MiB
	// flush 1: 2 block(s)
	// first write waits for flush 2
	// flush 2: 1 block(s)
	// may go: true
	// second write waits for: 0
	// region 5: in-sync
	// trimmed: 3
	// flush 3: 1 block(s)
}
