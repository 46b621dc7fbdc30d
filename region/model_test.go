package region

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The reference model. It knows nothing of how the map works: it follows
// what happens to the array — writes sent to members, discards completing on
// members, members leaving and coming back, metadata blocks landing on the
// members' disks whole, torn or not at all — and from that alone decides,
// per region, whether the copies may differ and whether the region may be
// called trimmed. The map under test runs beside it, and the blocks it asks
// to write are written to simulated member areas, which a crash at any step
// leaves as they are (with the blocks of a flush in flight written, torn or
// not) and Load then reads back.

// rmodel is what the model knows of one region.
type rmodel struct {
	issued int // writes sent to members and not ended
	begun  int // writes begun and not ended, sent or not
	// begins and issues count writes ever begun and sent, so that a
	// discard can tell whether one came while it was in progress.
	begins, issues uint64
	// differ: the copies may differ — a write was sent and a crash came
	// before it ended, a write failed on some copy, or a member missed it
	// while away. Only a resync or a whole trim on every copy ends it.
	differ bool
	// trimValid: a discard covering the region whole completed on every
	// copy, with no write in flight when it arrived and none sent until
	// it completed, and nothing was sent since. Only then may the region
	// be called trimmed.
	trimValid bool
	lastEnd   time.Duration // clock at the end of its last write
	advances  int           // Clean epochs begun since then
}

type mwrite struct {
	off, n      int64
	first, last int
	gen         uint64
	issued      bool
	degraded    bool // sent while a member was away: it missed the write
}

type mflight struct {
	gen     uint64
	data    []Block  // copies of what Flush returned
	orig    []Block  // the map's own buffers, which must stay unchanged
	targets []bool   // members the flush is written to
	written [][]bool // [member][block]
	rejoin  bool     // the full copy an absent member needs to come back
}

type ticket struct{ done bool }

type mdisc struct {
	t          Trim
	first, end int // whole regions, by the model's own count
	async      bool
	tk         *ticket
	kept       bool // async: Pending took it
	targets    []bool
	done       []bool
	degrades   int    // world.degrades at arrival
	cleanAt    []bool // per whole region: no write sent and unfinished at arrival
	idleAt     []bool // per whole region: no write begun and unfinished at arrival
	issues     []uint64
	begins     []uint64
}

type world struct {
	t         *rapid.T
	g         Geometry
	m         *Map
	disks     [][]byte // each member's map area
	away      int      // the member that is failed or missing, or -1
	degrades  int      // times a member left
	now, idle time.Duration
	regs      []rmodel
	watch     []int // regions checked after every step
	small     bool  // few regions: decode the whole disk after every step

	writes  []*mwrite
	discs   []*mdisc
	pending *Pending[*ticket]
	pendCap int
	fl      *mflight

	// A replica of the epoch clock of Clean, to know when a region must
	// have been cleaned: Clean promises it within three epochs.
	advStart   time.Duration
	advStarted bool

	steps   int
	scratch []uint64 // for decoding blocks
	// version counts changes to the disks and to what the model requires
	// of them; the disk check after a step runs only when it moved.
	version, checked int
	prev             []State // watched states before the step
	prevAway         int
	crashed          bool
	initialSet       State
}

func TestModelMap(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t)
		steps := rapid.IntRange(20, 200).Draw(t, "steps")
		for range steps {
			w.step()
		}
		w.stop()
	})
}

// actions, repeated by weight.
var actions = func() []string {
	weights := []struct {
		name string
		n    int
	}{
		{"begin", 6}, {"issue", 5}, {"end", 5},
		{"discard", 3}, {"discardDone", 4}, {"poll", 1},
		{"flush", 4}, {"writeBlock", 3}, {"flushed", 4}, {"flushFailed", 1},
		{"clean", 4}, {"fail", 2}, {"return", 2}, {"resync", 2},
		{"crash", 2}, {"cursor", 1},
	}
	var out []string
	for _, w := range weights {
		for range w.n {
			out = append(out, w.name)
		}
	}
	return out
}()

