package discard

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"uraid/internal/clock"
	"uraid/internal/discardtest"
	"uraid/internal/testutil"
	"uraid/mapping"
	"uraid/simssd"
)

// The model test runs random interleavings of writes, reads, discards,
// flushes and drains from several goroutines against an engine over
// simulated SSDs, mirrored in pairs and striped like raid10, and checks the
// result against a reference model of every 512-byte unit. Each goroutine
// uses the engine exactly as the array does: BeginWrite/EndWrite around the
// member writes, BeginRead/EndRead around reading the copy the engine
// picks, Discard with a Completer, and a parked request waits for its
// Waiter and tries again. Time is virtual, so pacing (MinGap, MaxDefer)
// runs without waiting.

// modelChecks is how many cases the rapid tests run unless -rapid.checks
// or RAPID_CHECKS says otherwise.
const modelChecks = 10000

func TestMain(m *testing.M) { testutil.RapidMain(m, modelChecks) }

const unit = 512

// layout maps logical units to two copies on a mirrored pair of members,
// in chunks of chunk units striped over the pairs.
type layout struct {
	pairs, chunk int
}

func (l layout) copies(x int) (a, b int, off int64) {
	k := x / l.chunk
	p, row := k%l.pairs, k/l.pairs
	return 2 * p, 2*p + 1, int64(row*l.chunk+x%l.chunk) * unit
}

// ranges appends the member ranges of both copies of units [u, u+n),
// joining what is contiguous on a member.
func (l layout) ranges(u, n int, dst []mapping.Extent) []mapping.Extent {
	add := func(m int, off int64) {
		for i := len(dst) - 1; i >= 0; i-- {
			if dst[i].Member == m && dst[i].End() == off {
				dst[i].Length += unit
				return
			}
		}
		dst = append(dst, mapping.Extent{Member: m, Offset: off, Length: unit})
	}
	for x := u; x < u+n; x++ {
		a, b, off := l.copies(x)
		add(a, off)
		add(b, off)
	}
	return dst
}

type opKind int

const (
	opWrite opKind = iota
	opDiscard
	opRead
	opFlush
	opDrain
)

// opMix weighs the operations: mostly writes and discards, which is where
// the engine can go wrong.
var opMix = []opKind{opWrite, opWrite, opWrite, opDiscard, opDiscard, opDiscard, opRead, opRead, opFlush, opDrain}

type modelOp struct {
	kind opKind
	u, n int
	val  byte
}

// unitState is what the model knows of one unit: its value, and whether a
// discard since may have zeroed it.
type unitState struct {
	val       byte
	maybeZero bool
}

func (s unitState) allows(v byte) bool { return v == s.val || (s.maybeZero && v == 0) }

// yielder lets the scheduler run other goroutines before each TRIM, so that
// writes and reads meet TRIMs in flight.
type yielder struct {
	dev    *simssd.Device
	yields int
}

func (y yielder) trim(off, n int64) error {
	for range y.yields {
		runtime.Gosched()
	}
	return y.dev.Discard(off, n)
}

type modelRun struct {
	e      *Engine
	devs   []*simssd.Device
	lay    layout
	mode   Mode
	region int // units per goroutine

	mu        sync.Mutex
	requested [][]bool      // per member, per unit offset: ever asked to discard
	states    [][]unitState // per goroutine, its region at the end
	errs      []error

	// Every discard is watched (Discard.Watch): the engine's word that it
	// was trimmed is checked against the drives when it comes.
	begun   [][]atomic.Uint64 // per member, per unit offset: writes begun there
	keys    atomic.Uint64
	watched map[uint64]*watchedDiscard // guarded by mu
	told    map[uint64]bool            // guarded by mu
}

// watchedDiscard is a discard's extents, and the writes begun on each of
// their units when it was queued.
type watchedDiscard struct {
	extents []mapping.Extent
	begun   [][]uint64
}

func (r *modelRun) fail(format string, args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Errorf(format, args...))
	r.mu.Unlock()
}

