package mapping

// The reference model: a deliberately naive, independent description of each
// layout. It draws the layout as md's documentation does, filling a table
// cell by cell (member, row) -> (chunk, copy), and answers every question by
// walking sectors. It shares no code with the planner.

const sector = 512

// cell is what one chunk-sized row of one member holds.
type cell struct {
	chunk int64 // -1: unused
	copy  int
}

// loc is one copy of one logical sector.
type loc struct {
	member int
	off    int64 // member data space, bytes
}

type model struct {
	g        Geometry
	n        int
	chunk    int64
	size     int64
	table    [][]cell // [member][row], striped levels only
	copiesOf [][]loc  // [chunk] -> member/row start of each copy, in copy order
	linStart []int64  // linear: logical start of member i
}

func newModel(g Geometry) model {
	md := model{g: g, n: len(g.MemberBytes), chunk: g.ChunkBytes}
	smallest := g.MemberBytes[0]
	for _, b := range g.MemberBytes {
		if b < smallest {
			smallest = b
		}
	}
	switch g.Level {
	case Linear:
		var at int64
		for _, b := range g.MemberBytes {
			md.linStart = append(md.linStart, at)
			at += b / sector * sector
		}
		md.size = at
		return md
	case RAID1:
		md.size = smallest / sector * sector
		return md
	}
	if md.chunk == 0 {
		md.chunk = 512 << 10
	}
	rowsPerMember := smallest / md.chunk
	md.table = make([][]cell, md.n)
	for i := range md.table {
		md.table[i] = make([]cell, rowsPerMember)
		for r := range md.table[i] {
			md.table[i][r] = cell{chunk: -1}
		}
	}
	put := func(member int, row int64, c int64, k int) {
		if md.table[member][row].chunk != -1 {
			panic("model: cell filled twice")
		}
		md.table[member][row] = cell{c, k}
	}
	var chunks int64
	switch {
	case g.Level == RAID0:
		// Deal chunks round-robin, one row at a time.
		member, row := 0, int64(0)
		for row < rowsPerMember {
			put(member, row, chunks, 0)
			chunks++
			if member++; member == md.n {
				member, row = 0, row+1
			}
		}
	case g.Layout == Near2:
		// Deal copies round-robin: copy 0 then copy 1 of each chunk, as
		// long as both fit in the cells left.
		member, row := 0, int64(0)
		free := rowsPerMember * int64(md.n)
		for free >= 2 {
			for k := range 2 {
				put(member, row, chunks, k)
				if member++; member == md.n {
					member, row = 0, row+1
				}
			}
			free -= 2
			chunks++
		}
	case g.Layout == Far2:
		half := rowsPerMember / 2
		for row := range half {
			for j := range md.n {
				put(j, row, chunks, 0)
				put((j+1)%md.n, half+row, chunks, 1)
				chunks++
			}
		}
	case g.Layout == Offset2:
		for row := int64(0); row+1 < rowsPerMember; row += 2 {
			for j := range md.n {
				put(j, row, chunks, 0)
				put((j+1)%md.n, row+1, chunks, 1)
				chunks++
			}
		}
	}
	md.size = chunks * md.chunk
	md.copiesOf = make([][]loc, chunks)
	for k := range 2 {
		for i := range md.table {
			for r, c := range md.table[i] {
				if c.chunk >= 0 && c.copy == k {
					md.copiesOf[c.chunk] = append(md.copiesOf[c.chunk], loc{i, int64(r) * md.chunk})
				}
			}
		}
	}
	return md
}

// copies returns where logical byte offset l lives, in copy order, using buf
// for storage.
func (md *model) copies(l int64, buf *[MaxCopies]loc) []loc {
	switch md.g.Level {
	case Linear:
		for i := md.n - 1; i >= 0; i-- {
			if l >= md.linStart[i] {
				buf[0] = loc{i, l - md.linStart[i]}
				return buf[:1]
			}
		}
		panic("model: negative offset")
	case RAID1:
		for i := range md.n {
			buf[i] = loc{i, l}
		}
		return buf[:md.n]
	}
	c := md.copiesOf[l/md.chunk]
	for k, p := range c {
		buf[k] = loc{p.member, p.off + l%md.chunk}
	}
	return buf[:len(c)]
}

// logical returns the array offset that member byte off of member i holds,
// or -1.
func (md *model) logical(i int, off int64) int64 {
	switch md.g.Level {
	case Linear:
		if off >= md.g.MemberBytes[i]/sector*sector {
			return -1
		}
		return md.linStart[i] + off
	case RAID1:
		if off >= md.size {
			return -1
		}
		return off
	}
	r := off / md.chunk
	if r >= int64(len(md.table[i])) || md.table[i][r].chunk < 0 {
		return -1
	}
	return md.table[i][r].chunk*md.chunk + off%md.chunk
}

// backing returns, per member, which member sectors back [off, off+length).
func (md *model) backing(off, length int64) [][]bool {
	out := make([][]bool, md.n)
	for i := range out {
		out[i] = make([]bool, md.g.MemberBytes[i]/sector)
	}
	var buf [MaxCopies]loc
	for l := off; l < off+length; l += sector {
		for _, p := range md.copies(l, &buf) {
			out[p.member][p.off/sector] = true
		}
	}
	return out
}

// runs returns the maximal runs of true sectors as byte ranges [start, end).
func runs(b []bool) [][2]int64 {
	var out [][2]int64
	for s := 0; s < len(b); s++ {
		if !b[s] {
			continue
		}
		e := s
		for e < len(b) && b[e] {
			e++
		}
		out = append(out, [2]int64{int64(s) * sector, int64(e) * sector})
		s = e
	}
	return out
}

// shrink rounds [start, end) inward to units of g, by walking sectors.
func shrink(r [2]int64, g Granularity) ([2]int64, bool) {
	if g.Bytes == 0 {
		return r, false
	}
	boundary := func(x int64) bool { return ((x-g.Alignment)%g.Bytes+g.Bytes)%g.Bytes == 0 }
	start := r[0]
	for start < r[1] && !boundary(start) {
		start += sector
	}
	end := r[1]
	for end > start && !boundary(end) {
		end -= sector
	}
	return [2]int64{start, end}, end > start
}