func newWorld(t *rapid.T) *world {
	w := &world{t: t, away: -1, prevAway: -1}
	size := int64(1) << rapid.IntRange(12, 14).Draw(t, "regionShift")
	var n int
	if rapid.IntRange(0, 9).Draw(t, "big") == 0 {
		n = rapid.SampledFrom([]int{RegionsPerBlock, RegionsPerBlock + 1, 2*RegionsPerBlock + 3}).Draw(t, "regions")
	} else {
		n = rapid.IntRange(1, 10).Draw(t, "regions")
	}
	tail := rapid.Int64Range(1, size/512).Draw(t, "tailSectors") * 512
	w.g = Geometry{ArrayUUID: testUUID, ArraySize: int64(n-1)*size + tail, RegionSize: size}
	w.small = n <= 64
	if w.small {
		for r := range n {
			w.watch = append(w.watch, r)
		}
	} else {
		for r := range n {
			if d := r % RegionsPerBlock; r < 3 || r >= n-3 || d < 2 || d >= RegionsPerBlock-2 {
				w.watch = append(w.watch, r)
			}
		}
	}
	members := rapid.IntRange(2, 3).Draw(t, "members")
	for range members {
		w.disks = append(w.disks, make([]byte, w.g.AreaBytes()))
	}
	w.idle = time.Duration(rapid.IntRange(0, 3).Draw(t, "idle")) * 10
	w.regs = make([]rmodel, n)
	w.initialSet = State(rapid.IntRange(0, 2).Draw(t, "initial"))
	m, err := New(w.g, w.initialSet)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	w.m = m
	for r := range w.regs {
		w.regs[r].differ = w.initialSet == Dirty
		w.regs[r].trimValid = w.initialSet == Trimmed
	}
	w.pendCap = rapid.IntRange(1, 4).Draw(t, "pendingCap")
	w.pending = NewPending[*ticket](w.pendCap)
	w.startFlush(FlushAll, false)
	return w
}

func (w *world) step() {
	t := w.t
	w.prev = w.prev[:0]
	for _, r := range w.watch {
		w.prev = append(w.prev, w.m.State(r))
	}
	w.prevAway = w.away
	w.crashed = false
	switch a := rapid.SampledFrom(actions).Draw(t, "action"); a {
	case "begin":
		w.begin()
	case "issue":
		var ready []*mwrite
		for _, wr := range w.writes {
			if !wr.issued && wr.gen <= w.m.Durable() {
				ready = append(ready, wr)
			}
		}
		if len(ready) > 0 {
			w.issue(rapid.SampledFrom(ready).Draw(t, "write"))
		}
	case "end":
		w.end()
	case "discard":
		w.discard()
	case "discardDone":
		w.discardDone()
	case "poll":
		w.poll()
	case "flush":
		if w.fl != nil {
			if _, _, err := w.m.Flush(FlushChanged, nil); !errors.Is(err, ErrProtocol) {
				t.Fatalf("second Flush while one is in flight: %v, want ErrProtocol", err)
			}
			break
		}
		w.startFlush(rapid.SampledFrom([]FlushMode{FlushUrgent, FlushChanged, FlushAll}).Draw(t, "mode"), false)
	case "writeBlock":
		if w.fl != nil {
			var todo [][2]int
			for j, tg := range w.fl.targets {
				for i := range w.fl.data {
					if tg && !w.fl.written[j][i] {
						todo = append(todo, [2]int{j, i})
					}
				}
			}
			if len(todo) > 0 {
				p := rapid.SampledFrom(todo).Draw(t, "block")
				w.writeBlock(p[0], p[1])
			}
		}
	case "flushed":
		w.completeFlush()
	case "flushFailed":
		w.failFlush()
	case "clean":
		w.clean()
	case "fail":
		w.fail()
	case "return":
		if w.away >= 0 && w.fl == nil {
			w.startFlush(FlushAll, true)
		}
	case "resync":
		w.resync()
	case "crash":
		w.crash()
	case "cursor":
		w.setCursor()
	default:
		t.Fatalf("unknown action %q", a)
	}
	w.check()
}

// ---- writes ----

