package reshape

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"uraid/mapping"
)

// TestPropertyRoute checks the translation for every layout, at any cursor
// and window: each array byte has one place per copy, by the new map below
// the cursor and the old map at or past the window's end, and bytes in the
// window wait. No two bytes outside the window share a member byte, and the
// window's old and new places hold no byte outside it, so a step can move it
// without touching anyone else's data.
func TestPropertyRoute(t *testing.T) {
	for _, lc := range layoutCases {
		t.Run(lc.name, func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(t *rapid.T) { checkRoute(t, lc) })
		})
	}
}

func checkRoute(t *rapid.T, lc layoutCase) {
	r := genReshape(t, lc)
	units := r.End() / r.Unit()
	c := rapid.Int64Range(0, units).Draw(t, "cursor") * r.Unit()
	w := rapid.Int64Range(0, (r.End()-c)/r.Unit()).Draw(t, "window") * r.Unit()
	pos := Position{Cursor: c, WindowEnd: c + w}
	size := r.From().Size()
	copies := r.To().Copies()

	// owner[member][sector] is the array sector placed there, -1 for none.
	owner := make([][]int64, r.To().Members())
	for i := range owner {
		owner[i] = make([]int64, r.To().MemberBytes(i)/sector)
		for j := range owner[i] {
			owner[i][j] = -1
		}
	}
	var ext []mapping.Extent
	places := func(m *mapping.Map, x int64) []mapping.Extent {
		var err error
		if ext, err = m.Write(x, sector, ext[:0]); err != nil || len(ext) != copies {
			t.Fatalf("Write(%d) on %v: %v, %d places for %d copies", x, m.Layout(), err, len(ext), copies)
		}
		return ext
	}
	for x := int64(0); x < size; x += sector {
		z, n, err := r.Route(pos, x, sector)
		if err != nil || n != sector {
			t.Fatalf("Route(%+v, %d): %v, %d bytes", pos, x, err, n)
		}
		want := ZoneOld
		switch {
		case x < c:
			want = ZoneNew
		case x < c+w:
			want = ZoneWait
		}
		if z != want {
			t.Fatalf("Route(%+v, %d) = %v, want %v", pos, x, z, want)
		}
		if z == ZoneWait {
			if r.Map(z) != nil {
				t.Fatalf("Map(wait) is not nil")
			}
			continue
		}
		for _, e := range places(r.Map(z), x) {
			if o := owner[e.Member][e.Offset/sector]; o >= 0 {
				t.Fatalf("array sectors %d and %d share member %d sector %d at %+v", o, x, e.Member, e.Offset/sector, pos)
			}
			owner[e.Member][e.Offset/sector] = x
		}
	}
	for x := c; x < c+w && x < size; x += sector {
		for _, m := range []*mapping.Map{r.To(), r.From()} {
			for _, e := range places(m, x) {
				if o := owner[e.Member][e.Offset/sector]; o >= 0 {
					t.Fatalf("window sector %d's place on member %d sector %d holds array sector %d at %+v", x, e.Member, e.Offset/sector, o, pos)
				}
			}
		}
	}

	// A longer route stops at the zone's edge.
	off, length := drawRange(t, size)
	z, n, err := r.Route(pos, off, length)
	if err != nil || n <= 0 || n > length {
		t.Fatalf("Route(%+v, %d, %d): %v, %d bytes", pos, off, length, err, n)
	}
	if z2, _, _ := r.Route(pos, off+n-sector, sector); z2 != z {
		t.Fatalf("Route(%+v, %d, %d) = %v for %d bytes, but its last sector is %v", pos, off, length, z, n, z2)
	}
	if off+n < off+length {
		if z3, _, _ := r.Route(pos, off+n, sector); z3 == z {
			t.Fatalf("Route(%+v, %d, %d) stopped after %d bytes inside zone %v", pos, off, length, n, z)
		}
	}
}

// drawRange draws a sector-aligned range of an array of size bytes.
func drawRange(t *rapid.T, size int64) (off, length int64) {
	s := size / sector
	off = rapid.Int64Range(0, s-1).Draw(t, "off")
	length = rapid.Int64Range(1, s-off).Draw(t, "len")
	return off * sector, length * sector
}

