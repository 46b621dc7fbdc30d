package region

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyCursorRoundTrip: a cursor set and flushed decodes, and
// loads, as it was set; one no map can hold is refused and changes nothing.
func TestPropertyCursorRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		// Mostly small maps; now and then the edges, block boundaries
		// and the largest.
		n := rapid.IntRange(1, 2*RegionsPerBlock).Draw(t, "regions")
		if rapid.IntRange(0, 19).Draw(t, "edge") == 0 {
			n = rapid.SampledFrom([]int{RegionsPerBlock, RegionsPerBlock + 1, MaxRegions - 1, MaxRegions}).Draw(t, "edgeRegions")
		}
		g := Geometry{ArrayUUID: testUUID, ArraySize: int64(n) << 12, RegionSize: 1 << 12}
		rg := newRig(t, g, InSync, 1)
		c := Cursor{Action: Action(rapid.IntRange(1, 4).Draw(t, "action"))}
		c.Position = rapid.IntRange(0, n).Draw(t, "position")
		c.Started = rapid.Uint64().Draw(t, "started")
		if c.Action.Fills() {
			c.Member = rapid.Uint32().Draw(t, "member")
		}
		if err := rg.m.SetCursor(c); err != nil {
			t.Fatalf("SetCursor(%+v): %v", c, err)
		}
		gen, blocks, err := rg.m.Flush(FlushChanged, nil)
		if err != nil || len(blocks) != 1 || blocks[0].Offset != 0 {
			t.Fatalf("Flush after SetCursor: gen %d, %d blocks, %v; want the header alone", gen, len(blocks), err)
		}
		h, err := DecodeHeader(blocks[0].Data)
		if err != nil || h.Cursor != c || h.Sequence != gen {
			t.Fatalf("DecodeHeader: %+v, %v; want cursor %+v, sequence %d", h, err, c, gen)
		}
		copy(rg.areas[0], blocks[0].Data)
		if err := rg.m.Flushed(gen); err != nil {
			t.Fatal(err)
		}
		m, _ := rg.load()
		if m.Cursor() != c {
			t.Fatalf("loaded cursor %+v, set %+v", m.Cursor(), c)
		}

		bad := c
		switch rapid.IntRange(0, 3).Draw(t, "badness") {
		case 0:
			bad.Position = n + 1 + rapid.IntRange(0, 5).Draw(t, "past")
		case 1:
			bad.Position = -1
		case 2:
			bad.Action = Action(rapid.IntRange(5, 255).Draw(t, "unknown"))
		default:
			bad.Action, bad.Member = ActionCheck, 1+rapid.Uint32Range(0, 1000).Draw(t, "member")
		}
		if err := rg.m.SetCursor(bad); !errors.Is(err, ErrRange) || rg.m.Cursor() != c || rg.m.Changed() {
			t.Fatalf("SetCursor(%+v): %v, cursor now %+v; want ErrRange and nothing changed", bad, err, rg.m.Cursor())
		}
	})
}

// job is a resync or a rebuild that checkpoints its progress in the map
// while writes go on, and crashes come at any point.
type job struct {
	t      *rapid.T
	g      Geometry
	m      *Map
	disks  [][]byte
	action Action
	pos    int    // next region the job works on
	start  uint64 // generation at which it began

	// What the model knows: which regions' copies may differ, which
	// regions the rebuild has copied for good, and the cursor that every
	// member's header holds, if known.
	differ  []bool
	copied  []bool
	issued  []int
	writes  []int // regions of writes sent and not ended
	durable *Cursor

	fl       *mflight
	flCursor *Cursor // the cursor the flush in flight writes, if it writes the header
}

