package region

import (
	"fmt"
	"math/bits"
)

// Verify checks the map's internal invariants in O(regions) and reports the
// first one broken. It is for tests and for invariant gates such as
// URAID_VERIFY, too slow for every request.
func (m *Map) Verify() error {
	var counts [3]int
	resyncs, writes := 0, 0
	for r := range m.regions {
		s := get(m.mem, r)
		if s > Trimmed {
			return fmt.Errorf("region %d: state code %d in memory", r, s)
		}
		counts[s]++
		if testBit(m.resync, r) {
			resyncs++
			if s != Dirty {
				return fmt.Errorf("region %d needs resync but is %s", r, s)
			}
		}
		writes += int(m.inflight[r])
		if m.inflight[r] > 0 && s != Dirty {
			return fmt.Errorf("region %d: %d writes in flight but %s", r, m.inflight[r], s)
		}
		if m.armed[r] != 0 && m.inflight[r] > 0 {
			return fmt.Errorf("region %d: armed by discard %d with writes in flight", r, m.armed[r])
		}
		if m.armed[r] > m.trimID {
			return fmt.Errorf("region %d: armed by discard %d, newer than the last %d", r, m.armed[r], m.trimID)
		}
		b := r / RegionsPerBlock
		k := &m.blk[b]
		if !k.flying && testBit(m.onDisk, r) && get(m.flight, r) != Dirty {
			return fmt.Errorf("region %d: dirty on disk for certain, but block %d last wrote %s", r, b, get(m.flight, r))
		}
		if !k.flying && !k.changed && s != get(m.flight, r) {
			return fmt.Errorf("region %d is %s, block %d last wrote %s and is not marked changed", r, s, b, get(m.flight, r))
		}
		// A write waits for a region that is not dirty on disk: the flush
		// that will make it so is in flight or marked urgent.
		if m.inflight[r] > 0 && !(testBit(m.onDisk, r) && get(m.flight, r) == Dirty) &&
			!(k.flying && get(m.flight, r) == Dirty) && !k.urgent {
			return fmt.Errorf("region %d: a write waits, but block %d is neither in flight with it dirty nor urgent", r, b)
		}
	}
	if !zeroFrom(m.mem, m.regions*bitsPerRegion) || !zeroFrom(m.flight, m.regions*bitsPerRegion) ||
		!zeroFrom(m.onDisk, m.regions) || !zeroFrom(m.resync, m.regions) || !zeroFrom(m.queued, m.regions) {
		return fmt.Errorf("fields past the last region (%d) are not zero", m.regions)
	}
	if counts != m.counts {
		return fmt.Errorf("state counts %v, regions say %v", m.counts, counts)
	}
	if resyncs != m.resyncs {
		return fmt.Errorf("%d regions need resync, counted %d", resyncs, m.resyncs)
	}
	// A write counts once in each region it touches.
	if writes < m.writes || (writes == 0) != (m.writes == 0) {
		return fmt.Errorf("%d writes in flight, regions count %d", m.writes, writes)
	}
	changed, urgent, flying := 0, 0, 0
	for b := range m.blk {
		k := &m.blk[b]
		if k.changed {
			changed++
		}
		if k.urgent {
			urgent++
			if !k.changed {
				return fmt.Errorf("block %d urgent but not changed", b)
			}
		}
		if k.flying {
			flying++
		}
	}
	if changed != m.changed || urgent != m.urgent {
		return fmt.Errorf("changed/urgent blocks %d/%d, counted %d/%d", m.changed, m.urgent, changed, urgent)
	}
	if !m.inFlight && (flying > 0 || m.header.flying) {
		return fmt.Errorf("%d blocks flying without a flush in flight", flying)
	}
	if m.inFlight && flying != len(m.flying) {
		return fmt.Errorf("%d blocks flying, the flush lists %d", flying, len(m.flying))
	}
	if m.durable > m.gen || m.inFlight && m.durable == m.gen {
		return fmt.Errorf("durable generation %d, last started %d, in flight %v", m.durable, m.gen, m.inFlight)
	}
	return m.clean.verify(m)
}

func (c *cleaner) verify(m *Map) error {
	if c.head > c.tail || c.tail-c.head > uint64(len(c.ring)) || c.prev > c.cur || c.cur > c.tail {
		return fmt.Errorf("clean ring positions head %d prev %d cur %d tail %d of %d", c.head, c.prev, c.cur, c.tail, len(c.ring))
	}
	seen := make([]uint64, len(m.queued))
	for p := c.head; p < c.tail; p++ {
		r := int(c.ring[p%uint64(len(c.ring))])
		if r >= m.regions || testBit(seen, r) {
			return fmt.Errorf("clean ring holds region %d twice or out of range", r)
		}
		setBit(seen, r)
	}
	for w := range seen {
		if seen[w] != m.queued[w] {
			return fmt.Errorf("clean ring and queued bits differ around region %d", w*64+bits.TrailingZeros64(seen[w]^m.queued[w]))
		}
	}
	return nil
}
