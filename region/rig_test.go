package region

// tb is what the rig needs of a test, met by both *testing.T and
// *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// rig is a map and the map areas of its members, for directed tests: every
// flush it makes is written to every area and completed at once.
type rig struct {
	t     tb
	m     *Map
	areas [][]byte
}

func geom(regions int) Geometry {
	return Geometry{ArrayUUID: testUUID, ArraySize: int64(regions) << 12, RegionSize: 1 << 12}
}

func newRig(t tb, g Geometry, initial State, members int) *rig {
	t.Helper()
	m, err := New(g, initial)
	if err != nil {
		t.Fatalf("New(%+v): %v", g, err)
	}
	r := &rig{t: t, m: m}
	for range members {
		r.areas = append(r.areas, make([]byte, g.AreaBytes()))
	}
	r.flush(FlushAll)
	return r
}

// flush writes what mode asks for to every area and completes it,
// returning the generation (0 when there was nothing to write).
func (r *rig) flush(mode FlushMode) uint64 {
	r.t.Helper()
	gen, blocks, err := r.m.Flush(mode, nil)
	if err != nil {
		r.t.Fatalf("Flush: %v", err)
	}
	for _, a := range r.areas {
		for _, b := range blocks {
			copy(a[b.Offset:], b.Data)
		}
	}
	if gen != 0 {
		if err := r.m.Flushed(gen); err != nil {
			r.t.Fatalf("Flushed(%d): %v", gen, err)
		}
	}
	r.verify()
	return gen
}

func (r *rig) verify() {
	r.t.Helper()
	if err := r.m.Verify(); err != nil {
		r.t.Fatalf("Verify: %v", err)
	}
}

// load reads the areas back.
func (r *rig) load() (*Map, Report) {
	r.t.Helper()
	m, rep, err := Load(r.m.Geometry().ArrayUUID, r.m.Geometry().ArraySize, r.areas)
	if err != nil {
		r.t.Fatalf("Load: %v", err)
	}
	if err := m.Verify(); err != nil {
		r.t.Fatalf("loaded map: %v", err)
	}
	return m, rep
}

// write runs a whole write of region reg: begin, flush if it must wait,
// end.
func (r *rig) write(reg int, ok bool) {
	r.t.Helper()
	off := int64(reg) << r.m.shift
	gen, err := r.m.BeginWrite(off, 512)
	if err != nil {
		r.t.Fatalf("BeginWrite: %v", err)
	}
	if gen != 0 {
		r.flush(FlushUrgent)
		if r.m.Durable() < gen {
			r.t.Fatalf("after a flush durable is %d, the write waits for %d", r.m.Durable(), gen)
		}
	}
	if err := r.m.EndWrite(off, 512, ok); err != nil {
		r.t.Fatalf("EndWrite: %v", err)
	}
	r.verify()
}

// states returns the state of every region.
func states(m *Map) []State {
	out := make([]State, m.Regions())
	for r := range out {
		out[r] = m.State(r)
	}
	return out
}
