package raid

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"uraid/internal/plant"
	"uraid/mapping"
)

// MemberSB is a superblock together with the path it was read from, which
// every assembly error names.
type MemberSB struct {
	Path string
	SB   *Superblock
}

// Assembly is the verdict of CheckAssembly on a set of members.
type Assembly struct {
	// Newest is the superblock with the highest event count. Its
	// array-wide fields (UUID, name, level, layout, chunk size, member
	// count, data size, state) describe the array.
	Newest Superblock
	// Members has one entry per slot, indexed by member index. A slot
	// whose member is missing or stale holds the zero MemberSB.
	Members []MemberSB
	// Missing lists, in order, the slots no given device claims.
	Missing []uint32
	// Stale lists the given members whose event count is behind Newest:
	// they missed writes and must be rebuilt before they serve reads.
	Stale []MemberSB
	// Spares lists the given spares of the array (RoleSpare): they take no
	// slot until a member fails.
	Spares []MemberSB
	// Rebuilding lists the slots whose member is being rebuilt
	// (RoleRebuilding): it takes writes, not reads, until its rebuild ends.
	Rebuilding []uint32
	// Replacing lists the replacements of a replace under way: a member
	// being rebuilt into a slot whose own member is still in it.
	Replacing []MemberSB
	// Superseded lists the given devices that claim a slot another given
	// device claims with a higher event count: the old device of a
	// finished replace, a replacement let go. They take no part, as a
	// stale member does, but are not what makes the array degraded.
	Superseded []MemberSB
	// NotMembers lists the given devices of a linear array prepared for an
	// append that the newest superblock does not count (its commit was cut
	// short, or the array ran on without them): they hold nothing of the
	// array and take no part.
	NotMembers []MemberSB
}

// Degraded reports whether some slot has no current member.
func (a *Assembly) Degraded() bool {
	return len(a.Missing) > 0 || len(a.Stale) > 0
}

// Errors reported by CheckAssembly. Each is wrapped in a message that
// names the member and says what to do; test with errors.Is.
var (
	// ErrNoMembers means CheckAssembly was given nothing to check.
	ErrNoMembers = errors.New("no members given")
	// ErrForeignMember means a device carries the superblock of a
	// different array than the others.
	ErrForeignMember = errors.New("belongs to another array")
	// ErrGeometryMismatch means members of one array disagree about its
	// level, layout, chunk size, member count or data size.
	ErrGeometryMismatch = errors.New("geometry mismatch")
	// ErrDuplicateIndex means two given devices claim the same slot.
	ErrDuplicateIndex = errors.New("duplicate member index")
	// ErrMissingMember means a slot has no device among those given. The
	// Assembly is still returned; the caller may run degraded.
	ErrMissingMember = errors.New("missing")
	// ErrStaleMember means a member's event count is behind the newest
	// member's (by more than a torn update, see Superblock.Slots). The
	// Assembly is still returned, without that member.
	ErrStaleMember = errors.New("stale")
)

