package mapping

import (
	"fmt"
	"math/bits"
)

// Limits on a geometry. They keep every offset the package computes far
// from int64 overflow: MaxMembers * MaxMemberBytes < 2^63. They are uraid's
// limits: creating an array and reading a superblock hold it to the same.
const (
	SectorBytes       = 512
	MinChunkBytes     = 4 << 10
	MaxChunkBytes     = 1 << 30
	DefaultChunkBytes = 512 << 10
	MaxMembers        = 256
	MaxMemberBytes    = 1 << 54 // 16 PiB
)

// Geometry is what an array is made of. It is plain data, as stored in the
// array's metadata; New checks it.
type Geometry struct {
	Level Level
	// Layout is the RAID10 copy placement: Near2, Far2 or Offset2 for
	// RAID10, NoLayout for every other level.
	Layout Layout
	// ChunkBytes is the stripe unit of RAID0 and RAID10, a power of two
	// from 4 KiB to 1 GiB; 0 selects DefaultChunkBytes. Linear and RAID1
	// have no chunk and need 0.
	ChunkBytes int64
	// MemberBytes is the data space of each member, in member order.
	MemberBytes []int64
}

// Map answers where the bytes of one array live. Build it with New.
type Map struct {
	level  Level
	layout Layout
	n      int   // members
	chunk  int64 // bytes; 0 for linear and raid1
	shift  uint  // log2(chunk)
	size   int64 // logical bytes
	chunks int64 // logical chunks (raid0, raid10)
	// stride is where the second half of a Far2 member begins, in chunks:
	// md's geo->stride.
	stride int64
	// used is the data space each member contributes.
	used []int64
	// start is, for linear, the logical offset of each member's first byte,
	// with start[n] == size.
	start []int64
}

// New checks g and builds its Map. Each member contributes whole units:
// linear and raid1 whole sectors, raid0 and raid10 whole chunks of the
// smallest member; see Size for what that yields.
func New(g Geometry) (*Map, error) {
	m := &Map{level: g.Level, layout: g.Layout, n: len(g.MemberBytes)}
	if !g.Level.Valid() {
		return nil, fmt.Errorf("%w: level %v is not linear, raid0, raid1 or raid10", ErrGeometry, g.Level)
	}
	if err := checkLevelLayout(g.Level, g.Layout); err != nil {
		return nil, err
	}
	if err := m.checkMembers(g); err != nil {
		return nil, err
	}
	switch g.Level {
	case Linear:
		if g.ChunkBytes != 0 {
			return nil, fmt.Errorf("%w: linear arrays have no chunk, got chunk %d bytes (leave it 0)", ErrGeometry, g.ChunkBytes)
		}
		m.used = make([]int64, m.n)
		m.start = make([]int64, m.n+1)
		for i, b := range g.MemberBytes {
			m.used[i] = b &^ (SectorBytes - 1)
			m.start[i+1] = m.start[i] + m.used[i]
		}
		m.size = m.start[m.n]
		return m, nil
	case RAID1:
		if g.ChunkBytes != 0 {
			return nil, fmt.Errorf("%w: raid1 arrays have no chunk, got chunk %d bytes (leave it 0)", ErrGeometry, g.ChunkBytes)
		}
		if m.n > MaxCopies {
			return nil, fmt.Errorf("%w: raid1 with %d members, at most %d copies are supported", ErrGeometry, m.n, MaxCopies)
		}
		m.size = smallest(g.MemberBytes) &^ (SectorBytes - 1)
		m.used = make([]int64, m.n)
		for i := range m.used {
			m.used[i] = m.size
		}
		return m, nil
	}
	if err := m.initStriped(g); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Map) checkMembers(g Geometry) error {
	if m.n == 0 {
		return fmt.Errorf("%w: no members (give at least one member device)", ErrGeometry)
	}
	if m.n > MaxMembers {
		return fmt.Errorf("%w: %d members, at most %d are supported", ErrGeometry, m.n, MaxMembers)
	}
	for i, b := range g.MemberBytes {
		if b < SectorBytes {
			return fmt.Errorf("%w: member %d has %d data bytes, less than one sector (is the device empty or the data offset past its end?)", ErrGeometry, i, b)
		}
		if b > MaxMemberBytes {
			return fmt.Errorf("%w: member %d has %d data bytes, more than the supported %d", ErrGeometry, i, b, int64(MaxMemberBytes))
		}
	}
	return nil
}

