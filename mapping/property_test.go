package mapping

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// layoutCase is one layout under test.
type layoutCase struct {
	name   string
	level  Level
	layout Layout
}

var layoutCases = []layoutCase{
	{"linear", Linear, NoLayout},
	{"raid0", RAID0, NoLayout},
	{"raid1", RAID1, NoLayout},
	{"raid10-n2", RAID10, Near2},
	{"raid10-f2", RAID10, Far2},
	{"raid10-o2", RAID10, Offset2},
}

// maxModelSectors bounds the array the model walks sector by sector, so that
// ten thousand cases per layout run in seconds even under the race detector.
// Geometry is scale-free in the chunk size, so large chunks give up members
// rather than the other way round: a 1 MiB chunk allows 2 members,
// 128 KiB and less (64 KiB for f2 and o2) the full 16.
const maxModelSectors = 1 << 12

// genGeometry draws a valid geometry of the given layout: 1 to 16 members
// (2 to 16 for raid10), chunks of 4 KiB to 1 MiB, unequal member sizes that
// are not whole chunks or even whole sectors.
func genGeometry(t *rapid.T, lc layoutCase) Geometry {
	g := Geometry{Level: lc.level, Layout: lc.layout}
	minMembers := 1
	if lc.level == RAID10 {
		minMembers = 2
	}
	switch lc.level {
	case Linear, RAID1:
		n := rapid.IntRange(minMembers, 16).Draw(t, "members")
		for i := range n {
			g.MemberBytes = append(g.MemberBytes, rapid.Int64Range(sector, maxModelSectors/4*sector+511).Draw(t, fmt.Sprintf("member%d", i)))
		}
		return g
	}
	g.ChunkBytes = int64(1) << rapid.IntRange(12, 20).Draw(t, "chunkShift")
	chunkSectors := g.ChunkBytes / sector
	minRows := int64(1)
	if lc.layout == Far2 || lc.layout == Offset2 {
		minRows = 2
	}
	maxMembers := int(min(16, max(int64(minMembers), maxModelSectors/(chunkSectors*minRows))))
	n := rapid.IntRange(minMembers, maxMembers).Draw(t, "members")
	maxRows := max(minRows, maxModelSectors/(int64(n)*chunkSectors))
	rows := rapid.Int64Range(minRows, maxRows).Draw(t, "rows")
	for i := range n {
		extraRows := rapid.Int64Range(0, 2).Draw(t, fmt.Sprintf("extraRows%d", i))
		extraBytes := rapid.Int64Range(0, g.ChunkBytes-1).Draw(t, fmt.Sprintf("extraBytes%d", i))
		g.MemberBytes = append(g.MemberBytes, (rows+extraRows)*g.ChunkBytes+extraBytes)
	}
	return g
}

// genRequest draws a valid sector-aligned range of an array of size bytes,
// sometimes running to the end of the array.
func genRequest(t *rapid.T, size int64) (off, length int64) {
	sectors := size / sector
	off = rapid.Int64Range(0, sectors-1).Draw(t, "offSector")
	if rapid.IntRange(0, 5).Draw(t, "toEnd") == 0 {
		length = sectors - off
	} else {
		length = rapid.Int64Range(1, sectors-off).Draw(t, "lenSectors")
	}
	return off * sector, length * sector
}

// genGranularity draws one discard granularity per member: some members
// without discard, powers of two and odd multiples of the sector, any
// alignment.
func genGranularity(t *rapid.T, n int) []Granularity {
	gran := make([]Granularity, n)
	for i := range gran {
		switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("granKind%d", i)) {
		case 0:
			// No discard support.
		case 1:
			gran[i].Bytes = sector << rapid.IntRange(0, 12).Draw(t, fmt.Sprintf("granShift%d", i))
		default:
			gran[i].Bytes = sector * rapid.Int64Range(1, 4096).Draw(t, fmt.Sprintf("granSectors%d", i))
		}
		if gran[i].Bytes > 0 {
			gran[i].Alignment = sector * rapid.Int64Range(0, 4*gran[i].Bytes/sector).Draw(t, fmt.Sprintf("align%d", i))
		}
	}
	return gran
}

// TestPropertyLayout checks every layout against the model on random
// geometry and requests: size, write, read and discard plans.
func TestPropertyLayout(t *testing.T) {
	for _, lc := range layoutCases {
		t.Run(lc.name, func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(t *rapid.T) { checkLayout(t, lc) })
		})
	}
}