func (w *world) begin() {
	t := w.t
	size := w.g.RegionSize
	r := rapid.SampledFrom(w.watch).Draw(t, "region")
	off := int64(r)*size + rapid.Int64Range(0, size/512-1).Draw(t, "offSector")*512
	if off >= w.g.ArraySize {
		off = w.g.ArraySize - 512
	}
	n := rapid.Int64Range(1, min((w.g.ArraySize-off)/512, 2*size/512)).Draw(t, "lenSectors") * 512
	gen, err := w.m.BeginWrite(off, n)
	if err != nil {
		t.Fatalf("BeginWrite(%d, %d): %v", off, n, err)
	}
	// One flush covers every write that arrives while another is in
	// flight: a write waits for the flush in flight or the next one.
	switch {
	case gen == 0:
	case gen == w.m.Gen()+1:
	case gen == w.m.Gen() && w.m.Flushing():
	default:
		t.Fatalf("BeginWrite waits for generation %d; last started %d, flushing %v", gen, w.m.Gen(), w.m.Flushing())
	}
	wr := &mwrite{off: off, n: n, first: int(off / size), last: int((off + n - 1) / size), gen: gen}
	for r := wr.first; r <= wr.last; r++ {
		w.regs[r].begun++
		w.regs[r].begins++
	}
	w.writes = append(w.writes, wr)
	if gen == 0 && rapid.Bool().Draw(t, "issueNow") {
		w.issue(wr)
	}
}

// issue sends wr to the members that are present.
func (w *world) issue(wr *mwrite) {
	w.checkDirtyOnDisk(wr, "issue")
	for r := wr.first; r <= wr.last; r++ {
		g := &w.regs[r]
		g.issued++
		g.issues++
		g.trimValid = false
		if w.away >= 0 {
			g.differ = true
		}
	}
	wr.issued = true
	wr.degraded = w.away >= 0
	w.version++
}

func (w *world) end() {
	t := w.t
	var sent []*mwrite
	for _, wr := range w.writes {
		if wr.issued {
			sent = append(sent, wr)
		}
	}
	if len(sent) == 0 {
		return
	}
	wr := rapid.SampledFrom(sent).Draw(t, "write")
	// A write that some copy missed, by failing or by being away, ends
	// not ok: that is the caller's duty, the map cannot know.
	ok := rapid.IntRange(0, 4).Draw(t, "fails") != 0 && !wr.degraded
	if err := w.m.EndWrite(wr.off, wr.n, ok); err != nil {
		t.Fatalf("EndWrite: %v", err)
	}
	for r := wr.first; r <= wr.last; r++ {
		g := &w.regs[r]
		g.issued--
		g.begun--
		if !ok || w.away >= 0 {
			g.differ = true
		}
		if g.begun == 0 {
			g.lastEnd, g.advances = w.now, 0
		}
	}
	w.writes = slices.DeleteFunc(w.writes, func(x *mwrite) bool { return x == wr })
	w.version++
	// A second EndWrite must fail and change nothing, if some region of
	// the write has no other write begun (otherwise it cannot tell).
	for r := wr.first; r <= wr.last; r++ {
		if w.regs[r].begun == 0 {
			if err := w.m.EndWrite(wr.off, wr.n, true); !errors.Is(err, ErrProtocol) {
				t.Fatalf("EndWrite twice for one write: %v, want ErrProtocol", err)
			}
			break
		}
	}
}

// ---- discards ----