// initStriped sets up raid0 and raid10. Sizes follow md (raid0 with members
// truncated to the smallest, raid10_size for raid10), with C whole chunks in
// the smallest member and n members:
//
//	raid0:  C*n chunks
//	n2:     floor(C*n/2) chunks; when C*n is odd, the last slot of the last row is unused
//	f2, o2: floor(C/2)*n chunks; with C odd, each member's last chunk is unused
func (m *Map) initStriped(g Geometry) error {
	chunk := g.ChunkBytes
	if chunk == 0 {
		chunk = DefaultChunkBytes
	}
	if chunk < MinChunkBytes || chunk > MaxChunkBytes || chunk&(chunk-1) != 0 {
		return fmt.Errorf("%w: chunk %d bytes, need a power of two from %d to %d (e.g. 524288 for 512 KiB)", ErrGeometry, chunk, MinChunkBytes, MaxChunkBytes)
	}
	m.chunk = chunk
	m.shift = uint(bits.TrailingZeros64(uint64(chunk)))
	perMember := smallest(g.MemberBytes) >> m.shift // C
	n := int64(m.n)
	var memberChunks int64
	switch m.level {
	case RAID0:
		if perMember < 1 {
			return fmt.Errorf("%w: smallest member has %d bytes, less than one %d-byte chunk (use a smaller chunk or a larger member)", ErrGeometry, smallest(g.MemberBytes), chunk)
		}
		m.chunks = perMember * n
		memberChunks = perMember
	case RAID10:
		if m.n < 2 {
			return fmt.Errorf("%w: raid10 with %d member keeps both copies on one device (give at least 2 members)", ErrGeometry, m.n)
		}
		switch g.Layout {
		case Near2:
			m.chunks = perMember * n / 2
			memberChunks = (2*m.chunks + n - 1) / n
		case Far2, Offset2:
			m.stride = perMember / 2
			m.chunks = m.stride * n
			memberChunks = 2 * m.stride
		}
		if m.chunks < 1 {
			return fmt.Errorf("%w: smallest member has %d bytes, too small for two copies of one %d-byte chunk in layout %v (use a smaller chunk or a larger member)", ErrGeometry, smallest(g.MemberBytes), chunk, g.Layout)
		}
	}
	m.size = m.chunks << m.shift
	m.used = make([]int64, m.n)
	for i := range m.used {
		m.used[i] = memberChunks << m.shift
	}
	return nil
}

func smallest(v []int64) int64 {
	s := v[0]
	for _, x := range v[1:] {
		s = min(s, x)
	}
	return s
}

// Size returns the logical size of the array in bytes.
func (m *Map) Size() int64 { return m.size }

// Members returns the number of members.
func (m *Map) Members() int { return m.n }

// Level returns the RAID level.
func (m *Map) Level() Level { return m.level }

// Layout returns the RAID10 layout, NoLayout for other levels.
func (m *Map) Layout() Layout { return m.layout }

// ChunkBytes returns the chunk size, 0 for linear and raid1.
func (m *Map) ChunkBytes() int64 { return m.chunk }

// Copies returns how many members hold each logical byte.
func (m *Map) Copies() int {
	switch m.level {
	case RAID1:
		return m.n
	case RAID10:
		return 2
	}
	return 1
}

// MemberBytes returns how much of member i's data space the layout uses,
// from offset 0; bytes past it hold no array data. It is 0 for an i that is
// not a member.
func (m *Map) MemberBytes(i int) int64 {
	if i < 0 || i >= m.n {
		return 0
	}
	return m.used[i]
}