// CheckAssembly verifies that the members a user named belong together
// and orders them by index. The newest member (highest event count, the
// first given on a tie) is the reference every other member is checked
// against.
//
// Conflicts that make the set meaningless — invalid or absent superblocks,
// a device named twice, members of different arrays, disagreeing geometry,
// two members in one slot — return a nil Assembly and an error naming every
// offending member. If the only problems are missing or stale members,
// CheckAssembly returns the Assembly and an error wrapping ErrMissingMember
// and/or ErrStaleMember, so a caller that accepts a degraded array can go
// on and one that does not simply fails. Whether a degraded array can run
// at all depends on the level and layout; for levels without redundancy it
// never can, and the error says so. The error states what is wrong, not what
// to do: the caller knows how the members were found and adds that once
// (DegradedHint).
func CheckAssembly(members []MemberSB) (*Assembly, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("assemble: %w: name the array's member devices", ErrNoMembers)
	}
	if err := checkMembersReadable(members); err != nil {
		return nil, err
	}
	group := majorityArray(members)
	newest := group[0]
	for _, m := range group[1:] {
		// On a tie a linear array's superblock of fewer members wins: a device prepared for an
		// append carries the events of the update before the commit that would count it.
		if m.SB.Events > newest.SB.Events || m.SB.Events == newest.SB.Events && m.SB.Level == mapping.Linear &&
			m.SB.Members < newest.SB.Members {
			newest = m
		}
	}
	ref := newest.SB
	var errs []error
	for _, m := range members {
		if m.SB.ArrayUUID != ref.ArrayUUID {
			errs = append(errs, fmt.Errorf("member %s: %w %q (%s), not to array %q (%s) held by %s: leave it out of the list",
				m.Path, ErrForeignMember, m.SB.Name, m.SB.ArrayUUID, ref.Name, ref.ArrayUUID, memberPaths(group)))
		}
	}
	var notMembers []MemberSB
	for _, m := range group {
		if AppendedPastEnd(m.SB, ref) {
			notMembers = append(notMembers, m)
			continue
		}
		d := assemblyGeometryDiff(m.SB, ref)
		if (d == geoDataSize || d == geoMembers && (ref.Level == mapping.RAID1 || ref.Level == mapping.Linear || m.SB.Members < ref.Members)) && m.SB.Events < ref.Events {
			// A device that left before the array grew (or shrank), before a raid1 gained or
			// dropped a copy, before a reshape gave the array more members (reshape.go), or a
			// linear member one update behind an append, carries the geometry of its time: it is
			// stale or superseded by its events, below, not of another geometry.
			continue
		}
		if d != "" {
			errs = append(errs, fmt.Errorf("member %s (index %d, events %d): %w: %s, but newest member %s (events %d) says %s: "+
				"these superblocks cannot describe one array; leave the odd one out or re-create the array",
				m.Path, m.SB.Index, m.SB.Events, ErrGeometryMismatch, describeGeometryField(m.SB, d), newest.Path, ref.Events, describeGeometryField(ref, d)))
		}
	}
	slots := make([][]MemberSB, ref.Members)
	var spares []MemberSB
	for _, m := range group {
		if slices.ContainsFunc(notMembers, func(n MemberSB) bool { return n.Path == m.Path }) {
			continue
		}
		if m.SB.Role == RoleSpare {
			spares = append(spares, m)
			continue
		}
		if i := slotIn(m.SB, ref); i < ref.Members {
			slots[i] = append(slots[i], m)
		}
	}
	var replacing, superseded []MemberSB
	for i, claim := range slots {
		// A device whose superblock still claims the slot after it left it (the old device of a
		// finished replace, a replacement let go) is behind the slot's newest claimant: the newer
		// superblock was written after it was let go, so it knows better.
		if len(claim) > 1 {
			top := slices.MaxFunc(claim, func(a, b MemberSB) int { return cmp.Compare(a.SB.Events, b.SB.Events) }).SB.Events
			var kept []MemberSB
			for _, m := range claim {
				if m.SB.Events < top {
					superseded = append(superseded, m)
				} else {
					kept = append(kept, m)
				}
			}
			claim, slots[i] = kept, kept
		}
		if len(claim) == 2 && (claim[0].SB.Role == RoleRebuilding) != (claim[1].SB.Role == RoleRebuilding) {
			// A replace under way: the slot's member and, being rebuilt beside it, its
			// replacement.
			if claim[0].SB.Role == RoleRebuilding {
				claim[0], claim[1] = claim[1], claim[0]
			}
			replacing = append(replacing, claim[1])
			slots[i] = claim[:1]
			continue
		}
		if len(claim) > 1 {
			errs = append(errs, duplicateIndexError(uint32(i), claim))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("assemble array %q: %w", ref.Name, errors.Join(errs...))
	}

	a := &Assembly{Newest: *ref, Members: make([]MemberSB, ref.Members), Spares: spares, Superseded: superseded, NotMembers: notMembers}
	for _, m := range replacing {
		if m.SB.Events >= ref.Events { // a stale replacement starts over as a spare would
			a.Replacing = append(a.Replacing, m)
		}
	}
	for i, claim := range slots {
		switch {
		case len(claim) == 0:
			a.Missing = append(a.Missing, uint32(i))
		case claim[0].SB.Events < ref.Events && !tornBehind(claim[0].SB, ref, uint32(i)) && !plant.Is("recovery"):
			a.Stale = append(a.Stale, claim[0])
		default:
			a.Members[i] = claim[0]
			if claim[0].SB.Role == RoleRebuilding {
				a.Rebuilding = append(a.Rebuilding, uint32(i))
			}
		}
	}
	if !a.Degraded() {
		return a, nil
	}
	for _, m := range a.Stale {
		errs = append(errs, fmt.Errorf("member %s (index %d): events %d behind %d: %w, it missed writes",
			m.Path, m.SB.Index, m.SB.Events, ref.Events, ErrStaleMember))
	}
	if len(a.Missing) > 0 {
		idx := make([]string, len(a.Missing))
		for i, n := range a.Missing {
			idx[i] = fmt.Sprint(n)
		}
		noun, pronoun := "index", "it"
		if len(idx) > 1 {
			noun, pronoun = "indexes", "them"
		}
		errs = append(errs, fmt.Errorf("member %s %s %w: no given device claims %s",
			noun, strings.Join(idx, ", "), ErrMissingMember, pronoun))
	}
	if !ref.Level.Redundant() {
		errs = append(errs, fmt.Errorf("level %s has no redundancy, so the array cannot run until every member is present and current", ref.Level.ShortName()))
	}
	return a, fmt.Errorf("assemble array %q: %w", ref.Name, errors.Join(errs...))
}