func (w *world) discard() {
	t := w.t
	size, total := w.g.RegionSize, w.g.ArraySize
	var off, n int64
	switch rapid.IntRange(0, 2).Draw(t, "discardKind") {
	case 0: // whole regions
		r := rapid.SampledFrom(w.watch).Draw(t, "region")
		off = int64(r) * size
		n = min(int64(rapid.IntRange(1, 3).Draw(t, "regionsLong"))*size, total-off)
	case 1: // anywhere
		off = rapid.Int64Range(0, total/512-1).Draw(t, "offSector") * 512
		n = rapid.Int64Range(1, min((total-off)/512, 3*size/512)).Draw(t, "lenSectors") * 512
	default: // to the end of the array
		off = rapid.Int64Range(0, total/512-1).Draw(t, "offSector") * 512
		n = total - off
	}
	tr, err := w.m.StartTrim(off, n)
	if err != nil {
		t.Fatalf("StartTrim(%d, %d): %v", off, n, err)
	}
	// The whole regions, counted the slow way.
	first, end := -1, -1
	for r := int(off / size); r <= int((off+n-1)/size); r++ {
		lo, hi := int64(r)*size, min(int64(r+1)*size, total)
		if off <= lo && hi <= off+n {
			if first < 0 {
				first = r
			}
			end = r + 1
		}
	}
	f, e := tr.Regions()
	switch {
	case w.away >= 0 && tr != (Trim{}):
		t.Fatalf("StartTrim while degraded returned %+v, want the zero Trim", tr)
	case w.away < 0 && first < 0 && f != e:
		t.Fatalf("StartTrim(%d, %d) covers regions [%d, %d), but none is whole", off, n, f, e)
	case w.away < 0 && first >= 0 && (f != first || e != end):
		t.Fatalf("StartTrim(%d, %d) covers regions [%d, %d), want [%d, %d)", off, n, f, e, first, end)
	}
	if f == e {
		return
	}
	d := &mdisc{t: tr, first: first, end: end, degrades: w.degrades, async: rapid.Bool().Draw(t, "async")}
	for j := range w.disks {
		d.targets = append(d.targets, j != w.away)
		d.done = append(d.done, false)
	}
	for r := first; r < end; r++ {
		g := &w.regs[r]
		d.cleanAt = append(d.cleanAt, g.issued == 0)
		d.idleAt = append(d.idleAt, g.begun == 0)
		d.issues = append(d.issues, g.issues)
		d.begins = append(d.begins, g.begins)
	}
	if d.async {
		d.tk = &ticket{}
		d.kept = w.pending.Add(tr, d.tk)
		if !d.kept && w.pending.Len() < w.pendCap {
			t.Fatalf("Pending refused a discard with %d of %d places taken", w.pending.Len(), w.pendCap)
		}
	}
	w.discs = append(w.discs, d)
}

// discardDone completes a discard on one more member, and once on all of
// them, completes it.
func (w *world) discardDone() {
	t := w.t
	var open []*mdisc
	for _, d := range w.discs {
		if d.tk == nil || !d.tk.done {
			open = append(open, d)
		}
	}
	if len(open) == 0 {
		return
	}
	d := rapid.SampledFrom(open).Draw(t, "discard")
	var left []int
	for j, tg := range d.targets {
		if tg && !d.done[j] {
			left = append(left, j)
		}
	}
	if len(left) > 0 {
		d.done[rapid.SampledFrom(left).Draw(t, "member")] = true
	}
	for j, tg := range d.targets {
		if tg && !d.done[j] && j != w.away {
			return
		}
	}
	// Done on every copy there is (a member that left dropped its part).
	full := w.degrades == d.degrades && w.away < 0
	for i := range d.end - d.first {
		g := &w.regs[d.first+i]
		if full && d.cleanAt[i] && g.issues == d.issues[i] {
			g.trimValid, g.differ = true, false
		}
	}
	if d.async {
		d.tk.done = true // the map learns at the next Poll
		if !d.kept {
			w.forget(d)
		}
		return
	}
	w.m.EndTrim(d.t)
	w.checkTrimmed(d)
	w.forget(d)
}

func (w *world) forget(d *mdisc) {
	w.discs = slices.DeleteFunc(w.discs, func(x *mdisc) bool { return x == d })
}

func (w *world) poll() {
	var due []*mdisc
	for _, d := range w.discs {
		if d.tk != nil && d.tk.done {
			due = append(due, d)
		}
	}
	w.pending.Poll(w.m, func(tk *ticket) bool { return tk.done })
	for _, d := range due {
		w.checkTrimmed(d)
		w.forget(d)
	}
	kept := 0
	for _, d := range w.discs {
		if d.tk != nil && d.kept {
			kept++
		}
	}
	if w.pending.Len() != kept {
		w.t.Fatalf("Pending keeps %d discards after Poll, want %d", w.pending.Len(), kept)
	}
}

// checkTrimmed is the liveness half: a discard that completed with nothing
// written in between must have trimmed its whole regions.
func (w *world) checkTrimmed(d *mdisc) {
	if w.degrades != d.degrades || w.away >= 0 {
		return
	}
	for i := range d.end - d.first {
		r := d.first + i
		if d.idleAt[i] && w.regs[r].begins == d.begins[i] && w.m.State(r) != Trimmed {
			w.t.Fatalf("region %d: discard %+v completed with no write since it arrived, but the region is %s", r, d.t, w.m.State(r))
		}
	}
}

// ---- flushes ----