// TestPropertySteps walks whole reshapes over random liveness and checks
// every step against the safety rule, sector by sector: each member byte it
// writes or discards holds, in the old layout, nothing or a byte below the
// persisted cursor (or, once a backup of the window is persisted, a byte of
// the window); the backup area holds nothing the old or the new layout keeps
// below the end; reads, writes and discards cover exactly the live and the
// dead bytes of the window (a backup step reads it whole); a step is planned
// again the same from the same state; a backup's restore writes what its step
// would have.
func TestPropertySteps(t *testing.T) {
	for _, lc := range layoutCases {
		t.Run(lc.name, func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(t *rapid.T) { checkSteps(t, lc) })
		})
	}
}

func checkSteps(t *rapid.T, lc layoutCase) {
	r := genReshape(t, lc)
	live := genLive(t, r.From().Size())
	var st State
	var s, again, restore Step
	for steps := 0; ; steps++ {
		if steps > int(r.End()/r.Unit())+2 {
			t.Fatalf("no end after %d steps", steps)
		}
		if err := r.Next(st, live.Live, &s); err != nil {
			t.Fatalf("Next(%+v): %v", st, err)
		}
		if err := r.Next(st, live.Live, &again); err != nil || !reflect.DeepEqual(s, again) {
			t.Fatalf("Next(%+v) again: %v, differs:\n%+v\n%+v", st, err, s, again)
		}
		checkStep(t, r, live, st, &s)
		if s.Kind == BackupCopy {
			if err := r.Next(s.Mid, live.Live, &restore); err != nil {
				t.Fatalf("Next(%+v) after a backup: %v", s.Mid, err)
			}
			checkStep(t, r, live, s.Mid, &restore)
			checkRestore(t, &s, &restore)
		}
		if err := r.Check(s.After); err != nil {
			t.Fatalf("step %+v leads to a bad state: %v", s, err)
		}
		st = s.After
		if st.Done {
			return
		}
	}
}