// CheckNamedOnce refuses a member named twice, also under two names of one file or disk, before
// any is opened: the second open would fail on the first's lock (or exclusive claim) and blame
// another process. A path that cannot be read is left to the open to report.
func CheckNamedOnce(paths []string) error {
	type named struct {
		path string
		fi   os.FileInfo
	}
	var seen []named
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		for _, q := range seen {
			if os.SameFile(q.fi, fi) {
				also := ""
				if q.path != p {
					also = fmt.Sprintf(" (also as %s, the same %s)", q.path, kindOf(fi))
				}
				return fmt.Errorf("member %s is named twice%s: name each member once", p, also)
			}
		}
		seen = append(seen, named{p, fi})
	}
	return nil
}

func kindOf(fi os.FileInfo) string {
	if fi.Mode()&os.ModeDevice != 0 {
		return "disk"
	}
	return "file"
}

// DegradedHint is what to do about an assembly that is only degraded (CheckAssembly returned a
// and an error), to follow that error: how to run it anyway, for a level with redundancy; nothing
// for one without, whose error already says it cannot run. how says how to get the members all
// there, as the caller found them ("name every member").
func DegradedHint(a *Assembly, how string) string {
	if a == nil || !a.Newest.Level.Redundant() {
		return ""
	}
	return "; " + how + ", or assemble with --degraded to run without the missing or stale members (uraid add brings them back)"
}

// tornBehind reports whether sb, behind ref, missed only ref's update and ref still names it in
// slot: a crash stopped that update between members, and sb missed no write (a write goes to
// fewer copies only once the superblocks record the failure that made them fewer).
func tornBehind(sb, ref *Superblock, slot uint32) bool {
	if plant.Is("torn") {
		return sb.Events+1 == ref.Events // any member one behind, whatever the table says
	}
	return sb.Events+1 == ref.Events && ref.Slots != nil && ref.Slots[slot] == sb.MemberUUID.Tag()
}

// slotIn is the slot sb's device holds in the array as ref describes it: its own index, except
// for a raid1 member one update behind a change of its copies (CopiesPlan) that renumbered the
// slots: the update it missed moved it to the slot where ref's table names it.
func slotIn(sb, ref *Superblock) uint32 {
	if sb.Members != ref.Members && sb.Events+1 == ref.Events && ref.Level == mapping.RAID1 {
		if j := slices.Index(ref.Slots, sb.MemberUUID.Tag()); j >= 0 {
			return uint32(j)
		}
	}
	return sb.Index
}