func (w *world) startFlush(mode FlushMode, rejoin bool) {
	t := w.t
	gen, blocks, err := w.m.Flush(mode, nil)
	if err != nil {
		t.Fatalf("Flush(%d): %v", mode, err)
	}
	if gen == 0 {
		if mode == FlushAll || mode == FlushUrgent && w.m.Urgent() || mode == FlushChanged && w.m.Changed() {
			t.Fatalf("Flush(%d) wrote nothing, urgent %v changed %v", mode, w.m.Urgent(), w.m.Changed())
		}
		return
	}
	if len(blocks) == 0 || mode == FlushAll && len(blocks) != w.m.Blocks() {
		t.Fatalf("Flush(%d) gave %d blocks of %d", mode, len(blocks), w.m.Blocks())
	}
	fl := &mflight{gen: gen, orig: blocks, rejoin: rejoin}
	for _, b := range blocks {
		fl.data = append(fl.data, Block{Offset: b.Offset, Data: bytes.Clone(b.Data)})
	}
	for j := range w.disks {
		fl.targets = append(fl.targets, rejoin || j != w.away)
		fl.written = append(fl.written, make([]bool, len(blocks)))
	}
	w.fl = fl
}

func (w *world) writeBlock(j, i int) {
	b := w.fl.data[i]
	copy(w.disks[j][b.Offset:b.Offset+BlockSize], b.Data)
	w.fl.written[j][i] = true
	w.version++
}

func (w *world) completeFlush() {
	t := w.t
	fl := w.fl
	if fl == nil {
		if err := w.m.Flushed(w.m.Gen()); !errors.Is(err, ErrProtocol) {
			t.Fatalf("Flushed with no flush in flight: %v, want ErrProtocol", err)
		}
		return
	}
	for j, tg := range fl.targets {
		for i := range fl.data {
			if tg && !fl.written[j][i] {
				w.writeBlock(j, i)
			}
		}
	}
	for i := range fl.data {
		if !bytes.Equal(fl.data[i].Data, fl.orig[i].Data) {
			t.Fatalf("block at %d changed while its flush was in flight", fl.data[i].Offset)
		}
	}
	if err := w.m.Flushed(fl.gen + 1); !errors.Is(err, ErrProtocol) {
		t.Fatalf("Flushed for the wrong generation: %v, want ErrProtocol", err)
	}
	if err := w.m.Flushed(fl.gen); err != nil {
		t.Fatalf("Flushed(%d): %v", fl.gen, err)
	}
	w.fl = nil
	if fl.rejoin {
		w.m.SetDegraded(false)
		w.away = -1
		w.version++
	}
}

func (w *world) failFlush() {
	if w.fl == nil {
		return
	}
	w.tearFlight()
	if err := w.m.FlushFailed(w.fl.gen); err != nil {
		w.t.Fatalf("FlushFailed: %v", err)
	}
	w.fl = nil
}

// tearFlight leaves each block of the flight that is not yet on a member
// unwritten, written, torn (some sectors new, the rest old), or damaged.
func (w *world) tearFlight() {
	for j, tg := range w.fl.targets {
		for i := range w.fl.data {
			if tg && !w.fl.written[j][i] {
				w.tear(j, i)
			}
		}
	}
}

func (w *world) tear(j, i int) {
	t := w.t
	w.version++
	b := w.fl.data[i]
	disk := w.disks[j][b.Offset : b.Offset+BlockSize]
	switch rapid.IntRange(0, 3).Draw(t, "tear") {
	case 0: // never reached the member
	case 1:
		copy(disk, b.Data)
	case 2: // torn: sector by sector, some new and some old
		for s := 0; s < BlockSize; s += 512 {
			if rapid.Bool().Draw(t, "newSector") {
				copy(disk[s:s+512], b.Data[s:s+512])
			}
		}
	default: // damaged
		disk[rapid.IntRange(0, BlockSize-1).Draw(t, "byte")] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
	}
	w.fl.written[j][i] = true
}

// ---- clean, members, resync, cursor ----