// checkLayout is one random case of TestPropertyLayout.
func checkLayout(t *rapid.T, lc layoutCase) {
	g := genGeometry(t, lc)
	m, md := mustNew(t, g), newModel(g)
	checkGeometry(t, m, &md)
	off, length := genRequest(t, m.Size())
	checkWrite(t, m, &md, off, length)
	checkRead(t, m, &md, off, length)

	// Sector granularity: exactly the maximal runs of backing sectors,
	// whether said with nil or with 512-byte units.
	back := md.backing(off, length)
	sectorGran := make([]Granularity, m.Members())
	for i := range sectorGran {
		sectorGran[i].Bytes = sector
	}
	got, err := m.Discard(off, length, sectorGran, nil)
	if err != nil {
		t.Fatalf("Discard(%d, %d): %v", off, length, err)
	}
	checkDiscard(t, m, &md, got, back, sectorGran)
	checkRangesPerMember(t, lc, got)
	if nilGran, err := m.Discard(off, length, nil, nil); err != nil || !slices.Equal(nilGran, got) {
		t.Fatalf("Discard with nil granularity gave %+v, %v; want %+v", nilGran, err, got)
	}

	// Random granularity: the runs rounded inward, never more.
	gran := genGranularity(t, m.Members())
	got, err = m.Discard(off, length, gran, nil)
	if err != nil {
		t.Fatalf("Discard(%d, %d, %+v): %v", off, length, gran, err)
	}
	checkDiscard(t, m, &md, got, back, gran)
}

func checkGeometry(t *rapid.T, m *Map, md *model) {
	t.Helper()
	if m.Size() != md.size {
		t.Fatalf("Size() = %d, model %d", m.Size(), md.size)
	}
	for i, b := range md.g.MemberBytes {
		if u := m.MemberBytes(i); u > b || u%sector != 0 {
			t.Fatalf("MemberBytes(%d) = %d of %d", i, u, b)
		}
	}
}

// checkWrite: every (sector, copy) pair is produced exactly once, where the
// model puts it, in logical order, never across a chunk boundary.
func checkWrite(t *rapid.T, m *Map, md *model, off, length int64) {
	t.Helper()
	prefix := []Extent{{Member: -7}}
	got, err := m.Write(off, length, prefix)
	if err != nil {
		t.Fatalf("Write(%d, %d): %v", off, length, err)
	}
	if got[0] != prefix[0] {
		t.Fatalf("Write overwrote what dst held")
	}
	got = got[1:]
	if len(got) > m.MaxWriteExtents(length) {
		t.Fatalf("%d extents, MaxWriteExtents says %d", len(got), m.MaxWriteExtents(length))
	}
	copies := m.Copies()
	seen := make([]bool, length/sector*int64(copies))
	last := off
	var buf [MaxCopies]loc
	for _, e := range got {
		if e.Length <= 0 || e.Logical < last {
			t.Fatalf("extent %+v empty or out of logical order", e)
		}
		last = e.Logical
		if m.ChunkBytes() > 0 && e.Logical/md.chunk != (e.Logical+e.Length-1)/md.chunk {
			t.Fatalf("extent %+v crosses a chunk boundary", e)
		}
		if e.End() > m.MemberBytes(e.Member) {
			t.Fatalf("extent %+v past the member's used %d bytes", e, m.MemberBytes(e.Member))
		}
		for j := int64(0); j < e.Length; j += sector {
			l := e.Logical + j
			want := md.copies(l, &buf)
			k := slices.Index(want, loc{e.Member, e.Offset + j})
			if k < 0 {
				t.Fatalf("extent %+v maps logical %d to member %d offset %d, model says %v", e, l, e.Member, e.Offset+j, want)
			}
			at := (l-off)/sector*int64(copies) + int64(k)
			if seen[at] {
				t.Fatalf("logical %d copy %d written twice", l, k)
			}
			seen[at] = true
		}
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Fatalf("logical %d copy %d never written", off+int64(i/copies)*sector, i%copies)
	}
}

