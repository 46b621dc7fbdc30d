package array

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/discard"
	"uraid/discard/learn"
	"uraid/mapping"
	"uraid/raid"
)

// TestEngineConfigExclusive checks each member's TRIM settings, and that status reports the same
// ones the engine runs with. The members are files dressed as the kinds of disk a test without
// root cannot open; engineConfig only reads the flags raid.OpenMember probes.
func TestEngineConfigExclusive(t *testing.T) {
	type kind struct{ block, rotational, ata bool }
	var (
		file       = kind{}
		flash      = kind{block: true}
		rotational = kind{block: true, rotational: true}
		ata        = kind{block: true, ata: true}
	)
	tests := []struct {
		name      string
		kind      kind
		listed    bool
		o         DiscardOptions
		inflight  int
		exclusive bool
	}{
		{"non-rotational block", flash, false, DiscardOptions{}, discard.InFlightNVMe, false},
		{"listed block", flash, true, DiscardOptions{}, discard.InFlightSATA, true},
		{"rotational", rotational, false, DiscardOptions{}, discard.InFlightSATA, true},
		{"on ata", ata, false, DiscardOptions{}, discard.InFlightSATA, true},
		{"file", file, false, DiscardOptions{}, discard.InFlightSATA, false},
		{"listed file", file, true, DiscardOptions{}, discard.InFlightSATA, true},
		{"inflight wins over listed", flash, true, DiscardOptions{InFlight: 6}, 6, true},
		{"inflight wins over ata", ata, false, DiscardOptions{InFlight: 3}, 3, true},
		{"member inflight wins over listed", flash, true, DiscardOptions{InFlight: 6, MemberInFlight: map[string]int{"M0": 2}}, 2, true},
		{"inflight applies to non-exclusive", flash, false, DiscardOptions{InFlight: 8}, 8, false},
	}
	a, paths := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, "sync")
	defer a.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := a.members[0]
			m.Block, m.Rotational, m.ATA = tt.kind.block, tt.kind.rotational, tt.kind.ata
			o := tt.o
			if tt.listed {
				o.Exclusive = []string{paths[0]}
			}
			if n, ok := o.MemberInFlight["M0"]; ok {
				o.MemberInFlight = map[string]int{paths[0]: n}
			}
			cfg, err := engineConfig(a, o)
			require.NoError(t, err)
			require.Len(t, cfg.Members, 2)
			assert.Equal(t, tt.inflight, cfg.Members[0].InFlight, "in flight")
			assert.Equal(t, tt.exclusive, cfg.Members[0].YieldToIO, "yield to I/O")
			assert.False(t, cfg.Members[1].YieldToIO, "a setting for member 0 leaked to member 1")

			// Status reports what the engine built from this configuration runs with.
			st := statusWith(t, a, cfg)
			assert.Equal(t, tt.inflight, st.Members[0].TrimInFlight, "status in flight")
			assert.Equal(t, tt.exclusive, st.Members[0].TrimExclusive, "status exclusive")
		})
	}
}

// TestEngineConfigUnknownMember checks that settings for a path that is no member are refused,
// naming the path and the members, rather than dropped.
func TestEngineConfigUnknownMember(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "sync")
	defer a.Close()
	for _, o := range []DiscardOptions{
		{Exclusive: []string{paths[0], "/dev/sdz"}},
		{MemberInFlight: map[string]int{"/dev/sdz": 2}},
	} {
		cfg, err := engineConfig(a, o)
		require.ErrorIs(t, err, ErrNoSuchMember)
		assert.Empty(t, cfg.Members, "nothing was made for a refused configuration")
		assert.Contains(t, err.Error(), "/dev/sdz")
		assert.Contains(t, err.Error(), paths[0]+", "+paths[1])
	}
}

func TestCheckMembers(t *testing.T) {
	members := []string{"/dev/sda", "/dev/disk/by-id/nvme-b", "/var/lib/uraid/m2"}
	tests := []struct {
		name string
		o    DiscardOptions
		bad  []string // what the error must name; none: no error
	}{
		{"nothing asked", DiscardOptions{InFlight: 3}, nil},
		{"every member", DiscardOptions{Exclusive: members, MemberInFlight: map[string]int{"/dev/sda": 1, "/var/lib/uraid/m2": 2}}, nil},
		{"unclean spelling", DiscardOptions{Exclusive: []string{"/dev//sda", "/var/lib/uraid/./m2"}}, nil},
		{"same count under two spellings", DiscardOptions{MemberInFlight: map[string]int{"/dev/sda": 2, "/dev//sda": 2}}, nil},
		{"unknown exclusive", DiscardOptions{Exclusive: []string{"/dev/sda", "/dev/sdb"}}, []string{"--trim-exclusive /dev/sdb", "members: /dev/sda, /dev/disk/by-id/nvme-b, /var/lib/uraid/m2"}},
		{"other name of a member", DiscardOptions{Exclusive: []string{"/dev/nvme0n1"}}, []string{"/dev/nvme0n1"}},
		{"unknown inflight", DiscardOptions{MemberInFlight: map[string]int{"/dev/sda": 1, "m2": 3}}, []string{"--trim-inflight m2"}},
		{"both unknown", DiscardOptions{Exclusive: []string{"x"}, MemberInFlight: map[string]int{"y": 3}}, []string{"--trim-exclusive x", "--trim-inflight y"}},
		{"two counts for one member", DiscardOptions{MemberInFlight: map[string]int{"/dev/sda": 1, "/dev/./sda": 3}}, []string{"/dev/sda twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.CheckMembers(members)
			if tt.bad == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, s := range tt.bad {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestAssembleRefusesUnknownTrimMember checks that the refusal comes before the array starts or
// writes anything: the members read back unchanged and can be assembled again.
func TestAssembleRefusesUnknownTrimMember(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "sync")
	require.NoError(t, a.Close())
	before := readSuperblocks(t, paths)
	_, err := Assemble("t", paths, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Exclusive: []string{paths[0] + ".typo"}}})
	require.ErrorIs(t, err, ErrNoSuchMember)
	assert.Equal(t, before, readSuperblocks(t, paths))
	b, err := Assemble("t", paths, Options{Queues: 1, Depth: 8, Discard: DiscardOptions{Exclusive: []string{paths[1]}}})
	require.NoError(t, err, "a refused assembly left the members held")
	defer b.Close()
	var st Status
	raw, err := json.Marshal(b.Status("", 0))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &st))
	assert.Equal(t, []bool{false, true}, []bool{st.Members[0].TrimExclusive, st.Members[1].TrimExclusive})
	assert.Equal(t, []int{1, 1}, []int{st.Members[0].TrimInFlight, st.Members[1].TrimInFlight})
	var fields struct {
		Members []map[string]any `json:"members"`
	}
	require.NoError(t, json.Unmarshal(raw, &fields))
	assert.Equal(t, true, fields.Members[1]["trim_exclusive"])
	assert.EqualValues(t, 1, fields.Members[1]["trim_inflight"])
	assert.Contains(t, fields.Members[1], "discard_granularity_bytes", "field names are schema 1 (docs/cli.md)")
}

