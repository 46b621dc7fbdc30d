package mapping

// Write appends to dst the member ranges that a write of length bytes at
// array offset off must reach: every copy, split at chunk boundaries (linear
// splits at member boundaries; raid1 gives each mirror one range). Extents
// come in logical order, and for one logical piece in copy order.
func (m *Map) Write(off, length int64, dst []Extent) ([]Extent, error) {
	if err := m.check("write", off, length); err != nil {
		return dst, err
	}
	return m.write(off, length, dst), nil
}

// write is Write without the checks; Discard reuses it for head and tail.
func (m *Map) write(off, length int64, dst []Extent) []Extent {
	end := off + length
	switch m.level {
	case Linear:
		for i := m.memberOf(off); off < end; i++ {
			n := min(end, m.start[i+1]) - off
			dst = append(dst, Extent{Member: i, Offset: off - m.start[i], Length: n, Logical: off})
			off += n
		}
		return dst
	case RAID1:
		for i := range m.n {
			dst = append(dst, Extent{Member: i, Offset: off, Length: length, Logical: off})
		}
		return dst
	}
	var p [2]place
	for off < end {
		c, in := off>>m.shift, off&(m.chunk-1)
		n := min(end-off, m.chunk-in)
		k := m.places(c, &p)
		for _, q := range p[:k] {
			dst = append(dst, Extent{Member: q.member, Offset: q.row<<m.shift + in, Length: n, Logical: off})
		}
		off += n
	}
	return dst
}
