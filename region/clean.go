package region

import "time"

// DefaultIdle is the idle time to pass to Clean, as md's default bitmap
// delay: a region goes back to in sync 5 to about 15 s after its last write
// ended. Much shorter, and a region written every few seconds bounces
// between dirty and clean, each bounce a metadata write that a write waits
// for; much longer, and more regions are resynced after a crash.
const DefaultIdle = 5 * time.Second

// The lazy clean. A region whose last write ended is queued once in a ring
// (each region at most once, so the ring never overflows); Clean walks the
// ring from its oldest end. Time is cut into epochs of at least the idle
// time, counted by Clean from the clock it is given: a region queued or
// last written in epoch e is looked at from epoch e+2 on, which begins at
// least one idle time after epoch e ended. A region written again since it
// was queued goes back to the young end. So Clean does work only for
// regions that stopped being written, and for each busy one at most once
// per epoch, never for the whole map.
type cleaner struct {
	ring       []uint32
	head, tail uint64 // positions since creation; the entry at p is ring[p%len]
	// prev and cur are where epochs epoch-1 and epoch began in the ring:
	// entries before prev were queued two epochs ago or more.
	prev, cur uint64
	epoch     uint32
	start     time.Duration // when the current epoch began
	started   bool
}

// enqueue puts region r, whose last write just ended, in the ring.
func (m *Map) enqueue(r int) {
	if testBit(m.queued, r) {
		return
	}
	setBit(m.queued, r)
	c := &m.clean
	c.ring[c.tail%uint64(len(c.ring))] = uint32(r)
	c.tail++
}

// Clean moves to InSync, in memory, every dirty region with no write in
// flight that needs no resync and has seen no write end for at least idle
// by the clock now (any clock that never goes back, such as the time since
// the array started). The changes reach the disk with a later flush; there
// is no hurry, since a region dirty on disk only costs a resync after a
// crash. It returns the number of regions it cleaned.
//
// A region is cleaned between idle and about three idle times (plus the
// interval between calls) after its last write ended: call Clean every
// idle/2 or so. idle <= 0 cleans every such region at once, as a stop
// does. While the array is degraded Clean cleans nothing.
//
// Time never affects safety: a region is never cleaned with a write in
// flight, however the clock runs. The idle time only keeps a busy region
// from bouncing between dirty and clean, each bounce costing a metadata
// write that the next write to it must wait for.
func (m *Map) Clean(now, idle time.Duration) int {
	c := &m.clean
	if !c.started || now < c.start {
		c.start, c.started = now, true
	}
	limit := c.tail
	if idle > 0 {
		if now-c.start >= idle {
			c.epoch++
			c.prev, c.cur = c.cur, c.tail
			c.start = now
		}
		limit = c.prev
	}
	if m.degraded {
		return 0
	}
	cleaned := 0
	for c.head < limit {
		r := int(c.ring[c.head%uint64(len(c.ring))])
		c.head++
		clearBit(m.queued, r)
		if get(m.mem, r) != Dirty || m.inflight[r] > 0 || testBit(m.resync, r) {
			continue // EndWrite queues it again when its writes are over
		}
		if idle > 0 && c.epoch-m.touched[r] < 2 {
			m.enqueue(r) // written since it was queued
			continue
		}
		m.setState(r, InSync)
		cleaned++
	}
	return cleaned
}