// checkRead: pieces tile the request in order, and each copy of each sector
// is where the model puts it, in the model's copy order.
func checkRead(t *rapid.T, m *Map, md *model, off, length int64) {
	t.Helper()
	got, err := m.Read(off, length, nil)
	if err != nil {
		t.Fatalf("Read(%d, %d): %v", off, length, err)
	}
	if len(got) > m.MaxReadPieces(length) {
		t.Fatalf("%d pieces, MaxReadPieces says %d", len(got), m.MaxReadPieces(length))
	}
	next := off
	var buf [MaxCopies]loc
	for _, p := range got {
		if p.Logical != next || p.Length <= 0 {
			t.Fatalf("piece %+v does not continue at %d", p, next)
		}
		next += p.Length
		for l := p.Logical; l < p.Logical+p.Length; l += sector {
			want := md.copies(l, &buf)
			if p.N != len(want) {
				t.Fatalf("piece at %d has %d copies, model %d", p.Logical, p.N, len(want))
			}
			for k, c := range p.Copies[:p.N] {
				if c.Logical != p.Logical || c.Length != p.Length {
					t.Fatalf("copy %+v does not match piece %d+%d", c, p.Logical, p.Length)
				}
				if at := (loc{c.Member, c.Offset + l - p.Logical}); at != want[k] {
					t.Fatalf("logical %d copy %d at %+v, model %+v", l, k, at, want[k])
				}
			}
		}
	}
	if next != off+length {
		t.Fatalf("pieces end at %d, want %d", next, off+length)
	}
}

// checkDiscard compares a discard plan with the model: sorted by member and
// offset, never touching a sector outside back, never two touching ranges on
// one member, and equal to the model's runs rounded inward.
func checkDiscard(t *rapid.T, m *Map, md *model, got []Extent, back [][]bool, gran []Granularity) {
	t.Helper()
	if len(got) > m.MaxDiscardExtents() {
		t.Fatalf("%d extents, MaxDiscardExtents says %d", len(got), m.MaxDiscardExtents())
	}
	for j, e := range got {
		if e.Length <= 0 || e.Offset < 0 || e.Member < 0 || e.Member >= m.Members() {
			t.Fatalf("bad extent %+v", e)
		}
		for s := e.Offset; s < e.End(); s += sector {
			if s/sector >= int64(len(back[e.Member])) || !back[e.Member][s/sector] {
				t.Fatalf("extent %+v covers member %d offset %d, which does not back the request", e, e.Member, s)
			}
		}
		if l := md.logical(e.Member, e.Offset); e.Logical != l {
			t.Fatalf("extent %+v: Logical %d, model %d", e, e.Logical, l)
		}
		if j > 0 {
			p := got[j-1]
			if p.Member > e.Member || (p.Member == e.Member && p.End() >= e.Offset) {
				t.Fatalf("extents %+v and %+v unsorted, overlapping or touching", p, e)
			}
		}
	}
	var want []Extent
	for i, b := range back {
		for _, r := range runs(b) {
			if gran != nil {
				var ok bool
				if r, ok = shrink(r, gran[i]); !ok {
					continue
				}
			}
			want = append(want, Extent{Member: i, Offset: r[0], Length: r[1] - r[0], Logical: md.logical(i, r[0])})
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Discard gave\n%+v\nmodel wants\n%+v", got, want)
	}
}

// checkRangesPerMember checks the bound Discard documents on how many ranges
// one member gets.
func checkRangesPerMember(t *rapid.T, lc layoutCase, got []Extent) {
	t.Helper()
	limit := 1
	switch {
	case lc.level == RAID10 && lc.layout == Far2:
		limit = 2
	case lc.level == RAID10 && lc.layout == Offset2:
		limit = 3
	}
	count := map[int]int{}
	for _, e := range got {
		if count[e.Member]++; count[e.Member] > limit {
			t.Fatalf("member %d got %d ranges, at most %d expected: %+v", e.Member, count[e.Member], limit, got)
		}
	}
}

// TestPropertyBadInput throws invalid geometry and requests at the package:
// it must answer with an error wrapping the right sentinel, never panic.
func TestPropertyBadInput(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := Geometry{
			Level:      Level(rapid.IntRange(-1, 6).Draw(t, "level")),
			Layout:     Layout(rapid.IntRange(-1, 4).Draw(t, "layout")),
			ChunkBytes: rapid.SampledFrom([]int64{-4096, 0, 1, 512, 4095, 4096, 6144, 1 << 20, 1 << 30, 1 << 31, 1 << 62}).Draw(t, "chunk"),
		}
		for i := range rapid.IntRange(0, 20).Draw(t, "members") {
			g.MemberBytes = append(g.MemberBytes, rapid.SampledFrom([]int64{-1, 0, 511, 512, 4096, 1 << 20, 3<<20 + 512, 1 << 54, 1<<54 + 1, 1<<63 - 1}).Draw(t, fmt.Sprintf("member%d", i)))
		}
		m, err := New(g)
		if err != nil {
			if !errors.Is(err, ErrGeometry) {
				t.Fatalf("New: %v does not wrap ErrGeometry", err)
			}
			return
		}
		if m.Size() <= 0 || m.Size()%sector != 0 {
			t.Fatalf("accepted geometry %+v has size %d", g, m.Size())
		}
		edge := []int64{-1 << 63, -512, -1, 0, 1, 511, 512, m.Size() - 512, m.Size() - 1, m.Size(), m.Size() + 512, 1<<63 - 512, 1<<63 - 1}
		off := rapid.SampledFrom(edge).Draw(t, "off")
		length := rapid.SampledFrom(edge).Draw(t, "length")
		valid := off >= 0 && length > 0 && off%sector == 0 && length%sector == 0 && off <= m.Size()-length
		gran := make([]Granularity, rapid.IntRange(m.Members()-1, m.Members()+1).Draw(t, "granLen"))
		for i := range gran {
			gran[i] = Granularity{
				Bytes:     rapid.SampledFrom([]int64{-512, 0, 1, 512, 4096, 1 << 54, 1 << 55, 1<<63 - 1}).Draw(t, fmt.Sprintf("granBytes%d", i)),
				Alignment: rapid.SampledFrom([]int64{-512, 0, 1, 512, 1<<63 - 512}).Draw(t, fmt.Sprintf("granAlign%d", i)),
			}
		}
		validGran := len(gran) == m.Members()
		for _, x := range gran {
			validGran = validGran && x.Bytes >= 0 && x.Bytes%sector == 0 && x.Bytes <= MaxMemberBytes && x.Alignment >= 0 && x.Alignment%sector == 0
		}
		prefix := []Extent{{Member: 99}}
		w, werr := m.Write(off, length, prefix)
		_, rerr := m.Read(off, length, nil)
		d, derr := m.Discard(off, length, gran, prefix)
		for _, err := range []error{werr, rerr, derr} {
			if valid && err != nil && err != derr {
				t.Fatalf("valid request %d+%d refused: %v", off, length, err)
			}
			if !valid && err == nil {
				t.Fatalf("invalid request %d+%d accepted", off, length)
			}
			if err != nil && !errors.Is(err, ErrRange) && !errors.Is(err, ErrMisaligned) && !errors.Is(err, ErrGranularity) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
		}
		if valid && (derr == nil) != validGran {
			t.Fatalf("discard granularity %+v: valid=%v but err=%v", gran, validGran, derr)
		}
		if werr != nil && len(w) != 1 || derr != nil && len(d) != 1 {
			t.Fatal("a failed call changed dst")
		}
	})
}