func TestPropertyResumedScan(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 200).Draw(t, "regions")
		j := &job{t: t, g: geom(n), durable: &Cursor{}}
		j.action = rapid.SampledFrom([]Action{ActionResync, ActionRebuild}).Draw(t, "action")
		j.differ, j.copied, j.issued = make([]bool, n), make([]bool, n), make([]int, n)
		// An unclean start: some regions dirty on disk.
		init := make([]uint8, n)
		for r := range init {
			init[r] = uint8(rapid.IntRange(0, 2).Draw(t, "state"))
			j.differ[r] = init[r] == uint8(Dirty)
		}
		for range 2 {
			j.disks = append(j.disks, buildArea(j.g, 1, Cursor{}, 1, init))
		}
		j.load()
		j.start = j.m.Gen()
		for range rapid.IntRange(1, 150).Draw(t, "steps") {
			j.step()
		}
		j.crash()
	})
}

func (j *job) step() {
	t := j.t
	switch rapid.SampledFrom([]string{"work", "work", "work", "checkpoint", "write", "write", "end", "block", "flushed", "crash"}).Draw(t, "step") {
	case "work":
		j.work()
	case "checkpoint":
		if j.fl == nil {
			if err := j.m.SetCursor(Cursor{Action: j.action, Position: j.pos, Started: j.start}); err != nil {
				t.Fatalf("SetCursor: %v", err)
			}
			j.startFlush(FlushChanged)
		}
	case "write":
		r := rapid.IntRange(0, j.g.Regions()-1).Draw(t, "region")
		gen, err := j.m.BeginWrite(int64(r)<<12, 512)
		if err != nil {
			t.Fatalf("BeginWrite: %v", err)
		}
		if gen != 0 {
			if j.fl != nil {
				j.finishFlush()
			}
			j.startFlush(FlushUrgent)
			j.finishFlush()
		}
		j.issued[r]++
		j.writes = append(j.writes, r)
	case "end":
		if len(j.writes) > 0 {
			i := rapid.IntRange(0, len(j.writes)-1).Draw(t, "write")
			r := j.writes[i]
			ok := rapid.IntRange(0, 3).Draw(t, "fails") != 0
			if err := j.m.EndWrite(int64(r)<<12, 512, ok); err != nil {
				t.Fatalf("EndWrite: %v", err)
			}
			j.issued[r]--
			j.differ[r] = j.differ[r] || !ok
			j.writes = slices.Delete(j.writes, i, i+1)
		}
	case "block":
		if j.fl != nil {
			k := rapid.IntRange(0, len(j.disks)-1).Draw(t, "member")
			i := rapid.IntRange(0, len(j.fl.data)-1).Draw(t, "block")
			b := j.fl.data[i]
			copy(j.disks[k][b.Offset:], b.Data)
			j.fl.written[k][i] = true
		}
	case "flushed":
		if j.fl != nil {
			j.finishFlush()
		} else {
			j.startFlush(FlushChanged)
		}
	case "crash":
		j.crash()
	}
}

// work does the job's next region: a resync resyncs the next region that
// needs it, cyclically from its position; a rebuild copies the region at its
// position onto the new member.
func (j *job) work() {
	switch j.action {
	case ActionResync:
		r := j.m.ResyncFrom(j.pos)
		if r < 0 || j.issued[r] > 0 {
			return // done, or the region is held by a write
		}
		if !j.m.Resynced(r) {
			j.t.Fatalf("Resynced(%d) refused", r)
		}
		j.differ[r] = false
		j.pos = r + 1
	case ActionRebuild:
		if j.pos < j.g.Regions() {
			j.copied[j.pos] = true
			j.pos++
		}
	}
}

func (j *job) startFlush(mode FlushMode) {
	gen, blocks, err := j.m.Flush(mode, nil)
	if err != nil {
		j.t.Fatalf("Flush: %v", err)
	}
	if gen == 0 {
		return
	}
	fl := &mflight{gen: gen}
	for _, b := range blocks {
		fl.data = append(fl.data, Block{Offset: b.Offset, Data: bytes.Clone(b.Data)})
		if b.Offset == 0 {
			c := j.m.Cursor()
			j.flCursor = &c
		}
	}
	for range j.disks {
		fl.written = append(fl.written, make([]bool, len(blocks)))
	}
	j.fl = fl
}