func (w *world) clean() {
	t := w.t
	// Mostly short steps, so that many calls fall within an epoch.
	w.now += time.Duration(rapid.SampledFrom([]int{0, 1, 2, 3, 5, 8, 13, 21, 34}).Draw(t, "elapsed"))
	idle := w.idle
	if rapid.IntRange(0, 4).Draw(t, "cleanNow") == 0 {
		idle = 0 // as a stop does
	}
	switch {
	case !w.advStarted:
		w.advStart, w.advStarted = w.now, true
	case idle > 0 && w.now-w.advStart >= idle:
		w.advStart = w.now
		for r := range w.regs {
			w.regs[r].advances++
		}
	}
	before := make([]State, len(w.watch))
	resync := make([]bool, len(w.watch))
	for i, r := range w.watch {
		before[i], resync[i] = w.m.State(r), w.m.NeedsResync(r)
	}
	n := w.m.Clean(w.now, idle)
	cleaned := 0
	for i, r := range w.watch {
		g := &w.regs[r]
		after := w.m.State(r)
		if before[i] == Dirty && after == InSync {
			cleaned++
			switch {
			case g.begun > 0:
				t.Fatalf("Clean cleaned region %d with %d writes in flight", r, g.begun)
			case resync[i]:
				t.Fatalf("Clean cleaned region %d, which needs resync", r)
			case w.away >= 0:
				t.Fatalf("Clean cleaned region %d while degraded", r)
			case idle > 0 && w.now-g.lastEnd < idle:
				t.Fatalf("Clean cleaned region %d idle for %v, less than %v", r, w.now-g.lastEnd, idle)
			}
		} else if before[i] != after {
			t.Fatalf("Clean changed region %d from %s to %s", r, before[i], after)
		}
		if w.away < 0 && after == Dirty && g.begun == 0 && !resync[i] && (idle <= 0 || g.advances >= 3) {
			t.Fatalf("region %d idle for %d epochs (idle %v) is still dirty", r, g.advances, idle)
		}
	}
	if w.small && n != cleaned {
		t.Fatalf("Clean reported %d regions, cleaned %d", n, cleaned)
	}
}

func (w *world) fail() {
	t := w.t
	if w.away >= 0 {
		return
	}
	j := rapid.IntRange(0, len(w.disks)-1).Draw(t, "member")
	w.away = j
	w.degrades++
	w.version++
	w.m.SetDegraded(true)
	if w.fl != nil && w.fl.targets[j] {
		for i := range w.fl.data {
			if !w.fl.written[j][i] {
				w.tear(j, i)
			}
		}
		w.fl.targets[j] = false
	}
}

func (w *world) resync() {
	t := w.t
	r := rapid.SampledFrom(w.watch).Draw(t, "region")
	if w.away >= 0 {
		before := w.m.State(r)
		if w.m.Resynced(r) || w.m.State(r) != before {
			t.Fatalf("Resynced(%d) acted while degraded", r)
		}
		return
	}
	next := w.m.ResyncFrom(r)
	if (next < 0) != (w.m.Resyncs() == 0) || next >= 0 && !w.m.NeedsResync(next) {
		t.Fatalf("ResyncFrom(%d) = %d with %d regions needing resync", r, next, w.m.Resyncs())
	}
	if next < 0 || w.regs[next].issued > 0 {
		return // the caller holds writes off a region it resyncs
	}
	if !w.m.Resynced(next) {
		t.Fatalf("Resynced(%d) refused a region that needs resync", next)
	}
	w.regs[next].differ = false
	w.version++
	if w.m.NeedsResync(next) {
		t.Fatalf("region %d still needs resync after Resynced", next)
	}
}

func (w *world) setCursor() {
	t := w.t
	c := Cursor{Action: Action(rapid.IntRange(0, 4).Draw(t, "action"))}
	if c.Action != ActionNone {
		c.Position = rapid.IntRange(0, w.m.Regions()).Draw(t, "position")
		c.Started = w.m.Gen()
	}
	if c.Action.Fills() {
		c.Member = uint32(rapid.IntRange(0, len(w.disks)-1).Draw(t, "member"))
	}
	if err := w.m.SetCursor(c); err != nil {
		t.Fatalf("SetCursor(%+v): %v", c, err)
	}
	if w.m.Cursor() != c {
		t.Fatalf("Cursor() = %+v after SetCursor(%+v)", w.m.Cursor(), c)
	}
}

// ---- crash ----

