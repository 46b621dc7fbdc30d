package reshape

import (
	"errors"
	"fmt"

	"pgregory.net/rapid"

	"uraid/mapping"
)

const sector = mapping.SectorBytes

// layoutCase is one layout a reshape widens.
type layoutCase struct {
	name   string
	level  mapping.Level
	layout mapping.Layout
}

var layoutCases = []layoutCase{
	{"raid0", mapping.RAID0, mapping.NoLayout},
	{"raid10-n2", mapping.RAID10, mapping.Near2},
	{"raid10-o2", mapping.RAID10, mapping.Offset2},
}

// genReshape draws a small reshape of layout lc: 1 to 5 old members (2 for
// raid10) and up to 6 in all, chunks of 8 or 16 sectors, a window cap of 1 to
// 6 units. Members get the fewest rows that fit the backup, at least the
// drawn number: the rows are what the test walks, so they stay few.
func genReshape(t *rapid.T, lc layoutCase) *Reshape {
	minOld := 1
	if lc.level == mapping.RAID10 {
		minOld = 2
	}
	n := rapid.IntRange(minOld, 5).Draw(t, "oldMembers")
	m := rapid.IntRange(n+1, 6).Draw(t, "newMembers")
	chunk := int64(4*kib) << rapid.IntRange(0, 1).Draw(t, "chunkShift")
	rows := rapid.Int64Range(2, 24).Draw(t, "rows")
	window := rapid.Int64Range(1, 6).Draw(t, "windowUnits")
	for ; ; rows += 2 {
		r, err := New(geo(lc.level, lc.layout, chunk, n, rows*chunk), geo(lc.level, lc.layout, chunk, m, rows*chunk),
			Config{MaxWindowBytes: window * int64(m) * chunk})
		if err == nil {
			return r
		}
		if !errors.Is(err, ErrGeometry) || rows > 1<<12 {
			t.Fatalf("New(%s, %d to %d members, %d rows): %v", lc.name, n, m, rows, err)
		}
	}
}

// liveSet is which sectors of the old array hold data.
type liveSet []bool

// genLive draws a few dead ranges (or none, or everything dead) over an
// array of size bytes.
func genLive(t *rapid.T, size int64) liveSet {
	s := make(liveSet, size/sector)
	for i := range s {
		s[i] = true
	}
	for i := range rapid.IntRange(0, 6).Draw(t, "deadRanges") {
		a := rapid.IntRange(0, len(s)-1).Draw(t, fmt.Sprintf("dead%d", i))
		b := rapid.IntRange(a+1, min(len(s), a+1+rapid.IntRange(1, len(s)).Draw(t, fmt.Sprintf("deadLen%d", i)))).Draw(t, fmt.Sprintf("deadEnd%d", i))
		for x := a; x < b; x++ {
			s[x] = false
		}
	}
	return s
}

// Live answers the planner from the set, a run at a time.
func (s liveSet) Live(off, end int64) (bool, int64) {
	x, e := off/sector, end/sector
	v := s[x]
	for x < e && s[x] == v {
		x++
	}
	return v, x * sector
}

// live counts the live bytes.
func (s liveSet) bytes() int64 {
	var n int64
	for _, v := range s {
		if v {
			n += sector
		}
	}
	return n
}
