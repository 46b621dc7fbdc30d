package mapping

// Read appends to dst the pieces of a read of length bytes at array offset
// off, in logical order: each piece is logically contiguous and lies in one
// place on each of its copies, so the caller may read it from any one copy
// and fail over to the next. Pieces end at chunk boundaries (linear: member
// boundaries; raid1 is one piece with every mirror as a copy).
func (m *Map) Read(off, length int64, dst []Piece) ([]Piece, error) {
	if err := m.check("read", off, length); err != nil {
		return dst, err
	}
	end := off + length
	switch m.level {
	case Linear:
		for i := m.memberOf(off); off < end; i++ {
			n := min(end, m.start[i+1]) - off
			dst = append(dst, Piece{Logical: off, Length: n, N: 1})
			dst[len(dst)-1].Copies[0] = Extent{Member: i, Offset: off - m.start[i], Length: n, Logical: off}
			off += n
		}
		return dst, nil
	case RAID1:
		dst = append(dst, Piece{Logical: off, Length: length, N: m.n})
		p := &dst[len(dst)-1]
		for i := range m.n {
			p.Copies[i] = Extent{Member: i, Offset: off, Length: length, Logical: off}
		}
		return dst, nil
	}
	var pl [2]place
	for off < end {
		c, in := off>>m.shift, off&(m.chunk-1)
		n := min(end-off, m.chunk-in)
		k := m.places(c, &pl)
		dst = append(dst, Piece{Logical: off, Length: n, N: k})
		p := &dst[len(dst)-1]
		for j, q := range pl[:k] {
			p.Copies[j] = Extent{Member: q.member, Offset: q.row<<m.shift + in, Length: n, Logical: off}
		}
		off += n
	}
	return dst, nil
}