func mustNew(t *rapid.T, g Geometry) *Map {
	t.Helper()
	m, err := New(g)
	if err != nil {
		t.Fatalf("New(%+v): %v", g, err)
	}
	return m
}

// TestPropertySortByMember: the in-place counting sort returns a permutation
// ordered by member, then offset.
func TestPropertySortByMember(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := rapid.IntRange(1, MaxMembers).Draw(t, "members")
		e := rapid.SliceOf(rapid.Custom(func(t *rapid.T) Extent {
			return Extent{
				Member: rapid.IntRange(0, members-1).Draw(t, "member"),
				Offset: rapid.Int64Range(0, 64).Draw(t, "offset"),
				Length: rapid.Int64Range(1, 3).Draw(t, "length"),
			}
		})).Draw(t, "extents")
		want := slices.Clone(e)
		sortByMember(e, members)
		for i := 1; i < len(e); i++ {
			if e[i-1].Member > e[i].Member || e[i-1].Member == e[i].Member && e[i-1].Offset > e[i].Offset {
				t.Fatalf("unsorted at %d: %+v", i, e)
			}
		}
		// Same multiset: sort both fully and compare.
		full := func(a, b Extent) int {
			if a.Member != b.Member {
				return a.Member - b.Member
			}
			if a.Offset != b.Offset {
				return int(a.Offset - b.Offset)
			}
			return int(a.Length - b.Length)
		}
		slices.SortFunc(e, full)
		slices.SortFunc(want, full)
		if !slices.Equal(e, want) {
			t.Fatalf("not a permutation:\n%+v\n%+v", e, want)
		}
	})
}
