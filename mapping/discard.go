package mapping

import "fmt"

// Discard appends to dst the member ranges to discard for a discard of
// length bytes at array offset off, sorted by member and then offset.
//
// The ranges are the minimal set: all member bytes backing the request (every
// copy), merged so that no two ranges of one member touch. On raid0 and near
// raid10 each member gets one range however many stripes the request spans;
// on f2 up to two, one per half; on o2 up to three, because the copy row of a
// chunk outside the request can cut the head and the tail off the middle.
//
// Each range is then rounded inward to its member's granularity: the start up
// and the end down to the next unit boundary, and dropped when nothing is
// left. So a discard never reaches a member byte that does not back the
// request, at the price of leaving partial units undiscarded. gran has one
// entry per member; members with Bytes 0 get nothing. A nil gran means every
// member discards single sectors.
//
// Planning costs O(members) whatever the length: only the partial stripes at
// either end are mapped chunk by chunk, and the whole stripes between them
// become one range of rows per member.
func (m *Map) Discard(off, length int64, gran []Granularity, dst []Extent) ([]Extent, error) {
	if err := m.check("discard", off, length); err != nil {
		return dst, err
	}
	if err := m.checkGranularity(gran); err != nil {
		return dst, err
	}
	base := len(dst)
	switch m.level {
	case Linear, RAID1:
		// Already one range per member, in member order.
		dst = m.write(off, length, dst)
	default:
		dst = m.discardStriped(off, length, dst)
		sortByMember(dst[base:], m.n)
		dst = coalesce(dst, base)
	}
	return m.roundInward(dst, base, gran), nil
}

// discardStriped appends, unsorted, ranges covering exactly the member bytes
// that back [off, off+length) on raid0 and raid10. The partial stripes at the
// ends are mapped chunk by chunk, at most one stripe each; the whole stripes
// between them map, on every member, onto whole rows: [r1, r2) for raid0,
// two rows per stripe for n2 (2n copy slots) and o2 (a row and its copy), and
// for f2 the same rows in both halves.
func (m *Map) discardStriped(off, length int64, dst []Extent) []Extent {
	stripe := int64(m.n) << m.shift
	end := off + length
	r1, r2 := (off+stripe-1)/stripe, end/stripe
	if r1 >= r2 {
		return m.write(off, length, dst)
	}
	if h := r1 * stripe; h > off {
		dst = m.write(off, h-off, dst)
	}
	if t := r2 * stripe; end > t {
		dst = m.write(t, end-t, dst)
	}
	rows := func(first, last int64) {
		for i := range m.n {
			dst = append(dst, Extent{Member: i, Offset: first << m.shift, Length: (last - first) << m.shift})
		}
	}
	switch {
	case m.level == RAID0:
		rows(r1, r2)
	case m.layout == Far2:
		rows(r1, r2)
		rows(m.stride+r1, m.stride+r2)
	default: // Near2, Offset2
		rows(2*r1, 2*r2)
	}
	return dst
}

// sortByMember orders e by member, then offset, in O(len(e) + members): a
// counting sort on the member, in place, then an insertion sort within each
// member, which holds only a handful of ranges (head, middle, tail copies).
func sortByMember(e []Extent, members int) {
	var next, end [MaxMembers]int32 // the unfilled part of each member's bucket
	for _, x := range e {
		end[x.Member]++
	}
	var at int32
	for i := range members {
		next[i], at = at, at+end[i]
		end[i] = at
	}
	for b := range members {
		for next[b] < end[b] {
			i := next[b]
			d := e[i].Member
			if d == b {
				next[b]++
				continue
			}
			// Every swap puts one extent in its final bucket.
			j := next[d]
			next[d]++
			e[i], e[j] = e[j], e[i]
		}
	}
	for i := 1; i < len(e); i++ {
		for j := i; j > 0 && e[j-1].Member == e[j].Member && e[j-1].Offset > e[j].Offset; j-- {
			e[j-1], e[j] = e[j], e[j-1]
		}
	}
}

// coalesce merges, in place, the ranges of dst[base:] (sorted by member and
// offset) that overlap or touch, and returns the shortened slice.
func coalesce(dst []Extent, base int) []Extent {
	if len(dst)-base < 2 {
		return dst
	}
	w := base
	for _, e := range dst[base+1:] {
		last := &dst[w]
		if e.Member == last.Member && e.Offset <= last.End() {
			last.Length = max(last.End(), e.End()) - last.Offset
			continue
		}
		w++
		dst[w] = e
	}
	return dst[:w+1]
}

// roundInward shrinks each range of dst[base:] to whole granularity units of
// its member, drops what becomes empty or belongs to a member without
// discard, and sets Logical for what is left.
func (m *Map) roundInward(dst []Extent, base int, gran []Granularity) []Extent {
	w := base
	for _, e := range dst[base:] {
		start, end := e.Offset, e.End()
		if gran != nil {
			g := gran[e.Member]
			if g.Bytes == 0 {
				continue
			}
			a := g.Alignment % g.Bytes
			start += ((a-start%g.Bytes)%g.Bytes + g.Bytes) % g.Bytes
			end -= ((end%g.Bytes-a)%g.Bytes + g.Bytes) % g.Bytes
		}
		if end <= start {
			continue
		}
		dst[w] = Extent{Member: e.Member, Offset: start, Length: end - start, Logical: m.logicalAt(e.Member, start)}
		w++
	}
	return dst[:w]
}

// checkGranularity rejects what roundInward could not honour.
func (m *Map) checkGranularity(gran []Granularity) error {
	if gran == nil {
		return nil
	}
	if len(gran) != m.n {
		return fmt.Errorf("discard: %w: %d granularities for %d members (give one per member, Bytes 0 for no discard)", ErrGranularity, len(gran), m.n)
	}
	for i, g := range gran {
		if g.Bytes < 0 || g.Bytes%SectorBytes != 0 || g.Bytes > MaxMemberBytes {
			return fmt.Errorf("discard: %w: member %d granularity %d bytes, need 0 or a multiple of %d up to %d", ErrGranularity, i, g.Bytes, SectorBytes, int64(MaxMemberBytes))
		}
		if g.Alignment < 0 || g.Alignment%SectorBytes != 0 {
			return fmt.Errorf("discard: %w: member %d alignment %d bytes, need a non-negative multiple of %d", ErrGranularity, i, g.Alignment, SectorBytes)
		}
	}
	return nil
}