// checkStep checks one step planned from the persisted state st.
func checkStep(t *rapid.T, r *Reshape, live liveSet, st State, s *Step) {
	from, to := r.From(), r.To()
	size := from.Size()
	if s.From != st.Cursor || s.To < s.From || s.To > r.End() || (s.To-s.From)%r.Unit() != 0 {
		t.Fatalf("step [%d, %d) from cursor %d, end %d", s.From, s.To, st.Cursor, r.End())
	}
	if s.To-s.From > r.MaxWindowBytes() || (s.Kind != Finish && s.To == s.From) {
		t.Fatalf("step [%d, %d): window of %d bytes, cap %d", s.From, s.To, s.To-s.From, r.MaxWindowBytes())
	}
	if s.Kind == BackupCopy && s.To-s.From > r.BackupBytes() {
		t.Fatalf("backup step [%d, %d) holds more than the backup's %d bytes", s.From, s.To, r.BackupBytes())
	}
	inWindow := func(x int64) bool { return x >= s.From && x < s.To }
	// The rule, per member sector the step overwrites.
	overwrite := func(what string, e mapping.Extent, held func(x int64) bool) {
		for off := e.Offset; off < e.End(); off += sector {
			old := from.LogicalAt(e.Member, off)
			if old >= 0 && old >= st.Cursor && !held(old) {
				t.Fatalf("%v step [%d, %d) at cursor %d: %s member %d sector %d, which holds array byte %d in the old layout", s.Kind, s.From, s.To, st.Cursor, what, e.Member, off/sector, old)
			}
		}
	}
	held := func(int64) bool { return false }
	if s.Kind == BackupCopy || s.Kind == Restore {
		held = inWindow // only after Mid: checked by the order Step documents
	}
	for _, e := range s.Writes {
		overwrite("writes", e, held)
	}
	for _, e := range s.Discards {
		overwrite("discards", e, held)
	}
	for _, e := range s.BackupWrites {
		overwrite("backs up to", e, func(int64) bool { return false })
		for off := e.Offset; off < e.End(); off += sector {
			if x := to.LogicalAt(e.Member, off); x >= 0 && x < r.End() {
				t.Fatalf("backup on member %d sector %d, where the new layout keeps array byte %d below the end %d", e.Member, off/sector, x, r.End())
			}
			if e.Member < from.Members() {
				t.Fatalf("backup on old member %d", e.Member)
			}
		}
	}
	if s.Kind == Finish {
		for _, e := range s.Discards {
			for off := e.Offset; off < e.End(); off += sector {
				if x := to.LogicalAt(e.Member, off); x >= 0 && x < r.End() {
					t.Fatalf("finish discards member %d sector %d, where array byte %d lives", e.Member, off/sector, x)
				}
			}
		}
		if s.After != (State{Cursor: r.End(), Done: true}) {
			t.Fatalf("finish leads to %+v", s.After)
		}
		return
	}

	// Coverage: live sectors read once and written at every new place,
	// dead sectors' new places discarded, nothing else. mark holds, per
	// member sector, the array sector written there, discarded, or none.
	const none, discarded = -1, -2
	mark := make([][]int64, to.Members())
	for i := range mark {
		mark[i] = make([]int64, to.MemberBytes(i)/sector)
		for j := range mark[i] {
			mark[i][j] = none
		}
	}
	read := make([]int, (s.To-s.From)/sector)
	for _, p := range s.Reads {
		for x := p.Logical; x < p.Logical+p.Length; x += sector {
			read[(x-s.From)/sector]++
		}
		if s.Kind != Restore {
			want, _ := from.Read(p.Logical, p.Length, nil)
			if len(want) != 1 || !reflect.DeepEqual(want[0], p) {
				t.Fatalf("read piece %+v, the old map says %+v", p, want)
			}
		}
	}
	for _, e := range s.Writes {
		for i := int64(0); i < e.Length; i += sector {
			mark[e.Member][(e.Offset+i)/sector] = e.Logical + i
		}
	}
	for _, e := range s.Discards {
		for off := e.Offset; off < e.End(); off += sector {
			mark[e.Member][off/sector] = discarded
		}
	}
	var ext []mapping.Extent
	for x := s.From; x < s.To; x += sector {
		isLive := x < size && live[x/sector]
		ext, _ = to.Write(x, sector, ext[:0])
		for _, e := range ext {
			m := &mark[e.Member][e.Offset/sector]
			if isLive && *m != x {
				t.Fatalf("live sector %d: new place member %d sector %d not written with it", x, e.Member, e.Offset/sector)
			}
			if !isLive && *m != discarded {
				t.Fatalf("dead sector %d: new place member %d sector %d not discarded", x, e.Member, e.Offset/sector)
			}
			*m = none
		}
		whole := s.Kind != Copy && x < size // a backup holds the window whole
		if want := map[bool]int{true: 1}[isLive || whole]; read[(x-s.From)/sector] != want {
			t.Fatalf("sector %d (live %v) read %d times", x, isLive, read[(x-s.From)/sector])
		}
	}
	for i := range mark {
		for j, m := range mark[i] {
			if m != none {
				t.Fatalf("step [%d, %d) writes or discards member %d sector %d (%d), outside its window's new places", s.From, s.To, i, j, m)
			}
		}
	}
	var rb, wb int64
	for _, p := range s.Reads {
		rb += p.Length
	}
	for _, e := range append(append([]mapping.Extent(nil), s.Writes...), s.BackupWrites...) {
		wb += e.Length
	}
	if rb != s.ReadBytes || wb != s.WriteBytes {
		t.Fatalf("step counts %d read, %d written; its extents %d and %d", s.ReadBytes, s.WriteBytes, rb, wb)
	}
}

// checkRestore checks that the restore of a backup step reads what the
// backup wrote and then does what the step would have.
func checkRestore(t *rapid.T, s, restore *Step) {
	if restore.Kind != Restore || restore.From != s.From || restore.To != s.To || restore.After != s.After {
		t.Fatalf("backup step %v [%d, %d) -> %+v restores as %v [%d, %d) -> %+v", s.Kind, s.From, s.To, s.After, restore.Kind, restore.From, restore.To, restore.After)
	}
	if !reflect.DeepEqual(s.Writes, restore.Writes) || !reflect.DeepEqual(s.Discards, restore.Discards) {
		t.Fatalf("restore writes %+v and discards %+v, its step %+v and %+v", restore.Writes, restore.Discards, s.Writes, s.Discards)
	}
	if len(restore.Reads) != len(s.BackupWrites) {
		t.Fatalf("restore reads %d pieces, the backup wrote %d", len(restore.Reads), len(s.BackupWrites))
	}
	for i, p := range restore.Reads {
		if p.N != 1 || p.Copies[0] != s.BackupWrites[i] {
			t.Fatalf("restore reads %+v, the backup wrote %+v", p.Copies[:p.N], s.BackupWrites[i])
		}
	}
}
