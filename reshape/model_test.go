package reshape

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"uraid/mapping"
)

// TestModelCrashAtEveryStep runs whole reshapes on members held in memory,
// with random content, random dead ranges, and user writes and trims applied
// through Route while each step runs (those in its window parked until its
// state is persisted). Every step is cut once, at a random point: during its
// backup writes, during its home writes and discards, or after they are
// flushed but before its state is persisted; the cut applies any subset of
// the writes not yet flushed (torn, sector by sector), drops what was not
// persisted (the parked writes, never acknowledged, with it), may make a few
// dead sectors look live (as a torn region map block does), and the reshape
// resumes from the persisted state. After every step and every cut,
// each live array byte must read back, on every copy, as the model says;
// dead bytes may read anything. A Copy's window must still read back from its
// old places once its writes are done (Step.ReadsOld).
//
// The layout is drawn rather than run as a subtest each: a case costs a
// whole reshape, and the cases are shared out rather than tripled.
func TestModelCrashAtEveryStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		runModel(t, rapid.SampledFrom(layoutCases).Draw(t, "layout"))
	})
}

// disks are the members, a tag per sector: what a byte slice per member
// would hold, at the sector's grain, which is the grain of every I/O here.
type disks [][]uint64

// set writes tag(x) at the member sectors of e, x the array sector each holds.
func (d disks) set(e mapping.Extent, tag func(x int64) uint64) {
	for i := int64(0); i < e.Length; i += sector {
		d[e.Member][(e.Offset+i)/sector] = tag(e.Logical + i)
	}
}

// world is one model run: the members, the model of the array, the
// liveness the planner is told, and the randomness of content and cuts.
type world struct {
	t    *rapid.T
	r    *Reshape
	d    disks
	want []uint64 // per array sector: what a live sector must read
	live liveSet  // what the planner is told
	// unknown marks sectors the planner is told are live but whose content
	// nobody promised: dead ones a cut made look live, as a torn region map
	// block reads as dirty. They are not checked until written.
	unknown []bool
	rng     *rand.Rand
	ext     []mapping.Extent // scratch for place and check
}

// userOp is a user write or trim of an array range.
type userOp struct {
	off, length int64
	trim        bool
}

func runModel(t *rapid.T, lc layoutCase) {
	r := genReshape(t, lc)
	w := &world{t: t, r: r, rng: rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))}
	size := r.From().Size()
	w.live = genLive(t, size)
	w.want = make([]uint64, size/sector)
	w.unknown = make([]bool, size/sector)
	w.d = make(disks, r.To().Members())
	for i := range w.d {
		w.d[i] = make([]uint64, max(r.From().MemberBytes(i), r.To().MemberBytes(i))/sector)
		for j := range w.d[i] {
			w.d[i][j] = w.rng.Uint64()
		}
	}
	for x := int64(0); x < size; x += sector {
		if w.live[x/sector] {
			w.want[x/sector] = w.rng.Uint64()
			w.place(r.From(), x, func(int64) uint64 { return w.want[x/sector] })
		}
	}

	var st State // persisted
	var s Step
	cuts := map[State]int{}
	for steps := 0; !st.Done; steps++ {
		if steps > 4*int(r.End()/r.Unit())+8 {
			t.Fatalf("no end after %d steps", steps)
		}
		if err := r.Next(st, w.live.Live, &s); err != nil {
			t.Fatalf("Next(%+v): %v", st, err)
		}
		parked := w.userIO(s.Position())
		cut := cuts[st] == 0 || (cuts[st] < 3 && w.rng.IntN(4) == 0)
		phase := 0
		if cut {
			cuts[st]++
			phase = rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("cut%d", steps))
		}
		if persisted, ok := w.run(&s, cut, phase); !ok {
			st = persisted // Mid, or as it was
			w.resurrect(st)
			w.check(st, "after a cut")
			continue
		}
		st = s.After
		for _, op := range parked {
			w.apply(st.Position(), op)
		}
		w.check(st, "after a step")
	}
	w.check(st, "when done")
}

// run carries out step s as Step documents, cut (if cut) in phase 0 (backup
// writes), 1 (home writes and discards) or 2 (all flushed, After not yet
// persisted). It returns the state persisted when the cut came and false, or
// true if the step completed.
func (w *world) run(s *Step, cut bool, phase int) (State, bool) {
	persisted := State{Cursor: s.From}
	if s.Kind == Restore {
		persisted = State{Cursor: s.From, Backup: Backup{From: s.From, To: s.To, Row: w.r.BackupRow()}}
	}
	buf := make([]uint64, (s.To-s.From)/sector)
	for _, p := range s.Reads {
		e := p.Copies[w.rng.IntN(p.N)]
		for i := int64(0); i < p.Length; i += sector {
			buf[(p.Logical-s.From+i)/sector] = w.d[e.Member][(e.Offset+i)/sector]
		}
	}
	fromBuf := func(x int64) uint64 { return buf[(x-s.From)/sector] }
	garbage := func(int64) uint64 { return w.rng.Uint64() }
	if s.Kind == BackupCopy {
		if cut && phase == 0 {
			w.torn(s.BackupWrites, fromBuf)
			return persisted, false
		}
		for _, e := range s.BackupWrites {
			w.d.set(e, fromBuf)
		}
		persisted = s.Mid
	}
	if cut && phase <= 1 {
		w.torn(s.Writes, fromBuf)
		w.torn(s.Discards, garbage)
		return persisted, false
	}
	for _, e := range s.Writes {
		w.d.set(e, fromBuf)
	}
	for _, e := range s.Discards {
		w.d.set(e, garbage)
	}
	if s.ReadsOld() {
		w.checkWindowOld(s)
	}
	return persisted, !cut
}

