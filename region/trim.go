package region

import (
	"fmt"

	"uraid/internal/plant"
)

// Trim is a discard in progress, as far as the map is concerned: the whole
// regions it covers and when it arrived. The zero Trim covers nothing. It
// is a small value: keep it with the request until the discard engine says
// whether the discard was trimmed.
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
		if a := m.armed[r]; (a == 0 || a > t.id) && !plant.Is("trimwrite") {
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
