package region

import (
	"fmt"
)

// MaxWrites bounds the writes in flight at once (BeginWrite without
// EndWrite), far above any ublk queue depth, so per-region counts never
// overflow.
const MaxWrites = 1 << 24

// Map is the region map of one array: the state of each region in memory,
// what the member disks are known to hold, the writes in flight, and the
// blocks the next flush must write. See the package documentation for what
// it guarantees. A Map is not safe for concurrent use: the caller guards it
// with one lock, which the hot path holds for a few nanoseconds.
type Map struct {
	g       Geometry
	shift   uint
	regions int
	blocks  int // map blocks

	// The packed images (state.go). mem is the truth, what the next flush
	// writes. flight is what the last flush wrote or is writing, per block.
	// onDisk is one bit a region: dirty on every member for certain, by a
	// completed flush (or as loaded). A region is dirty on disk, for a
	// write to go ahead, when it is dirty in onDisk and in flight: a flush
	// in flight that cleans it may land at any moment.
	mem, flight []uint64
	onDisk      []uint64

	inflight []uint32 // writes begun and not ended, per region
	touched  []uint32 // clean epoch of the region's last EndWrite
	// armed holds, per region, the id of the oldest discard that arrived
	// while no write was in flight and since which no write began; 0 when
	// none. A discard that completes on every copy trims the region if it
	// is not older than that one.
	armed  []uint64
	resync []uint64 // bitmap: copies may differ until resynced (Dirty)
	queued []uint64 // bitmap: in the clean ring

	counts  [3]int // regions per mem state
	resyncs int

	blk      []block
	header   block
	changed  int // blocks (not the header) whose mem differs from flight
	urgent   int // blocks a waiting write needs in the next flush
	flying   []int
	inFlight bool   // a flush is being written
	gen      uint64 // the last flush started (or the highest loaded)
	durable  uint64 // the last flush completed

	writes int // BeginWrite minus EndWrite

	degraded  bool
	trimID    uint64 // the last discard id handed out
	trimFloor uint64 // discards below it arrived before the array degraded

	clean cleaner

	cursor Cursor
}

// block is the flush state of one block of the area.
type block struct {
	changed bool // mem differs from flight (header: the cursor changed)
	urgent  bool // a write waits for this block's next flush
	flying  bool // in the flush being written
	buf     []byte
}

// New returns the map of a new array, every region in state initial:
// InSync when the copies are known to agree (members created empty, or
// zeroed), Dirty when they may not (every region then needs resync),
// Trimmed when every member was discarded whole. Nothing is on disk yet:
// write the map with Flush(FlushAll) before the array serves I/O; until
// that flush completes every write waits.
func New(g Geometry, initial State) (*Map, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if initial > Trimmed {
		return nil, fmt.Errorf("%w: initial state %d", ErrGeometry, initial)
	}
	m := alloc(g)
	for r := range m.regions {
		put(m.mem, r, initial)
	}
	m.counts[initial] = m.regions
	if initial == Dirty {
		for r := range m.regions {
			setBit(m.resync, r)
		}
		m.resyncs = m.regions
	}
	for b := range m.blk {
		m.markChanged(b)
	}
	m.markHeader()
	return m, nil
}

// alloc returns a map of g with every image zero.
func alloc(g Geometry) *Map {
	m := &Map{g: g, shift: g.shift(), regions: g.Regions(), blocks: g.MapBlocks()}
	words := m.blocks * wordsPerBlock
	m.mem = make([]uint64, words)
	m.flight = make([]uint64, words)
	m.onDisk = make([]uint64, words/2)
	m.resync = make([]uint64, words/2)
	m.queued = make([]uint64, words/2)
	m.inflight = make([]uint32, m.regions)
	m.touched = make([]uint32, m.regions)
	m.armed = make([]uint64, m.regions)
	m.blk = make([]block, m.blocks)
	bufs := make([]byte, (m.blocks+1)*BlockSize)
	for b := range m.blk {
		m.blk[b].buf = bufs[(b+1)*BlockSize : (b+2)*BlockSize : (b+2)*BlockSize]
	}
	m.header.buf = bufs[:BlockSize:BlockSize]
	m.flying = make([]int, 0, m.blocks)
	m.clean.ring = make([]uint32, m.regions)
	return m
}

// Geometry is the array and region size the map describes.
func (m *Map) Geometry() Geometry { return m.g }

// Regions is the number of regions.
func (m *Map) Regions() int { return m.regions }

// RegionSize is the size of a region in bytes.
func (m *Map) RegionSize() int64 { return m.g.RegionSize }

// RegionOf returns the region holding array byte off, or -1 outside the
// array.
func (m *Map) RegionOf(off int64) int {
	if off < 0 || off >= m.g.ArraySize {
		return -1
	}
	return int(off >> m.shift)
}

// Span returns the array bytes of region r: [off, off+n). It returns 0, 0
// for a region that does not exist.
func (m *Map) Span(r int) (off, n int64) {
	if r < 0 || r >= m.regions {
		return 0, 0
	}
	off = int64(r) << m.shift
	return off, min(m.g.RegionSize, m.g.ArraySize-off)
}