func readSuperblocks(t *testing.T, paths []string) []*raid.Superblock {
	t.Helper()
	var out []*raid.Superblock
	for _, p := range paths {
		m, err := raid.OpenMember(p)
		require.NoError(t, err)
		sb, err := raid.ReadSuperblock(m.File)
		m.Close()
		require.NoError(t, err)
		out = append(out, sb)
	}
	return out
}

// TestEngineConfigLearns checks that every member's lane learns, that a flag fixes the setting it
// names for the members it names, and that status shows what was learned with the override.
func TestEngineConfigLearns(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, "sync")
	defer a.Close()
	o := DiscardOptions{Exclusive: []string{paths[0]}, MemberInFlight: map[string]int{paths[1]: 2}, MinGap: 1}
	cfg, err := engineConfig(a, o)
	require.NoError(t, err)
	require.Len(t, cfg.Members, 2)
	for i, mc := range cfg.Members {
		assert.True(t, mc.Learn, "member %d learns", i)
	}
	assert.Equal(t, discard.KnobExclusive|discard.KnobGap, cfg.Members[0].Fixed)
	assert.Equal(t, discard.KnobInFlight|discard.KnobGap, cfg.Members[1].Fixed)

	st := statusWith(t, a, cfg)
	js, err := json.Marshal(st.Members[0])
	require.NoError(t, err)
	var got struct {
		TrimLearned struct {
			Exclusive  *bool                    `json:"exclusive"`
			InFlight   *int                     `json:"inflight"`
			GapMS      *float64                 `json:"gap_ms"`
			Basis      *struct{ Trims *uint64 } `json:"basis"`
			Overridden []string                 `json:"overridden"`
		} `json:"trim_learned"`
	}
	require.NoError(t, json.Unmarshal(js, &got), "%s", js)
	l := got.TrimLearned
	require.NotNil(t, l.Exclusive, "%s", js)
	require.NotNil(t, l.InFlight, "%s", js)
	require.NotNil(t, l.GapMS, "%s", js)
	require.NotNil(t, l.Basis, "%s", js)
	assert.Equal(t, []string{"exclusive overridden by --trim-exclusive", "gap_ms overridden by --trim-gap"}, l.Overridden)
	assert.True(t, st.Members[0].TrimExclusive, "the flag is what the lane runs by")
}

// TestTrimLearnedEvent checks that a lane's new decision is an event with the figures and the
// overrides, in words and as data.
func TestTrimLearnedEvent(t *testing.T) {
	a, _ := createArray(t, arrayCase{mapping.RAID0, mapping.NoLayout, 2, 64 << 10}, "sync")
	defer a.Close()
	d := learn.Decision{Exclusive: true, InFlight: 1, Gap: 40 * time.Millisecond, GapMS: 40,
		Basis: learn.Basis{IOCleanUS: 200, IOOverlappedUS: 90000, IOOverlappedN: 5, IOCleanN: 50, Trims: 7}}
	a.trimLearned(1, discard.Learned{Decision: d, Fixed: discard.KnobInFlight})
	e := nextEvent(t, a)
	assert.Equal(t, EventTrimLearned, e.Type)
	require.NotNil(t, e.Member)
	assert.Equal(t, 1, *e.Member)
	require.NotNil(t, e.TrimLearned)
	assert.Equal(t, d, e.TrimLearned.Decision)
	assert.Equal(t, []string{"inflight overridden by --trim-inflight"}, e.TrimLearned.Overridden)
	assert.Contains(t, e.Message, "exclusive true")
	assert.Contains(t, e.Message, "90ms beside a TRIM vs 200µs clean")
	assert.Contains(t, e.Message, "inflight overridden by --trim-inflight")
}

// statusWith is a's status as an engine built from cfg would have it report, a's own engine
// left as it is afterwards.
func statusWith(t *testing.T, a *Array, cfg discard.Config) Status {
	t.Helper()
	e, err := discard.New(cfg)
	require.NoError(t, err)
	old := a.engine
	a.engine = e
	st := a.Status("", 0)
	a.engine = old
	require.NoError(t, e.Close())
	return st
}
