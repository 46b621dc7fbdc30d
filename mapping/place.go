package mapping

// place is where one copy of a chunk lives: a member and a chunk-sized row
// of that member's data space.
type place struct {
	member int
	row    int64
}

// places writes the copies of logical chunk c into p, in copy order, and
// returns how many there are. It serves raid0 and raid10 and follows md:
// raid0 puts chunk c on member c%n at row c/n; raid10 is md's
// raid10_find_phys with two copies, either near (near_copies=2) or far
// (far_copies=2, with far_offset for o2).
func (m *Map) places(c int64, p *[2]place) int {
	n := int64(m.n)
	switch {
	case m.level == RAID0:
		p[0] = place{int(c % n), c / n}
		return 1
	case m.layout == Near2:
		// Slots 2c and 2c+1 of a raid0 stripe over all members.
		s := 2 * c
		p[0] = place{int(s % n), s / n}
		p[1] = place{int((s + 1) % n), (s + 1) / n}
		return 2
	case m.layout == Far2:
		d, r := c%n, c/n
		p[0] = place{int(d), r}
		p[1] = place{int((d + 1) % n), m.stride + r}
		return 2
	default: // Offset2
		d, r := c%n, c/n
		p[0] = place{int(d), 2 * r}
		p[1] = place{int((d + 1) % n), 2*r + 1}
		return 2
	}
}

// chunkAt is the inverse of places: the logical chunk whose copy member i
// holds at row, or -1 if that row holds no array data.
func (m *Map) chunkAt(i int, row int64) int64 {
	n, d := int64(m.n), int64(i)
	var c int64
	switch {
	case m.level == RAID0:
		c = row*n + d
	case m.layout == Near2:
		c = (row*n + d) / 2
	case m.layout == Far2:
		if row >= m.stride {
			c = (row-m.stride)*n + (d+n-1)%n
		} else {
			c = row*n + d
		}
	default: // Offset2
		if row%2 == 1 {
			c = (row/2)*n + (d+n-1)%n
		} else {
			c = (row/2)*n + d
		}
	}
	// Rows past the layout's last one map to chunks past the last chunk.
	if row < 0 || c >= m.chunks {
		return -1
	}
	return c
}

// logicalAt returns the array offset stored at member offset off of member
// i, or -1 if that byte holds no array data.
func (m *Map) logicalAt(i int, off int64) int64 {
	if i < 0 || i >= m.n || off < 0 || off >= m.used[i] {
		return -1
	}
	switch m.level {
	case Linear:
		return m.start[i] + off
	case RAID1:
		return off
	}
	c := m.chunkAt(i, off>>m.shift)
	if c < 0 {
		return -1
	}
	return c<<m.shift + off&(m.chunk-1)
}

// memberOf returns the linear member holding logical offset off.
func (m *Map) memberOf(off int64) int {
	lo, hi := 0, m.n-1
	for lo < hi { // first member whose end is past off
		mid := (lo + hi) / 2
		if m.start[mid+1] > off {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