// State returns the state of region r in memory, which is what the I/O
// path must go by (the disk catches up with the next flush). A region that
// does not exist reads as Dirty, the state that promises nothing.
func (m *Map) State(r int) State {
	if r < 0 || r >= m.regions {
		return Dirty
	}
	return get(m.mem, r)
}

// Count returns how many regions are in state s.
func (m *Map) Count(s State) int {
	if s > Trimmed {
		return 0
	}
	return m.counts[s]
}

// Resyncs returns how many regions need resync.
func (m *Map) Resyncs() int { return m.resyncs }

// NeedsResync reports whether region r's copies may differ in a way only a
// resync repairs: it was dirty on disk when the map was loaded, a write to
// it failed on some copy, or it was written while the array was degraded.
// A read there must come from one chosen copy (or wait for the resync), so
// that two reads never return different bytes. A region that does not
// exist reports true.
func (m *Map) NeedsResync(r int) bool {
	if r < 0 || r >= m.regions {
		return true
	}
	return testBit(m.resync, r)
}

// RangeNeedsResync reports whether any region that [off, off+n) touches
// needs resync; true for a range outside the array.
func (m *Map) RangeNeedsResync(off, n int64) bool {
	first, last, err := m.span(off, n)
	if err != nil {
		return true
	}
	return nextBit(m.resync, first, last+1) >= 0
}

// RangeTrimmed reports whether every region that [off, off+n) touches is
// trimmed; false for a range outside the array.
func (m *Map) RangeTrimmed(off, n int64) bool {
	first, last, err := m.span(off, n)
	if err != nil {
		return false
	}
	for r := first; r <= last; r++ {
		if get(m.mem, r) != Trimmed {
			return false
		}
	}
	return true
}

// Next returns the first region at or after from in state s, or -1.
func (m *Map) Next(from int, s State) int {
	if s > Trimmed {
		return -1
	}
	return nextState(m.mem, s, max(from, 0), m.regions)
}

// NextResync returns the first region at or after from that needs resync,
// or -1. See ResyncFrom for a scan that resumes at a cursor.
func (m *Map) NextResync(from int) int { return nextBit(m.resync, max(from, 0), m.regions) }

// SetDegraded tells the map whether some member is failed or missing.
// While it is, no dirty region is cleared — lazily or by a resync — and
// every region written becomes one that needs resync, so that a member
// that comes back is resynced from exactly the regions written while it
// was away; and no discard trims a region, since the absent member did not
// trim it. Discards that arrived before the array degraded never trim,
// even if it recovers before they complete.
//
// A member that comes back carries a stale map: write it a full copy
// (Flush(FlushAll)) and wait for that flush before calling
// SetDegraded(false).
func (m *Map) SetDegraded(d bool) {
	if d && !m.degraded {
		m.trimFloor = m.trimID + 1
	}
	m.degraded = d
}

// Degraded reports what SetDegraded last said.
func (m *Map) Degraded() bool { return m.degraded }

// Writes returns the number of writes in flight (BeginWrite without
// EndWrite).
func (m *Map) Writes() int { return m.writes }

// InFlight returns the number of writes in flight in region r: a job that
// copies or compares r's copies waits until it is zero, with new writes to
// r held back by the caller.
func (m *Map) InFlight(r int) int {
	if r < 0 || r >= m.regions {
		return 0
	}
	return int(m.inflight[r])
}

// span checks [off, off+n) and returns its first and last region.
func (m *Map) span(off, n int64) (first, last int, err error) {
	if n <= 0 || off < 0 || off > m.g.ArraySize-n {
		return 0, 0, fmt.Errorf("%w: [%d, +%d) of a %d-byte array", ErrRange, off, n, m.g.ArraySize)
	}
	return int(off >> m.shift), int((off + n - 1) >> m.shift), nil
}

// setState changes region r's state in memory and marks its block for the
// next flush.
func (m *Map) setState(r int, s State) {
	old := get(m.mem, r)
	if old == s {
		return
	}
	m.counts[old]--
	m.counts[s]++
	put(m.mem, r, s)
	m.markChanged(r / RegionsPerBlock)
}

func (m *Map) markChanged(b int) {
	if !m.blk[b].changed {
		m.blk[b].changed = true
		m.changed++
	}
}

// markUrgent says a write waits for block b's next flush.
func (m *Map) markUrgent(b int) {
	m.markChanged(b)
	if !m.blk[b].urgent {
		m.blk[b].urgent = true
		m.urgent++
	}
}

func (m *Map) markHeader() { m.header.changed = true }

func (m *Map) setResync(r int) {
	if !testBit(m.resync, r) {
		setBit(m.resync, r)
		m.resyncs++
	}
}

func (m *Map) clearResync(r int) {
	if testBit(m.resync, r) {
		clearBit(m.resync, r)
		m.resyncs--
	}
}

// Resynced reports that the caller made every copy of region r agree, with
// writes to r held off meanwhile. The region no longer needs resync and,
// unless a write is in flight to it, is in sync (on disk with a later
// flush). It does nothing and returns false while the array is degraded
// (the absent member still needs the region) or when r did not need
// resync.
func (m *Map) Resynced(r int) bool {
	if m.degraded || r < 0 || r >= m.regions || !testBit(m.resync, r) {
		return false
	}
	m.clearResync(r)
	if m.inflight[r] == 0 {
		m.setState(r, InSync)
	}
	return true
}