// checkWindowOld checks, once a step's writes are all done, that its live
// bytes still read back from their old places, as ReadsOld promises.
func (w *world) checkWindowOld(s *Step) {
	for x := s.From; x < min(s.To, w.r.From().Size()); x += sector {
		if !w.live[x/sector] || w.unknown[x/sector] {
			continue
		}
		w.ext, _ = w.r.From().Write(x, sector, w.ext[:0])
		for j, e := range w.ext {
			if got := w.d[e.Member][e.Offset/sector]; got != w.want[x/sector] {
				w.t.Fatalf("%v step [%d, %d) reads old: array sector %d (copy %d, member %d sector %d) reads %x, want %x",
					s.Kind, s.From, s.To, x/sector, j, e.Member, e.Offset/sector, got, w.want[x/sector])
			}
		}
	}
}

// resurrect makes a few dead sectors look live after a cut, as the region
// map's pessimistic merge may, favouring the window a persisted backup holds:
// its Restore is then planned with other liveness than its BackupCopy was.
func (w *world) resurrect(st State) {
	lo, hi := int64(0), w.r.From().Size()
	if b := st.Backup; b.Length() != 0 && w.rng.IntN(4) != 0 {
		lo, hi = b.From, min(b.To, hi)
	}
	for range w.rng.IntN(8) {
		x := (lo + w.rng.Int64N(hi-lo)) / sector
		if !w.live[x] {
			w.live[x], w.unknown[x] = true, true
		}
	}
}

// torn applies any subset of the extents' sectors: none, all, or some of
// each.
func (w *world) torn(ext []mapping.Extent, tag func(x int64) uint64) {
	for _, e := range ext {
		mode := w.rng.IntN(3)
		for i := int64(0); i < e.Length; i += sector {
			if mode == 1 || (mode == 2 && w.rng.IntN(2) == 0) {
				w.d[e.Member][(e.Offset+i)/sector] = tag(e.Logical + i)
			}
		}
	}
}

// userIO applies a few random writes and trims at position p and returns
// the parts that fall in the window, parked.
func (w *world) userIO(p Position) []userOp {
	var parked []userOp
	size := w.r.From().Size()
	for range w.rng.IntN(4) {
		off := w.rng.Int64N(size/sector) * sector
		op := userOp{off: off, length: min(size-off, (1+w.rng.Int64N(3*w.r.Unit()/sector))*sector), trim: w.rng.IntN(3) == 0}
		for off, end := op.off, op.off+op.length; off < end; {
			z, n, err := w.r.Route(p, off, end-off)
			if err != nil {
				w.t.Fatalf("Route(%+v, %d, %d): %v", p, off, end-off, err)
			}
			part := userOp{off: off, length: n, trim: op.trim}
			if z == ZoneWait {
				parked = append(parked, part)
			} else {
				w.apply(p, part)
			}
			off += n
		}
	}
	return parked
}

// apply carries out a user write or trim at position p, which must not park
// it, and updates the model.
func (w *world) apply(p Position, op userOp) {
	for x := op.off; x < op.off+op.length; x += sector {
		z, _, err := w.r.Route(p, x, sector)
		if err != nil || z == ZoneWait {
			w.t.Fatalf("Route(%+v, %d) = %v, %v for a write let through", p, x, z, err)
		}
		tag := w.rng.Uint64()
		w.unknown[x/sector] = false
		if op.trim {
			w.live[x/sector] = false
			w.place(w.r.Map(z), x, func(int64) uint64 { return w.rng.Uint64() })
			continue
		}
		w.live[x/sector], w.want[x/sector] = true, tag
		w.place(w.r.Map(z), x, func(int64) uint64 { return tag })
	}
}

// place writes tag at every copy of array sector x by map m.
func (w *world) place(m *mapping.Map, x int64, tag func(int64) uint64) {
	var err error
	if w.ext, err = m.Write(x, sector, w.ext[:0]); err != nil {
		w.t.Fatalf("Write(%d): %v", x, err)
	}
	for _, e := range w.ext {
		w.d.set(e, tag)
	}
}

// check reads every live sector back through Route at rest in st, every
// copy, and compares it with the model. Sectors a persisted backup holds
// wait for its restore.
func (w *world) check(st State, when string) {
	p := st.Position()
	for x := int64(0); x < w.r.From().Size(); x += sector {
		if !w.live[x/sector] || w.unknown[x/sector] {
			continue
		}
		z, _, err := w.r.Route(p, x, sector)
		if err != nil {
			w.t.Fatalf("Route(%+v, %d): %v", p, x, err)
		}
		if z == ZoneWait {
			continue
		}
		w.ext, _ = w.r.Map(z).Write(x, sector, w.ext[:0])
		for j, e := range w.ext {
			if got := w.d[e.Member][e.Offset/sector]; got != w.want[x/sector] {
				w.t.Fatalf("%s, state %+v: array sector %d (%v copy %d, member %d sector %d) reads %x, want %x",
					when, st, x/sector, z, j, e.Member, e.Offset/sector, got, w.want[x/sector])
			}
		}
	}
}