// crash stops everything at once: the flush in flight lands partly, writes
// and discards in flight vanish, and the map is loaded back from the disks.
func (w *world) crash() {
	t := w.t
	w.crashed = true
	if w.fl != nil {
		w.tearFlight()
		w.fl = nil
	}
	for r := range w.regs {
		g := &w.regs[r]
		if g.issued > 0 {
			g.differ = true // sent to the members, not known to have landed everywhere
		}
		g.issued, g.begun, g.advances = 0, 0, 0
	}
	w.writes, w.discs = nil, nil
	w.pending = NewPending[*ticket](w.pendCap)
	w.advStarted = false

	var present, all [][]byte
	for j, d := range w.disks {
		all = append(all, d)
		if j != w.away {
			present = append(present, d)
		}
	}
	// The caller passes every member it has, stale ones too; either way the
	// result must be safe.
	m, fresh := w.load(present)
	if w.away >= 0 {
		if m2, fresh2 := w.load(all); rapid.Bool().Draw(t, "loadStale") {
			m, fresh = m2, fresh2
		}
	}
	w.m = m
	if w.away >= 0 {
		w.m.SetDegraded(true)
	}
	if fresh {
		w.startFlush(FlushAll, false)
	}
}

// load reads the map back from areas and checks what it says against the
// model in every region; with no map on disk it starts a new one, every
// region dirty, and says so.
func (w *world) load(areas [][]byte) (*Map, bool) {
	t := w.t
	m, rep, err := Load(testUUID, w.g.ArraySize, areas)
	if errors.Is(err, ErrNotMap) {
		m, err = New(w.g, Dirty)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		w.checkLoaded(m, "new after no map")
		return m, true
	}
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if m.Geometry() != w.g {
		t.Fatalf("Load found geometry %+v, want %+v", m.Geometry(), w.g)
	}
	if rep.Resync != m.Resyncs() || rep.Trimmed != m.Count(Trimmed) {
		t.Fatalf("report %+v, map has %d to resync, %d trimmed", rep, m.Resyncs(), m.Count(Trimmed))
	}
	if err := m.Verify(); err != nil {
		t.Fatalf("loaded map: %v", err)
	}
	w.checkLoaded(m, "load")
	return m, false
}

// checkLoaded checks the three crash properties in every region.
func (w *world) checkLoaded(m *Map, what string) {
	t := w.t
	for r := range w.regs {
		g := &w.regs[r]
		s := m.State(r)
		switch {
		case (g.differ || g.issued > 0) && (s != Dirty || !m.NeedsResync(r)):
			t.Fatalf("%s: region %d may differ between copies but is %s, resync %v", what, r, s, m.NeedsResync(r))
		case s == Trimmed && !g.trimValid:
			t.Fatalf("%s: region %d is trimmed, but no whole discard completed on every copy since it was last written", what, r)
		case s == Dirty && !m.NeedsResync(r):
			t.Fatalf("%s: region %d loaded dirty but needs no resync", what, r)
		}
	}
}

// ---- checks after every step ----

