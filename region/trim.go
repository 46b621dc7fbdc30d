package region

import "fmt"

// Trim is a discard in progress, as far as the map is concerned: the whole
// regions it covers and when it arrived. The zero Trim covers nothing. It
// is a small value: keep it with the request (sync discards) or in a
// Pending list with the request's ticket (async ones).
type Trim struct {
	first, end int // whole regions [first, end)
	id         uint64
}

// Regions returns the whole regions the discard covers: [first, end).
func (t Trim) Regions() (first, end int) { return t.first, t.end }

// StartTrim records that a discard of [off, off+n) arrived and is about to
// be queued on the members. It returns the Trim to hand to EndTrim once the
// discard has completed on every copy. Only the regions it covers whole
// can become trimmed, and only those with no write in flight now and none
// begun before it completes. While the array is degraded it returns the
// zero Trim.
//
// It costs O(regions covered) and allocates nothing.
func (m *Map) StartTrim(off, n int64) (Trim, error) {
	if _, _, err := m.span(off, n); err != nil {
		return Trim{}, fmt.Errorf("start trim: %w", err)
	}
	if m.degraded {
		return Trim{}, nil
	}
	// Round inward to whole regions; the last region ends at the array's
	// end, so a discard that reaches the end covers it whole.
	first := int(off >> m.shift)
	if off&(m.g.RegionSize-1) != 0 {
		first++ // without off+RegionSize-1, which overflows near the end of the largest array
	}
	end := int((off + n) >> m.shift)
	if off+n == m.g.ArraySize {
		end = m.regions
	}
	if first >= end {
		return Trim{}, nil
	}
	m.trimID++
	t := Trim{first: first, end: end, id: m.trimID}
	for r := first; r < end; r++ {
		if m.inflight[r] == 0 && m.armed[r] == 0 {
			m.armed[r] = t.id
		}
	}
	return t, nil
}

// EndTrim records that the discard t completed on every copy. Each region
// it covers whole with no write begun since the discard arrived (and none
// in flight then) becomes Trimmed in memory, and needs no resync any more:
// every copy of it is now free space. The change reaches the disk with a
// later flush, never before this call. It returns how many regions became
// trimmed; a discard that arrived before the array last degraded, or that
// ends while it is degraded, trims nothing. Calling it twice is harmless.
func (m *Map) EndTrim(t Trim) int {
	if t.id == 0 || t.id < m.trimFloor || t.id > m.trimID || m.degraded || t.end > m.regions {
		return 0
	}
	n := 0
	for r := t.first; r < t.end; r++ {
		if a := m.armed[r]; a == 0 || a > t.id {
			continue // a write began after t arrived
		}
		m.clearResync(r)
		if get(m.mem, r) != Trimmed {
			m.setState(r, Trimmed)
			n++
		}
	}
	return n
}

// Pending holds the discards of an asynchronous array, each with the
// ticket that tells when it has completed on every copy (for the discard
// engine: per member, the sequence number of its last piece there). A
// discard is acknowledged as soon as it is queued, so nobody waits for it;
// Poll asks the tickets later. Pending is bounded: a discard that finds it
// full is forgotten, which only leaves its regions less trimmed than they
// could be. Like Map it is not safe for concurrent use.
type Pending[T any] struct {
	items []pendingTrim[T]
}

type pendingTrim[T any] struct {
	trim   Trim
	ticket T
}

// NewPending returns a Pending for up to capacity discards, allocated up
// front.
func NewPending[T any](capacity int) *Pending[T] {
	return &Pending[T]{items: make([]pendingTrim[T], 0, max(capacity, 1))}
}

// Add keeps t until its ticket says it completed. A Trim that covers no
// region is not kept. It returns false when the list is full and t was
// dropped.
func (p *Pending[T]) Add(t Trim, ticket T) bool {
	if t.id == 0 {
		return true
	}
	if len(p.items) == cap(p.items) {
		return false
	}
	p.items = append(p.items, pendingTrim[T]{t, ticket})
	return true
}

// Len is the number of discards kept.
func (p *Pending[T]) Len() int { return len(p.items) }

// Poll calls done for each kept discard's ticket, and for each that
// completed calls m.EndTrim and forgets it. It returns the number of
// regions that became trimmed.
func (p *Pending[T]) Poll(m *Map, done func(T) bool) int {
	n, w := 0, 0
	for _, it := range p.items {
		if done(it.ticket) {
			n += m.EndTrim(it.trim)
			continue
		}
		p.items[w] = it
		w++
	}
	clear(p.items[w:])
	p.items = p.items[:w]
	return n
}