// readUnit reads both copies of unit x, checking that each is uniform.
func (r *modelRun) readUnit(x int) (a, b byte, ok bool) {
	ma, mb, off := r.lay.copies(x)
	var vals [2]byte
	buf := make([]byte, unit)
	for i, m := range []int{ma, mb} {
		if _, err := r.devs[m].ReadAt(buf, off); err != nil {
			r.fail("read unit %d member %d: %v", x, m, err)
			return 0, 0, false
		}
		for _, c := range buf {
			if c != buf[0] {
				r.fail("unit %d on member %d is torn: %v", x, m, buf)
				return 0, 0, false
			}
		}
		vals[i] = buf[0]
	}
	return vals[0], vals[1], true
}

func (r *modelRun) run(g int, ops []modelOp) {
	base := g * r.region
	st := make([]unitState, r.region)
	resumed := make(waiter, 1)
	w := &Write{Ticket: Ticket{Waiter: resumed}}
	rd := &Read{Ticket: Ticket{Waiter: resumed}}
	done := make(completer, 1)
	d := &Discard{Done: done}
	for i, op := range ops {
		u := base + op.u
		switch op.kind {
		case opWrite:
			w.Extents = r.lay.ranges(u, op.n, w.Extents[:0])
			for _, x := range w.Extents {
				for o := x.Offset; o < x.End(); o += unit {
					r.begun[x.Member][o/unit].Add(1) // before the write can cut a discard
				}
			}
			for !r.e.BeginWrite(w) {
				<-resumed
			}
			buf := make([]byte, 0, op.n*unit)
			for j, rg := range w.Extents {
				buf = buf[:rg.Length]
				for k := range buf {
					buf[k] = op.val
				}
				_, err := r.devs[rg.Member].WriteAt(buf, rg.Offset)
				r.e.EndWriteTook(w, j, time.Duration(j+1)*time.Microsecond) // fed to a learning member
				if err != nil {
					r.fail("op %d: %v", i, err)
				}
			}
			for x := op.u; x < op.u+op.n; x++ {
				st[x] = unitState{val: op.val}
			}
		case opDiscard:
			d.Extents = r.lay.ranges(u, op.n, d.Extents[:0])
			r.mu.Lock()
			for _, rg := range d.Extents {
				for o := rg.Offset; o < rg.End(); o += unit {
					r.requested[rg.Member][o/unit] = true
				}
			}
			d.Watch = r.keys.Add(1)
			wd := &watchedDiscard{extents: append([]mapping.Extent(nil), d.Extents...)}
			for _, x := range d.Extents {
				var gens []uint64
				for o := x.Offset; o < x.End(); o += unit {
					gens = append(gens, r.begun[x.Member][o/unit].Load())
				}
				wd.begun = append(wd.begun, gens)
			}
			r.watched[d.Watch] = wd
			r.mu.Unlock()
			r.e.Discard(d)
			if err := <-done; err != nil {
				r.fail("op %d: discard: %v", i, err)
			}
			for x := op.u; x < op.u+op.n; x++ {
				if r.mode == Sync {
					st[x] = unitState{} // trimmed before the acknowledgement
				} else {
					st[x].maybeZero = st[x].val != 0
				}
			}
		case opRead, opFlush:
			// A flush does not wait for queued discards; what it must
			// find is every acknowledged write in place, which a read of
			// the whole region checks.
			from, n := op.u, op.n
			if op.kind == opFlush {
				from, n = 0, r.region
			}
			rd.Reset()
			for x := from; x < from+n; x++ {
				a, b, off := r.lay.copies(base + x)
				rd.Add(mapping.Extent{Member: a, Offset: off, Length: unit}, mapping.Extent{Member: b, Offset: off, Length: unit})
			}
			for !r.e.BeginRead(rd, uint32(i)) {
				<-resumed
			}
			ok := true
			for j := range rd.Pieces {
				x := from + j
				if ok {
					ok = r.checkRead(i, base+x, rd.Pick(j).Member, &st[x])
				}
				r.e.EndReadTook(rd, j, time.Duration(j+1)*time.Microsecond)
			}
			if !ok {
				return
			}
		case opDrain:
			r.e.Drain()
			for x := range st {
				if st[x].maybeZero {
					st[x] = unitState{}
				}
			}
		}
	}
	r.final(g, st)
}