func (w *world) check() {
	t := w.t
	// Verify walks every region: after every step on small maps, now and
	// then on large ones.
	w.steps++
	if w.small || w.crashed || w.steps%16 == 0 {
		if err := w.m.Verify(); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	for _, wr := range w.writes {
		if wr.issued {
			w.checkDirtyOnDisk(wr, "in flight")
		}
	}
	if !w.m.Flushing() {
		for _, wr := range w.writes {
			if !wr.issued && wr.gen > w.m.Durable() && !w.m.Urgent() {
				t.Fatalf("a write waits for generation %d, durable %d, and no flush is urgent", wr.gen, w.m.Durable())
			}
		}
	}
	for i, r := range w.watch {
		g := &w.regs[r]
		s := w.m.State(r)
		if g.begun > 0 && s != Dirty {
			t.Fatalf("region %d has %d writes in flight but is %s", r, g.begun, s)
		}
		// A write sent while a member was away marks its regions at its
		// end (not ok); until then it keeps them dirty.
		if g.differ && !w.m.NeedsResync(r) && g.begun == 0 {
			t.Fatalf("region %d may differ between copies but needs no resync", r)
		}
		if s == Trimmed && !g.trimValid {
			t.Fatalf("region %d is trimmed in memory, but no whole discard completed since it was last written", r)
		}
		if !w.crashed && w.prevAway >= 0 && w.away >= 0 && w.prev[i] == Dirty && s != Dirty {
			t.Fatalf("region %d went from dirty to %s while degraded", r, s)
		}
	}
	if w.small && (w.version != w.checked || w.crashed) {
		w.checked = w.version
		// What a crash now would find, with and without the stale member.
		var present [][]byte
		for j, d := range w.disks {
			if j != w.away {
				present = append(present, d)
			}
		}
		if m, _, err := Load(testUUID, w.g.ArraySize, present); err == nil {
			w.checkLoaded(m, "disk")
		}
		if w.away >= 0 {
			if m, _, err := Load(testUUID, w.g.ArraySize, w.disks); err == nil {
				w.checkLoaded(m, "disk with the stale member")
			}
		}
	}
}

// checkDirtyOnDisk checks that every region of wr is dirty on the disk of
// every member the write goes to, and in the flush in flight to it.
func (w *world) checkDirtyOnDisk(wr *mwrite, when string) {
	t := w.t
	for r := wr.first; r <= wr.last; r++ {
		b := r / RegionsPerBlock
		for j, d := range w.disks {
			if j == w.away {
				continue
			}
			if s := w.blockState(d[(1+b)*BlockSize:(2+b)*BlockSize], r); s != Dirty {
				t.Fatalf("%s: write to region %d, which member %d's disk says is %s", when, r, j, s)
			}
			if w.fl == nil || !w.fl.targets[j] {
				continue
			}
			for _, fb := range w.fl.data {
				if fb.Offset == int64(1+b)*BlockSize {
					if s := w.blockState(fb.Data, r); s != Dirty {
						t.Fatalf("%s: write to region %d, which the flush in flight makes %s", when, r, s)
					}
				}
			}
		}
	}
}

// blockState decodes region r from its map block, dirty when the block is
// unusable.
func (w *world) blockState(block []byte, r int) State {
	if w.scratch == nil {
		w.scratch = make([]uint64, wordsPerBlock)
	}
	if _, err := decodeMapBlock(block, w.g, r/RegionsPerBlock, w.scratch); err != nil {
		return Dirty
	}
	return State(normal(w.scratch[(r%RegionsPerBlock)>>5]) >> (uint(r%32) * 2) & 3)
}

// ---- stop ----

// stop finishes everything as a clean stop does and checks that the disk
// then says exactly what memory does.
func (w *world) stop() {
	t := w.t
	if w.fl != nil {
		w.completeFlush()
	}
	for range 4 {
		if !w.m.Urgent() {
			break
		}
		w.startFlush(FlushUrgent, false)
		w.completeFlush()
	}
	for _, wr := range slices.Clone(w.writes) {
		if !wr.issued {
			if wr.gen > w.m.Durable() {
				t.Fatalf("write still waits for generation %d after every flush (durable %d)", wr.gen, w.m.Durable())
			}
			w.issue(wr)
		}
		if err := w.m.EndWrite(wr.off, wr.n, !wr.degraded); err != nil {
			t.Fatalf("EndWrite: %v", err)
		}
	}
	w.writes = nil
	for _, d := range slices.Clone(w.discs) {
		if !d.async {
			w.m.EndTrim(d.t)
		}
	}
	w.pending.Poll(w.m, func(*ticket) bool { return true })
	w.m.Clean(w.now, 0)
	if w.away < 0 && w.m.Count(Dirty) != w.m.Resyncs() {
		t.Fatalf("after a clean stop %d regions are dirty, %d need resync", w.m.Count(Dirty), w.m.Resyncs())
	}
	w.startFlush(FlushChanged, false)
	if w.fl != nil {
		w.completeFlush()
	}
	if w.m.Changed() {
		t.Fatalf("map still changed after its last flush")
	}
	var present [][]byte
	for j, d := range w.disks {
		if j != w.away {
			present = append(present, d)
		}
	}
	m, rep, err := Load(testUUID, w.g.ArraySize, present)
	if err != nil {
		t.Fatalf("Load after stop: %v", err)
	}
	if rep.BadBlocks != 0 || rep.Disagree != 0 {
		t.Fatalf("after a clean stop: %+v", rep)
	}
	for r := range w.regs {
		if m.State(r) != w.m.State(r) {
			t.Fatalf("after a clean stop region %d is %s on disk, %s in memory", r, m.State(r), w.m.State(r))
		}
	}
	if rep.Header >= 0 && m.Cursor() != w.m.Cursor() {
		t.Fatalf("after a clean stop the cursor is %+v on disk, %+v in memory", m.Cursor(), w.m.Cursor())
	}
}
