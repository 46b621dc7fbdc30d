package array

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"uraid/discard"
	"uraid/mapping"
	"uraid/raid"
)

// Pacing knobs of the discard engine, per array. Every member's lane learns its exclusivity,
// in-flight limit and gap by measurement (discard.Member.Learn); a knob set here fixes the
// learned setting for the members it applies to, which status then reports as overridden.
type DiscardOptions struct {
	// Mode is "sync" or "async" (default sync).
	Mode string
	// InFlight overrides how many TRIMs each member runs at once (0: 1 on exclusive members and
	// files, 4 on other block devices).
	InFlight int
	// MemberInFlight overrides InFlight for the members it names by path.
	MemberInFlight map[string]int
	// Exclusive names members, by path, whose TRIMs stall their reads and writes although
	// nothing says so: a SATA SSD behind a USB or SAS bridge, a simulated drive. Rotational
	// members and members on a libata port are exclusive without being named.
	Exclusive []string
	// MinGap is the least time between two TRIMs on one member, for drives that charge a
	// penalty for back-to-back TRIMs.
	MinGap time.Duration
}

// ErrNoSuchMember means a per-member discard option names a path that is no member of the array.
var ErrNoSuchMember = errors.New("is not a member of the array")

// CheckMembers refuses Exclusive and MemberInFlight entries that name none of paths, the members
// as given to create or assemble, and members named twice with different counts. A setting for a
// mistyped path would otherwise be dropped without a word, and the drive it was meant for run
// with the defaults it was meant to correct.
func (o DiscardOptions) CheckMembers(paths []string) error {
	var errs []error
	unknown := func(flag, p string) {
		errs = append(errs, fmt.Errorf("%s %s %w (members: %s): name each member as it is given to create or assemble",
			flag, p, ErrNoSuchMember, strings.Join(paths, ", ")))
	}
	for _, p := range o.Exclusive {
		if memberIndex(paths, p) < 0 {
			unknown("--trim-exclusive", p)
		}
	}
	keys := make([]string, 0, len(o.MemberInFlight))
	for p := range o.MemberInFlight {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	seen := map[int]string{}
	for _, p := range keys {
		i := memberIndex(paths, p)
		if i < 0 {
			unknown("--trim-inflight", p)
			continue
		}
		if q, ok := seen[i]; ok && o.MemberInFlight[q] != o.MemberInFlight[p] {
			errs = append(errs, fmt.Errorf("--trim-inflight names member %s twice, as %s and %s, with different counts: give it one", paths[i], q, p))
		}
		seen[i] = p
	}
	return errors.Join(errs...)
}

// memberIndex is the index in paths of the member that p names, or -1. Paths are compared as
// written, up to filepath.Clean: resolving links would need the devices to exist, and create
// checks its members before it makes the missing ones.
func memberIndex(paths []string, p string) int {
	for i, q := range paths {
		if samePath(q, p) {
			return i
		}
	}
	return -1
}

// samePath reports whether p names member: as written, or once both are made stable (a member
// known by its /dev/disk/by-id link, named by its /dev/sdX or by a relative path).
func samePath(member, p string) bool {
	return raid.SameMemberPath(member, p)
}

// memberTrim is how the discard engine trims one member.
type memberTrim struct {
	// exclusive means the member's TRIMs stall its reads and writes, so it takes one TRIM at a
	// time and lets reads and writes go first.
	exclusive bool
	inflight  int
	// fixed are the settings a flag chose for this member, which learning does not change.
	fixed discard.Knobs
}

// memberTrim picks m's TRIM settings from what the member is and what was asked.
func (o DiscardOptions) memberTrim(m *raid.Member) memberTrim {
	listed := false
	for _, p := range o.Exclusive {
		listed = listed || samePath(m.Path, p)
	}
	t := memberTrim{exclusive: m.Rotational || m.ATA || listed, inflight: discard.InFlightNVMe}
	if listed {
		t.fixed |= discard.KnobExclusive
	}
	if o.MinGap > 0 {
		t.fixed |= discard.KnobGap
	}
	if t.exclusive || !m.Block {
		// A file's hole punches serialize on its inode anyway.
		t.inflight = discard.InFlightSATA
	}
	if o.InFlight > 0 {
		t.inflight = o.InFlight
		t.fixed |= discard.KnobInFlight
	}
	for p, n := range o.MemberInFlight {
		if n > 0 && samePath(m.Path, p) {
			t.inflight = n
			t.fixed |= discard.KnobInFlight
		}
	}
	return t
}

// ParseDiscardMode accepts "sync" and "async", in any case, as every enum flag of uraid does.
func ParseDiscardMode(s string) (discard.Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "sync":
		return discard.Sync, nil
	case "async":
		return discard.Async, nil
	}
	return 0, fmt.Errorf("discard mode %q: use sync (a discard completes when every member has trimmed) or async (it completes once queued)", s)
}

