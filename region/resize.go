package region

import "fmt"

// Resized returns the map of the same array at size bytes, for an array that grows or shrinks
// without moving its data (raid.PlanGrow): regions keep their size and their index, so region r
// is the same array bytes before and after. Every region both maps have keeps its state, its
// need of resync and what is known of it on disk; the regions past the old end are Trimmed (the
// caller discards their bytes on every member first: nothing of the array's user is there yet);
// the regions past the new end are gone.
//
// The old map's last region, if it was partial, keeps its state over the bytes it gains: the
// caller makes its copies agree there (writes them with zeros on every member) before the new
// map is written.
//
// m must be idle: no write in flight, no flush in flight and no job checkpoint (the cursor of a
// resync, check or rebuild counts regions of the old map). m is left as it was. Nothing is on
// disk yet: write the result with Flush(FlushAll) before it serves; every block and the header
// are marked changed.
func (m *Map) Resized(size int64) (*Map, error) {
	g := m.g
	g.ArraySize = size
	if err := g.Check(); err != nil {
		return nil, err
	}
	switch {
	case m.writes > 0:
		return nil, fmt.Errorf("%w: resize: %d writes in flight", ErrProtocol, m.writes)
	case m.inFlight:
		return nil, fmt.Errorf("%w: resize: flush of generation %d in flight", ErrProtocol, m.gen)
	case m.cursor.Action != ActionNone:
		return nil, fmt.Errorf("%w: resize: a %s is checkpointed at region %d: let it finish first",
			ErrProtocol, m.cursor.Action, m.cursor.Position)
	}
	n := alloc(g)
	keep := min(m.regions, n.regions)
	for r := range keep {
		s := get(m.mem, r)
		put(n.mem, r, s)
		put(n.flight, r, get(m.flight, r))
		if testBit(m.onDisk, r) {
			setBit(n.onDisk, r)
		}
		if testBit(m.resync, r) {
			setBit(n.resync, r)
		}
		n.armed[r] = m.armed[r]
	}
	for r := keep; r < n.regions; r++ {
		put(n.mem, r, Trimmed)
	}
	for r := range n.regions {
		s := get(n.mem, r)
		n.counts[s]++
		// A dirty region that needs no resync waits in the clean ring, as after its last write.
		if s == Dirty && !testBit(n.resync, r) {
			n.enqueue(r)
		}
	}
	n.resyncs = popcount(n.resync)
	n.gen, n.durable = m.gen, m.durable
	n.degraded, n.trimID, n.trimFloor = m.degraded, m.trimID, m.trimFloor
	for b := range n.blk {
		n.markChanged(b)
	}
	n.markHeader()
	return n, nil
}

func popcount(bm []uint64) int {
	c := 0
	for _, w := range bm {
		for ; w != 0; w &= w - 1 {
			c++
		}
	}
	return c
}