// checkMembersReadable rejects input that is unusable before members are compared.
func checkMembersReadable(members []MemberSB) error {
	var errs []error
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if seen[m.Path] {
			errs = append(errs, fmt.Errorf("member %s is named twice: name each device once", m.Path))
			continue
		}
		seen[m.Path] = true
		if m.SB == nil {
			errs = append(errs, fmt.Errorf("member %s: no superblock was read", m.Path))
			continue
		}
		if err := m.SB.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", m.Path, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("assemble: %w", errors.Join(errs...))
	}
	return nil
}

// majorityArray returns the members of the array most of the given devices
// belong to, in input order. A tie goes to the array holding the member
// with the highest event count, then to the one named first.
func majorityArray(members []MemberSB) []MemberSB {
	byUUID := make(map[UUID][]MemberSB)
	var order []UUID
	for _, m := range members {
		if _, ok := byUUID[m.SB.ArrayUUID]; !ok {
			order = append(order, m.SB.ArrayUUID)
		}
		byUUID[m.SB.ArrayUUID] = append(byUUID[m.SB.ArrayUUID], m)
	}
	maxEvents := func(g []MemberSB) uint64 {
		var e uint64
		for _, m := range g {
			e = max(e, m.SB.Events)
		}
		return e
	}
	best := byUUID[order[0]]
	for _, u := range order[1:] {
		g := byUUID[u]
		if len(g) > len(best) || len(g) == len(best) && maxEvents(g) > maxEvents(best) {
			best = g
		}
	}
	return best
}

// Geometry fields that must agree across members, in the order they are
// reported.
const (
	geoLevel    = "level"
	geoLayout   = "layout"
	geoChunk    = "chunk size"
	geoMembers  = "member count"
	geoDataSize = "data size"
	geoDataOff  = "data offset"
)

// assemblyGeometryDiff names the first array-wide geometry field in which sb and
// ref differ, or returns "" when they agree.
func assemblyGeometryDiff(sb, ref *Superblock) string {
	switch {
	case sb.Level != ref.Level:
		return geoLevel
	case sb.Layout != ref.Layout:
		return geoLayout
	case sb.ChunkSize != ref.ChunkSize:
		return geoChunk
	case sb.Members != ref.Members:
		return geoMembers
	case sb.DataSize != ref.DataSize:
		return geoDataSize
	case sb.DataOffset != ref.DataOffset:
		// Every member is served at one offset: a member whose data starts elsewhere would be
		// read and written at the wrong place.
		return geoDataOff
	}
	return ""
}

func describeGeometryField(sb *Superblock, field string) string {
	switch field {
	case geoLevel:
		return fmt.Sprintf("level %s", sb.Level.ShortName())
	case geoLayout:
		return fmt.Sprintf("layout %q", sb.Layout)
	case geoChunk:
		return fmt.Sprintf("chunk size %d", sb.ChunkSize)
	case geoMembers:
		return fmt.Sprintf("member count %d", sb.Members)
	case geoDataSize:
		return fmt.Sprintf("data size %d", sb.DataSize)
	case geoDataOff:
		return fmt.Sprintf("data offset %d", sb.DataOffset)
	}
	return ""
}

// duplicateIndexError explains claimants of one slot that carry the same event count (an older
// claimant is superseded, not an error).
func duplicateIndexError(index uint32, claim []MemberSB) error {
	hint := "they carry the same events but are different members, so neither is known to be the slot's: leave all but one out"
	if !slices.ContainsFunc(claim[1:], func(m MemberSB) bool { return m.SB.MemberUUID != claim[0].SB.MemberUUID }) {
		hint = "they carry the same member UUID and events: is one device named twice under different paths? name it once"
	}
	return fmt.Errorf("members %s all claim index %d: %w: %s", memberPaths(claim), index, ErrDuplicateIndex, hint)
}

func memberPaths(ms []MemberSB) string {
	p := make([]string, len(ms))
	for i, m := range ms {
		p[i] = m.Path
	}
	return strings.Join(p, ", ")
}
