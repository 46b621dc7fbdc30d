package reshape

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"uraid/mapping"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

// geo returns a geometry of n members of b data bytes each.
func geo(level mapping.Level, layout mapping.Layout, chunk int64, n int, b int64) mapping.Geometry {
	g := mapping.Geometry{Level: level, Layout: layout, ChunkBytes: chunk}
	for range n {
		g.MemberBytes = append(g.MemberBytes, b)
	}
	return g
}

// TestNewRefuses checks every refusal names its cause and its fix.
func TestNewRefuses(t *testing.T) {
	r0 := func(n int) mapping.Geometry { return geo(mapping.RAID0, mapping.NoLayout, 64*kib, n, 64*mib) }
	n2 := func(n int) mapping.Geometry { return geo(mapping.RAID10, mapping.Near2, 64*kib, n, 64*mib) }
	smaller := r0(5)
	smaller.MemberBytes[4] = 64*mib - 512
	unequal := r0(4)
	unequal.MemberBytes[1] += 4096
	tests := []struct {
		name     string
		from, to mapping.Geometry
		err      error
		says     []string
	}{
		{"linear appends", geo(mapping.Linear, mapping.NoLayout, 0, 2, mib), geo(mapping.Linear, mapping.NoLayout, 0, 3, mib), ErrUnsupported, []string{"linear", "uraid grow --add"}},
		{"raid1 gains copies", geo(mapping.RAID1, mapping.NoLayout, 0, 2, mib), geo(mapping.RAID1, mapping.NoLayout, 0, 3, mib), ErrUnsupported, []string{"raid1", "--copies"}},
		{"raid10 f2 moves every byte twice", geo(mapping.RAID10, mapping.Far2, 64*kib, 4, 64*mib), geo(mapping.RAID10, mapping.Far2, 64*kib, 6, 64*mib), ErrUnsupported, []string{"f2", "twice", "n2 or o2"}},
		{"level change", r0(4), n2(6), ErrUnsupported, []string{"keeps the level"}},
		{"layout change", n2(4), geo(mapping.RAID10, mapping.Offset2, 64*kib, 6, 64*mib), ErrUnsupported, []string{"layout"}},
		{"chunk change", r0(4), geo(mapping.RAID0, mapping.NoLayout, 128*kib, 5, 64*mib), ErrUnsupported, []string{"chunk change", "65536"}},
		{"default chunk is the chunk", geo(mapping.RAID0, mapping.NoLayout, 0, 4, 64*mib), geo(mapping.RAID0, mapping.NoLayout, 64*kib, 5, 64*mib), ErrUnsupported, []string{"chunk change", "524288"}},
		{"same members", r0(4), r0(4), ErrUnsupported, []string{"only adds members"}},
		{"fewer members", r0(4), r0(3), ErrUnsupported, []string{"only adds members"}},
		{"new member smaller", r0(4), smaller, ErrGeometry, []string{"member 4", "at least as large"}},
		{"old members unequal", unequal, r0(5), ErrGeometry, []string{"one data size"}},
		{"no room for the backup", r0(4), geo(mapping.RAID0, mapping.NoLayout, 64*kib, 5, 64*mib), nil, nil},
		{"backup does not fit", geo(mapping.RAID0, mapping.NoLayout, 64*kib, 8, 8*64*kib), geo(mapping.RAID0, mapping.NoLayout, 64*kib, 9, 8*64*kib), ErrGeometry, []string{"backup", "more members at once"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.from, tc.to, Config{})
			if tc.err == nil {
				if err != nil {
					t.Fatalf("New: %v, want a plan", err)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("New: %v, want %v", err, tc.err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("New: %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestCheckRefusesState checks that a state read from disk that does not fit
// the plan is an error, never followed.
func TestCheckRefusesState(t *testing.T) {
	r, err := New(geo(mapping.RAID0, mapping.NoLayout, 4*kib, 4, 4*mib), geo(mapping.RAID0, mapping.NoLayout, 4*kib, 5, 4*mib), Config{})
	if err != nil {
		t.Fatal(err)
	}
	u := r.Unit()
	good := Backup{From: u, To: 2 * u, Row: r.BackupRow()}
	for _, st := range []State{
		{Cursor: -u},
		{Cursor: u + 512},
		{Cursor: r.End() + u},
		{Cursor: u, Done: true},
		{Cursor: r.End(), Done: true, Backup: Backup{From: r.End(), To: r.End() + u, Row: r.BackupRow()}},
		{Cursor: 0, Backup: good},
		{Cursor: u, Backup: Backup{From: u, To: u + r.BackupBytes() + u, Row: r.BackupRow()}},
		{Cursor: u, Backup: Backup{From: u, To: u + 512, Row: r.BackupRow()}},
		{Cursor: u, Backup: Backup{From: u, To: 2 * u, Row: r.BackupRow() - 1}},
	} {
		if err := r.Check(st); !errors.Is(err, ErrState) {
			t.Errorf("Check(%+v) = %v, want %v", st, err, ErrState)
		}
		var s Step
		if err := r.Next(st, nil, &s); !errors.Is(err, ErrState) {
			t.Errorf("Next(%+v) = %v, want %v", st, err, ErrState)
		}
	}
	if err := r.Check(State{Cursor: u, Backup: good}); err != nil {
		t.Errorf("Check of a good backup: %v", err)
	}
	var s Step
	if err := r.Next(State{Cursor: r.End(), Done: true}, nil, &s); !errors.Is(err, ErrDone) {
		t.Errorf("Next when done = %v, want %v", err, ErrDone)
	}
}

// TestNextRefusesBadLiveness checks that a Live whose run does not advance,
// passes its end or splits a sector is an error.
func TestNextRefusesBadLiveness(t *testing.T) {
	r, err := New(geo(mapping.RAID0, mapping.NoLayout, 4*kib, 2, 4*mib), geo(mapping.RAID0, mapping.NoLayout, 4*kib, 3, 4*mib), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, live := range []Live{
		func(off, end int64) (bool, int64) { return true, off },
		func(off, end int64) (bool, int64) { return true, end + 512 },
		func(off, end int64) (bool, int64) { return false, off + 100 },
	} {
		var s Step
		if err := r.Next(State{}, live, &s); !errors.Is(err, ErrLive) {
			t.Errorf("Next = %v, want %v", err, ErrLive)
		}
	}
}

// TestPropertyStateFromDisk feeds Next and Route states and positions as a
// damaged superblock could hold them: never a panic, an ErrState for what
// Check refuses, and a step for what it takes.
func TestPropertyStateFromDisk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genReshape(t, rapid.SampledFrom(layoutCases).Draw(t, "layout"))
		u := r.Unit()
		near := func(name string) int64 { // on the grid, off it, or anything
			switch rapid.IntRange(0, 2).Draw(t, name+"Kind") {
			case 0:
				return rapid.Int64Range(-1, r.End()/u+1).Draw(t, name) * u
			case 1:
				return rapid.Int64Range(-u, r.End()+u).Draw(t, name)
			}
			return rapid.Int64().Draw(t, name)
		}
		st := State{Cursor: near("cursor"), Done: rapid.Bool().Draw(t, "done")}
		if rapid.Bool().Draw(t, "hasBackup") {
			st.Backup = Backup{From: near("from"), To: near("to"), Row: r.BackupRow() + rapid.Int64Range(-1, 1).Draw(t, "row"), Sum: rapid.Uint32().Draw(t, "sum")}
		}
		var s Step
		err := r.Next(st, nil, &s)
		switch checked := r.Check(st); {
		case checked != nil && !errors.Is(err, ErrState):
			t.Fatalf("Check(%+v) = %v but Next = %v", st, checked, err)
		case checked == nil && st.Done && !errors.Is(err, ErrDone):
			t.Fatalf("Next(%+v) = %v, want %v", st, err, ErrDone)
		case checked == nil && !st.Done && err != nil:
			t.Fatalf("Next(%+v) of a state Check takes: %v", st, err)
		}
		p := Position{Cursor: near("posCursor"), WindowEnd: near("posEnd")}
		off, length := near("off"), near("length")
		z, n, err := r.Route(p, off, length)
		if err == nil && (n <= 0 || n > length || z < ZoneNew || z > ZoneWait) {
			t.Fatalf("Route(%+v, %d, %d) = %v, %d", p, off, length, z, n)
		}
	})
}