func newEngine(a *Array, o DiscardOptions) (*discard.Engine, error) {
	cfg, err := engineConfig(a, o)
	if err != nil {
		return nil, err
	}
	cfg.Clock = a.opts.Clock
	return discard.New(cfg) // owns the issuers from here, even on failure
}

// engineConfig picks each member's TRIM settings from what the member is and what was asked, and
// makes its issuer: an io_uring of its own, driven by the member's lane in the engine.
func engineConfig(a *Array, o DiscardOptions) (discard.Config, error) {
	mode, err := ParseDiscardMode(o.Mode)
	if err != nil {
		return discard.Config{}, err
	}
	paths := make([]string, 0, len(a.members))
	for _, m := range a.members {
		if m != nil {
			paths = append(paths, m.Path)
		}
	}
	if err := o.CheckMembers(paths); err != nil {
		return discard.Config{}, err
	}
	cfg := discard.Config{
		Mode: mode,
		OnError: func(x mapping.Extent, err error) {
			a.log.Warn("discard failed", "member", x.Member, "offset", x.Offset, "end", x.End(), "err", err)
		},
		// The region map hears from the engine whether each discard it watches was trimmed.
		OnTrimmed:  a.trimDone,
		MaxWatched: maxPendingTrims,
		OnLearned:  a.trimLearned,
	}
	fail := func(err error) (discard.Config, error) {
		for _, mc := range cfg.Members {
			if mc.Issuer != nil {
				mc.Issuer.Close()
			}
		}
		return discard.Config{}, err
	}
	for i, m := range a.members {
		mc, err := a.memberConfig(i, m, o)
		if err != nil {
			return fail(fmt.Errorf("member %s: %w", m.Path, err))
		}
		cfg.Members = append(cfg.Members, mc)
	}
	return cfg, nil
}

// trimDone passes the engine's word on a watched discard to the region map, which watched it
// (serveDiscard): an array without a map watches none.
func (a *Array) trimDone(key uint64, trimmed bool) {
	if a.regions != nil {
		a.regions.trimDone(key, trimmed)
	}
}

// memberConfig is the discard engine's configuration of device m (nil: none) in slot i. The engine
// the array starts with and a device that takes the slot later (rebuild, replace) both get theirs
// here, so that they cannot drift apart. A device that reports no discard granularity cannot take
// TRIMs and gets no issuer, even in a slot whose first device could.
func (a *Array) memberConfig(i int, m *raid.Member, o DiscardOptions) (discard.Member, error) {
	mc := discard.Member{MinGap: o.MinGap}
	if m == nil || a.gran[i].Bytes == 0 || m.DiscardGranularity == 0 {
		return mc, nil
	}
	mc.MaxLen = m.DiscardMax
	if a.gran[i].Alignment == 0 {
		// The engine's granules start at offset 0; a misaligned member keeps byte units and
		// mapping's inward rounding alone.
		mc.Granularity = a.gran[i].Bytes
	}
	t := o.memberTrim(m)
	mc.InFlight = t.inflight
	// A drive that stalls reads and writes behind a TRIM should trim between them. What the
	// member is gives the prior; the lane learns the rest, except what a flag fixed.
	mc.YieldToIO = t.exclusive
	mc.Learn, mc.Fixed = true, t.fixed
	var err error
	if a.opts.newIssuer != nil {
		mc.Issuer, err = a.opts.newIssuer(m, a.dataOff[i], mc.InFlight)
	} else {
		mc.Issuer, err = discard.NewRingIssuer(int(m.File.Fd()), m.Block, a.dataOff[i], mc.InFlight)
	}
	return mc, err
}