func (j *job) finishFlush() {
	for k := range j.disks {
		for i, b := range j.fl.data {
			if !j.fl.written[k][i] {
				copy(j.disks[k][b.Offset:], b.Data)
			}
		}
	}
	if err := j.m.Flushed(j.fl.gen); err != nil {
		j.t.Fatalf("Flushed: %v", err)
	}
	if j.flCursor != nil {
		j.durable = j.flCursor
	}
	j.fl, j.flCursor = nil, nil
}

// crash tears the flush in flight, loads the disks back, checks the cursor,
// and runs the resumed job to its end.
func (j *job) crash() {
	t := j.t
	if j.fl != nil {
		for k := range j.disks {
			for i, b := range j.fl.data {
				if j.fl.written[k][i] {
					continue
				}
				disk := j.disks[k][b.Offset : b.Offset+BlockSize]
				switch rapid.IntRange(0, 2).Draw(t, "tear") {
				case 1:
					copy(disk, b.Data)
				case 2:
					copy(disk[:2048], b.Data[:2048])
				}
			}
		}
		j.fl = nil
	}
	for r, n := range j.issued {
		if n > 0 {
			j.differ[r] = true
		}
		j.issued[r] = 0
	}
	j.writes = nil
	_, rep := j.load()

	c := j.m.Cursor()
	if c.Action != ActionNone && (c.Action != j.action || c.Started != j.start) {
		t.Fatalf("loaded cursor %+v is not the job's (%s from generation %d)", c, j.action, j.start)
	}
	// A header survives on some member: it is the checkpoint every member
	// had, or the one being written. A lost update only goes back to the
	// one before.
	if rep.Header >= 0 && j.durable != nil && c != *j.durable && (j.flCursor == nil || c != *j.flCursor) {
		t.Fatalf("loaded cursor %+v; every member had %+v, the flush in flight %v", c, *j.durable, j.flCursor)
	}
	j.flCursor = nil
	if j.action == ActionRebuild {
		for r := range c.Position {
			if !j.copied[r] {
				t.Fatalf("loaded cursor %+v says region %d is rebuilt; it is not", c, r)
			}
		}
	}

	// The resumed job: a resync from the cursor visits every region that
	// may differ, once; a rebuild from the cursor every region it has not
	// copied. Then the job goes on from where it ended.
	need := j.m.Resyncs()
	seen := make([]bool, j.g.Regions())
	pos, visits := c.Position, 0
	for r := j.m.ResyncFrom(pos); r >= 0; r = j.m.ResyncFrom(pos) {
		if seen[r] || visits > need {
			t.Fatalf("resumed resync visits region %d again", r)
		}
		seen[r] = true
		visits++
		if !j.m.Resynced(r) {
			t.Fatalf("Resynced(%d) refused", r)
		}
		pos = r + 1
	}
	if visits != need {
		t.Fatalf("resumed resync visited %d regions, %d needed it", visits, need)
	}
	for r, d := range j.differ {
		if d && !seen[r] {
			t.Fatalf("region %d may differ between copies; the resumed resync from %+v never visited it", r, c)
		}
		j.differ[r] = false
	}
	if j.action == ActionRebuild {
		for r := c.Position; r < j.g.Regions(); r++ {
			j.copied[r] = true
		}
	}
	j.pos = 0
	if c.Action == j.action {
		j.pos = c.Position
	}
	// What every member holds now is not known until the next header
	// write completes: the crash may have torn some.
	j.durable = nil
	if err := j.m.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func (j *job) load() (*Map, Report) {
	m, rep, err := Load(testUUID, j.g.ArraySize, j.disks)
	if err != nil {
		j.t.Fatalf("Load: %v", err)
	}
	j.m = m
	return m, rep
}