// trimmed is the engine's OnTrimmed: each discard is told once, and when
// told trimmed, every unit of it that no write has begun on since it was
// queued reads zeros on its drive now.
func (r *modelRun) trimmed(key uint64, trimmed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.told[key]; ok {
		r.errs = append(r.errs, fmt.Errorf("discard %d told twice", key))
		return
	}
	r.told[key] = trimmed
	wd := r.watched[key]
	if wd == nil {
		r.errs = append(r.errs, fmt.Errorf("discard %d told, never queued", key))
		return
	}
	if !trimmed {
		return
	}
	buf := make([]byte, unit)
	for i, x := range wd.extents {
		for k, o := 0, x.Offset; o < x.End(); k, o = k+1, o+unit {
			// Read, then look for writes: a write counts itself before it
			// reaches the drive, so bytes it put there are never taken for
			// bytes the discard left.
			if _, err := r.devs[x.Member].ReadAt(buf, o); err != nil {
				r.errs = append(r.errs, err)
				return
			}
			if r.begun[x.Member][o/unit].Load() != wd.begun[i][k] {
				continue // a write came since: it may have taken the piece away
			}
			for _, c := range buf {
				if c != 0 {
					r.errs = append(r.errs, fmt.Errorf("discard %d told trimmed, member %d unit %d reads %d", key, x.Member, o/unit, c))
					return
				}
			}
		}
	}
}

// checkRead checks an admitted read of unit x: the copy the engine picked
// and the other copy agree (no discard may be pending over either), and the
// value is one the model allows; then the value is settled.
func (r *modelRun) checkRead(op, x, picked int, s *unitState) bool {
	a, b, ok := r.readUnit(x)
	if !ok {
		return false
	}
	ma, mb, _ := r.lay.copies(x)
	if picked != ma && picked != mb {
		r.fail("op %d: unit %d read from member %d, which holds no copy", op, x, picked)
		return false
	}
	if a != b {
		r.fail("op %d: unit %d reads %d and %d from its two copies", op, x, a, b)
		return false
	}
	if !s.allows(a) {
		r.fail("op %d: unit %d reads %d, model %+v", op, x, a, *s)
		return false
	}
	*s = unitState{val: a} // nothing is pending over it any more: the value is settled
	return true
}

// final checks the region once its goroutine is done: drained units are
// exact; the caller checks again after Close.
func (r *modelRun) final(g int, st []unitState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states[g] = st
}

func TestEngineModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pairs := rapid.IntRange(1, 2).Draw(t, "pairs")
		lay := layout{pairs: pairs, chunk: rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "chunk")}
		mode := rapid.SampledFrom([]Mode{Async, Async, Sync}).Draw(t, "mode")
		goroutines := rapid.IntRange(1, 3).Draw(t, "goroutines")
		region := rapid.IntRange(1, 12).Draw(t, "region")
		total := goroutines * region
		rows := (total + pairs*lay.chunk - 1) / (pairs * lay.chunk)
		memberUnits := rows * lay.chunk

		opGen := rapid.Custom(func(t *rapid.T) modelOp {
			u := rapid.IntRange(0, region-1).Draw(t, "u")
			return modelOp{
				kind: rapid.SampledFrom(opMix).Draw(t, "kind"),
				u:    u,
				n:    rapid.IntRange(1, min(4, region-u)).Draw(t, "n"),
				val:  byte(rapid.IntRange(1, 255).Draw(t, "val")),
			}
		})
		plans := make([][]modelOp, goroutines)
		for g := range plans {
			plans[g] = rapid.SliceOfN(opGen, 1, 10).Draw(t, fmt.Sprintf("ops%d", g))
		}
		crash := rapid.Bool().Draw(t, "crash")

		r := &modelRun{lay: lay, mode: mode, region: region, states: make([][]unitState, goroutines),
			watched: map[uint64]*watchedDiscard{}, told: map[uint64]bool{}}
		clk := clock.NewVirtual(time.Unix(0, 0))
		var members []Member
		for range 2 * pairs {
			dev, err := simssd.New(simssd.Config{Size: int64(memberUnits) * unit, Record: true,
				TrimLatency: time.Duration(rapid.IntRange(0, 2).Draw(t, "trimlat")) * time.Millisecond, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			r.devs = append(r.devs, dev)
			r.requested = append(r.requested, make([]bool, memberUnits))
			r.begun = append(r.begun, make([]atomic.Uint64, memberUnits))
			y := yielder{dev: dev, yields: rapid.IntRange(0, 3).Draw(t, "yields")}
			members = append(members, Member{
				Issuer:      discardtest.Blocking(y.trim, clk),
				InFlight:    rapid.IntRange(1, 3).Draw(t, "inflight"),
				MaxLen:      int64(rapid.IntRange(0, 3).Draw(t, "maxlen")) * unit,
				Granularity: unit,
				MaxQueued:   rapid.IntRange(1, 4).Draw(t, "maxqueued"),
				YieldToIO:   rapid.Bool().Draw(t, "yield"),
				MaxDefer:    time.Millisecond,
				MinGap:      time.Duration(rapid.IntRange(0, 1).Draw(t, "mingap")) * time.Millisecond,
				// Learning only paces: the rules must hold whatever it decides.
				Learn: rapid.Bool().Draw(t, "learn"),
			})
		}
		e, err := New(Config{Mode: mode, Members: members, Clock: clk, OnTrimmed: r.trimmed})
		if err != nil {
			t.Fatal(err)
		}
		r.e = e
		var wg sync.WaitGroup
		for g, ops := range plans {
			wg.Go(func() { r.run(g, ops) })
		}
		wg.Wait()
		if !crash {
			e.Drain()
			// Nothing failed and nothing was dropped: every discard was
			// trimmed, or cut by a write, and told so before Drain returned.
			r.mu.Lock()
			for key := range r.watched {
				if trimmed, ok := r.told[key]; !ok || !trimmed {
					r.errs = append(r.errs, fmt.Errorf("discard %d drained, told %v (trimmed %v)", key, ok, trimmed))
				}
			}
			r.mu.Unlock()
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		if len(r.told) != len(r.watched) {
			r.errs = append(r.errs, fmt.Errorf("%d discards, %d told", len(r.watched), len(r.told)))
		}
		r.mu.Unlock()
		for _, err := range r.errs {
			t.Error(err)
		}
		if len(r.errs) > 0 {
			t.FailNow()
		}

		// Every acknowledged write is on both copies; discarded units are
		// zeros after a drain, and zeros or old data after a crash, on
		// each copy independently.
		for g, st := range r.states {
			for x, s := range st {
				a, b, ok := r.readUnit(g*region + x)
				if !ok {
					t.Fatal(r.errs)
				}
				if !crash && s.maybeZero {
					s = unitState{}
				}
				if !s.allows(a) || !s.allows(b) {
					t.Fatalf("unit %d reads %d and %d at the end, model %+v (crash %v)", g*region+x, a, b, s, crash)
				}
			}
		}
		// No TRIM reached a byte no discard asked for.
		for m, dev := range r.devs {
			for _, tr := range dev.Trims() {
				if tr.Off%unit != 0 || tr.Len%unit != 0 || tr.Len == 0 {
					t.Fatalf("member %d: TRIM [%d, +%d) is not whole units", m, tr.Off, tr.Len)
				}
				if ml := members[m].MaxLen; ml > 0 && tr.Len > ml {
					t.Fatalf("member %d: TRIM of %d bytes, limit %d", m, tr.Len, ml)
				}
				for o := tr.Off; o < tr.Off+tr.Len; o += unit {
					if !r.requested[m][o/unit] {
						t.Fatalf("member %d: TRIM [%d, +%d) covers unit %d that no discard asked for", m, tr.Off, tr.Len, o/unit)
					}
				}
			}
			if c := dev.Counters(); c.MaxConcurrentTrims > int64(members[m].InFlight) {
				t.Fatalf("member %d: %d TRIMs at once, limit %d", m, c.MaxConcurrentTrims, members[m].InFlight)
			}
		}
	})
}
