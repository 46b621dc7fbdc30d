package raid

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/bytesize"
	"uraid/internal/fsprobe"
	"uraid/mapping"
)

// CreateOptions describe a new array.
type CreateOptions struct {
	Name   string
	Level  mapping.Level
	Layout mapping.Layout // RAID10 only; mapping.NoLayout picks n2, md's default
	// Chunk is the stripe unit of RAID0 and RAID10 in bytes; 0 picks mapping.DefaultChunkBytes.
	Chunk int64
	// Size is the bytes of each member to use, superblock area included. A member path that does
	// not exist is created as a sparse file of Size bytes; 0 uses each existing member whole.
	Size int64
	// Members are the member paths, in slot order; MissingMember leaves its slot empty (a raid1
	// or raid10 created degraded, for uraid add to fill).
	Members []string
	// Spares are hot spares: each takes a failed member's place by itself. They get a superblock
	// of the array and hold no data until then.
	Spares []string
	// Force overwrites members that carry a uraid superblock or any signature, without looking.
	Force bool
}

// MissingMember, given as a member, leaves its slot empty: the array is created degraded, as
// mdadm's "missing" does. A file of that name is given as ./missing.
const MissingMember = "missing"

// minData is the least data a member must hold: anything smaller is a mistake, not an array.
const minData = 1 << 20

// Errors of Create, wrapped in messages that name the member and the fix.
var (
	ErrHasSuperblock = errors.New("already a uraid member")
	ErrHasFilesystem = errors.New("holds a filesystem")
	ErrTooSmall      = errors.New("too small")
	ErrDuplicate     = errors.New("named twice")
	ErrBadGeometry   = errors.New("invalid geometry")
	ErrSizeMismatch  = errors.New("members differ in size")
)

// Create checks every member and spare and the geometry, and only when all is well creates the
// missing member files and writes a superblock to every member: PlanCreate, then Commit. When it
// refuses, or a write fails, no member has changed. The members are returned open and locked,
// slots first and then spares, with their superblocks (a spare's Role says so); the caller serves
// or closes them. A slot given as MissingMember has a nil member and superblock.
func Create(o CreateOptions) ([]*Member, []*Superblock, error) {
	p, err := PlanCreate(o)
	if err != nil {
		return nil, nil, err
	}
	c, err := p.Commit()
	if err != nil {
		return nil, nil, err
	}
	return c.Members, c.Superblocks, nil
}

// CreatePlan is a create that passed every check of its members and geometry and has written
// nothing yet: its existing members are open and locked, and it has saved the metadata area
// (superblock and region map, up to DefaultDataOffset) of each. The caller makes its own checks
// (that the array can be served at all) and then commits or aborts it.
type CreatePlan struct {
	o        CreateOptions
	all      []string           // members (but the missing), then spares
	absent   []bool             // by slot: given as MissingMember
	open     map[string]*Member // the members that exist, by path
	toMake   []string           // member files to make
	dataSize int64
	saved    map[string]*Metadata // the metadata area of each existing member as it was
}

// createFault, set only by tests, is asked before each write of a create (step: "make PATH" or
// "superblock PATH") and fails that write when it returns an error, so that a test can stop a
// create at every write and see it undone.
var createFault func(step string) error

func faultAt(step string) error {
	if createFault == nil {
		return nil
	}
	return createFault(step)
}

// PlanCreate checks every member and spare and the geometry, and writes nothing.
func PlanCreate(o CreateOptions) (*CreatePlan, error) {
	if err := ValidateName(o.Name); err != nil {
		return nil, err
	}
	if err := checkCreateGeometry(&o); err != nil {
		return nil, err
	}
	var members []*Member
	fail := func(err error) (*CreatePlan, error) {
		closeMembers(members)
		return nil, err
	}
	seen := map[string]string{}
	var toMake []string // member files that do not exist yet
	var found []os.FileInfo
	var foundPath []string
	absent, err := checkMissing(&o)
	if err != nil {
		return nil, err
	}
	var all []string // the paths: members, then spares
	for i, p := range o.Members {
		if !absent[i] {
			all = append(all, p)
		}
	}
	all = append(all, o.Spares...)
	for _, p := range all {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fail(fmt.Errorf("member %s: %w", p, err))
		}
		if prev, dup := seen[abs]; dup {
			return fail(fmt.Errorf("member %s: %w (also given as %s): list each member once", p, ErrDuplicate, prev))
		}
		seen[abs] = p
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			if o.Size == 0 {
				return fail(fmt.Errorf("member %s does not exist: give --size to create it as a sparse file", p))
			}
			if err := checkCanMake(p); err != nil {
				return fail(err)
			}
			toMake = append(toMake, p)
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("member %s: %w", p, err))
		}
		// Checked before any open: a second open of the same file would fail its lock first and
		// blame another process.
		for i, prev := range found {
			if os.SameFile(prev, fi) {
				return fail(fmt.Errorf("member %s: %w: it is the same disk as %s; list each member once", p, ErrDuplicate, foundPath[i]))
			}
		}
		found, foundPath = append(found, fi), append(foundPath, p)
	}
	for _, p := range all {
		if slices.Contains(toMake, p) {
			continue
		}
		m, err := OpenMember(p)
		if err != nil {
			return fail(err)
		}
		members = append(members, m)
		if err := CheckFresh(m, o.Force); err != nil {
			return fail(err)
		}
	}

	var slotMembers []*Member
	for _, m := range members {
		if slices.Contains(o.Members, m.Path) {
			slotMembers = append(slotMembers, m)
		}
	}
	dataSize, err := dataSizeOf(&o, slotMembers)
	if err != nil {
		return fail(err)
	}
	if err := checkMirrorSizes(&o, slotMembers); err != nil {
		return fail(err)
	}
	for _, m := range members {
		if !slices.Contains(o.Members, m.Path) && m.Size < DefaultDataOffset+dataSize {
			return fail(fmt.Errorf("spare %s: %w: %d bytes, the array's members need %d; give a larger spare", m.Path, ErrTooSmall, m.Size, DefaultDataOffset+dataSize))
		}
	}
	gm, err := geometryMap(&o, dataSize)
	if err != nil {
		return fail(err)
	}
	if slot := lostWithout(gm, absent); slot >= 0 {
		return fail(fmt.Errorf("%w: slot %d is missing along with every other copy of some of its data: level %s needs one copy of each byte; "+
			"leave at most one slot of each mirror set missing (give a device for slot %d)", ErrBadGeometry, slot, o.Level.ShortName(), slot))
	}
	p := &CreatePlan{o: o, all: all, absent: absent, open: map[string]*Member{}, toMake: toMake, dataSize: dataSize, saved: map[string]*Metadata{}}
	for _, m := range members {
		// Up to the data: create writes only the superblock, but the daemon's start writes the
		// region map after it, so that a start that fails is undone too.
		md, err := SaveMetadata(m, DefaultDataOffset)
		if err != nil {
			return fail(err)
		}
		p.open[m.Path], p.saved[m.Path] = m, md
	}
	return p, nil
}

// checkCanMake refuses a member file create could not make: its directory (or the nearest one
// that exists) must be writable.
func checkCanMake(p string) error {
	dir := filepath.Dir(p)
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("member %s: cannot make it: %s is not a directory", p, dir)
			}
			if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("member %s: cannot make it in %s: %w; run as root or pick a directory you may write", p, dir, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(dir) == dir {
			return fmt.Errorf("member %s: %w", p, err)
		}
		dir = filepath.Dir(dir)
	}
}

// Abort closes the plan's members; nothing was written.
func (p *CreatePlan) Abort() {
	for _, m := range p.open {
		m.Close()
	}
}

// Created is a committed create: its members, open and locked, slots first and then spares, with
// their superblocks, and what Undo needs to put every member back as it was.
type Created struct {
	Members     []*Member
	Superblocks []*Superblock
	made        []string             // member files create made
	dirs        []string             // directories create made for them, outermost first
	saved       map[string]*Metadata // the metadata area of each member that existed
	touched     map[string]bool      // the members of saved written to (undo restores only these)
}

// Commit makes the missing member files and writes every superblock. When a write fails it undoes
// what it did (the superblock areas written get back their bytes, the files and directories it
// made are removed), closes the plan's members and returns the write's error. On success Created
// holds the members.
func (p *CreatePlan) Commit() (*Created, error) {
	c := &Created{saved: p.saved, touched: map[string]bool{}}
	byPath := map[string]*Member{}
	var made []*Member
	fail := func(err error) (*Created, error) {
		if uerr := c.undo(byPath); uerr != nil {
			err = fmt.Errorf("%w; undoing the create failed too, the members may be changed: %v", err, uerr)
		} else {
			err = fmt.Errorf("%w (every member is as it was)", err)
		}
		closeMembers(made)
		p.Abort()
		return nil, err
	}
	for path, m := range p.open {
		byPath[path] = m
	}
	for _, path := range p.toMake {
		if err := faultAt("make " + path); err != nil {
			return fail(fmt.Errorf("member %s: %w", path, err))
		}
		dirs, err := makeDirs(filepath.Dir(path))
		c.dirs = append(c.dirs, dirs...)
		if err != nil {
			return fail(fmt.Errorf("member %s: %w", path, err))
		}
		m, err := createSparse(path, p.o.Size)
		if err != nil {
			return fail(err)
		}
		c.made = append(c.made, path)
		byPath[path] = m
		made = append(made, m)
	}
	sbs, err := newSuperblocks(&p.o, p.dataSize)
	if err != nil {
		return fail(err)
	}
	for i, a := range p.absent {
		if a {
			sbs[0].Slots[i] = 0 // one table, shared by every superblock: no device in service there
		}
	}
	ref := sbs[slices.Index(p.absent, false)] // a present slot's: checkMissing leaves one
	for range p.o.Spares {
		sp := *ref
		if sp.MemberUUID, err = NewUUID(); err != nil {
			return fail(err)
		}
		sp.Index, sp.Role = 0, RoleSpare
		sbs = append(sbs, &sp)
	}
	// Slot order, then spares; a missing slot has neither member nor superblock.
	members := make([]*Member, len(sbs))
	paths := slices.Clone(p.o.Members)
	paths = append(paths, p.o.Spares...)
	for i, path := range paths {
		if i < len(p.absent) && p.absent[i] {
			sbs[i] = nil
			continue
		}
		members[i] = byPath[path]
		if err := faultAt("superblock " + path); err != nil {
			return fail(fmt.Errorf("member %s: %w", path, err))
		}
		c.touched[path] = true
		if err := WriteSuperblock(members[i].File, sbs[i]); err != nil {
			return fail(fmt.Errorf("member %s: %w", path, err))
		}
	}
	c.Members, c.Superblocks = members, sbs
	return c, nil
}

// Close closes the members.
func (c *Created) Close() { closeMembers(c.Members) }

// Undo puts every member back as it was before the create: the metadata area of each member that
// existed gets back its bytes, the member files and directories create made are removed. It is
// for a create whose array never served: the caller has closed the members (and the daemon that
// failed to start has let go of them).
func (c *Created) Undo() error { return c.undo(nil) }

// undo restores through the open members in open, opening by path those it lacks.
func (c *Created) undo(open map[string]*Member) error {
	var errs []error
	for path, saved := range c.saved {
		if !c.touched[path] {
			continue
		}
		m := open[path]
		if m == nil {
			var err error
			if m, err = OpenMember(path); err != nil {
				errs = append(errs, err)
				continue
			}
			defer m.Close()
		}
		if err := saved.Restore(m); err != nil {
			errs = append(errs, err)
		}
	}
	for _, path := range c.made {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("member %s: remove the file create made: %w", path, err))
		}
	}
	for i := len(c.dirs) - 1; i >= 0; i-- {
		if err := os.Remove(c.dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the directory create made: %w", err))
		}
	}
	return errors.Join(errs...)
}

// makeDirs makes dir and its missing parents, and returns those it made, outermost first.
func makeDirs(dir string) ([]string, error) {
	var todo []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		todo = append([]string{d}, todo...)
	}
	var made []string
	for _, d := range todo {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return made, err
		} else if err == nil {
			made = append(made, d)
		}
	}
	return made, nil
}

func closeMembers(ms []*Member) {
	for _, m := range ms {
		if m != nil {
			m.Close()
		}
	}
}

// checkMissing finds the slots given as MissingMember and refuses them where the array could not
// run without them: a level without redundancy, a spare, every slot.
func checkMissing(o *CreateOptions) ([]bool, error) {
	absent := make([]bool, len(o.Members))
	n := 0
	for i, p := range o.Members {
		if p == MissingMember {
			absent[i] = true
			n++
		}
	}
	if slices.Contains(o.Spares, MissingMember) {
		return nil, fmt.Errorf("%w: a spare cannot be %q: give a device, or ./missing for a file of that name", ErrBadGeometry, MissingMember)
	}
	if n == 0 {
		return absent, nil
	}
	if !o.Level.Redundant() {
		return nil, fmt.Errorf("%w: member %q: level %s keeps one copy of each byte, so no slot can be left empty; "+
			"use level 1 or 10, give every member, or ./missing for a file of that name", ErrBadGeometry, MissingMember, o.Level.ShortName())
	}
	if n == len(o.Members) {
		return nil, fmt.Errorf("%w: every member is %q: give at least one device", ErrBadGeometry, MissingMember)
	}
	return absent, nil
}

// lostWithout returns a missing slot without which some data of m would have no copy, -1 when
// every byte has one on a present member. It looks at one piece of each placement of copies the
// layout makes (one row of chunks per member pair covers raid10's; raid1's are all alike), as
// the array does when it decides it can serve.
func lostWithout(m *mapping.Map, absent []bool) int {
	if !slices.Contains(absent, true) {
		return -1
	}
	var pieces [1]mapping.Piece
	unit := m.ChunkBytes()
	if unit <= 0 {
		unit = mapping.SectorBytes
	}
	rows := min(m.Size()/unit, int64(2*m.Members()))
	for c := range rows {
		ps, err := m.Read(c*unit, unit, pieces[:0])
		if err != nil || len(ps) == 0 {
			return slices.Index(absent, true)
		}
		last := -1
		for _, e := range ps[0].Copies[:ps[0].N] {
			if !absent[e.Member] {
				last = -1
				break
			}
			last = e.Member
		}
		if last >= 0 {
			return last
		}
	}
	return -1
}

func checkCreateGeometry(o *CreateOptions) error {
	n := len(o.Members)
	if !o.Level.Valid() {
		return fmt.Errorf("%w: unknown level; use linear, 0, 1 or 10", ErrBadGeometry)
	}
	// A mirror of one member has no second copy: a mistake, not an array.
	least := 1
	if o.Level.Redundant() {
		least = 2
	}
	if n < least {
		return fmt.Errorf("%w: level %s needs at least %d members, got %d", ErrBadGeometry, o.Level.ShortName(), least, n)
	}
	if n > mapping.MaxMembers {
		return fmt.Errorf("%w: %d members, at most %d are supported; split them over several arrays",
			ErrBadGeometry, n, mapping.MaxMembers)
	}
	if !o.Layout.Valid() {
		return fmt.Errorf("%w: unknown layout; use n2, f2 or o2", ErrBadGeometry)
	}
	if !o.Level.HasLayout() && o.Layout != mapping.NoLayout {
		return fmt.Errorf("%w: --layout applies to level 10 only", ErrBadGeometry)
	}
	if o.Level.HasLayout() && o.Layout == mapping.NoLayout {
		o.Layout = mapping.Near2
	}
	if !o.Level.Striped() {
		if o.Chunk != 0 {
			return fmt.Errorf("%w: --chunk applies to levels 0 and 10 only", ErrBadGeometry)
		}
		return nil
	}
	if o.Chunk == 0 {
		o.Chunk = mapping.DefaultChunkBytes
	}
	if o.Chunk < mapping.MinChunkBytes || o.Chunk > mapping.MaxChunkBytes || o.Chunk&(o.Chunk-1) != 0 {
		return fmt.Errorf("%w: chunk %d bytes: use a power of two from 4K to 1G, e.g. --chunk 512K", ErrBadGeometry, o.Chunk)
	}
	if o.Size < 0 {
		return fmt.Errorf("%w: negative --size", ErrBadGeometry)
	}
	return nil
}

// CheckFresh refuses a member that holds something a user may still want: a uraid superblock (of
// any array, or one this uraid cannot read), or any signature blkid finds (CheckSignatures),
// unless force. Create checks every
// member with it, and a replace its new device.
func CheckFresh(m *Member, force bool) error {
	if force {
		return nil
	}
	if sb, err := ReadSuperblock(m.File); err == nil {
		return fmt.Errorf("member %s: %w of array %s (%s); stop that array, or give --force to overwrite it",
			m.Path, ErrHasSuperblock, sb.Name, sb.ArrayUUID)
	} else if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedVersion) {
		return fmt.Errorf("member %s: %w (%v); give --force to overwrite it", m.Path, ErrHasSuperblock, err)
	}
	return CheckSignatures(m, false)
}

// FilesystemOn recognises the filesystems most likely to be destroyed by mistake (ext2/3/4, xfs,
// btrfs; fsprobe knows their superblocks) at the start of f and names the one found, "" for none
// or when f cannot be read.
func FilesystemOn(f *os.File) string {
	kind, _, err := fsprobe.Size(f)
	if err != nil {
		return ""
	}
	return kind
}

// mirrorSizeSlack is how much larger than the smallest a mirror's member may be before create
// asks for --force: a mirror uses the smallest member's size of each, so the rest of a larger one
// is never used, and a mix of one small disk among large ones is more often a wrong disk than a
// choice.
const mirrorSizeSlack = 10 // percent

// checkMirrorSizes refuses, without --force, a raid1 or raid10 whose members differ in size by more
// than mirrorSizeSlack, and says how much of them would lie unused. A --size says how much of each
// member to use, and so that the rest is meant to be left.
func checkMirrorSizes(o *CreateOptions, members []*Member) error {
	if !o.Level.Redundant() || o.Force || o.Size != 0 || len(members) < 2 {
		return nil
	}
	small, large := members[0], members[0]
	var total int64
	for _, m := range members {
		if m.Size < small.Size {
			small = m
		}
		if m.Size > large.Size {
			large = m
		}
		total += m.Size
	}
	if (large.Size-small.Size)*100 <= large.Size*mirrorSizeSlack {
		return nil
	}
	lost := total - small.Size*int64(len(members))
	return fmt.Errorf("%w by more than %d%%: the smallest, %s, has %s and the largest, %s, %s; level %s uses %s of each, "+
		"so %s of the members' %s would never be used (%d%%); use members of one size, --size to say how much of each to use, "+
		"or --force to create it anyway", ErrSizeMismatch, mirrorSizeSlack, small.Path, bytesize.Format(small.Size), large.Path,
		bytesize.Format(large.Size), o.Level.ShortName(), bytesize.Format(small.Size), bytesize.Format(lost), bytesize.Format(total), lost*100/total)
}

// dataSizeOf picks the data bytes every member holds: what the smallest member (or --size) has
// past the data offset, in whole sectors.
func dataSizeOf(o *CreateOptions, members []*Member) (int64, error) {
	size := o.Size
	for _, m := range members {
		if o.Size > m.Size {
			return 0, fmt.Errorf("member %s: %w: %d bytes, --size asks for %d; give a smaller --size", m.Path, ErrTooSmall, m.Size, o.Size)
		}
		if size == 0 || m.Size < size {
			size = m.Size
		}
	}
	data := (size - DefaultDataOffset) &^ (mapping.SectorBytes - 1)
	if data < minData {
		who := "--size"
		for _, m := range members {
			if m.Size == size {
				who = "member " + m.Path
			}
		}
		return 0, fmt.Errorf("%s: %w: %d bytes leaves %d bytes of data after the %d-byte superblock area; members need at least %d bytes",
			who, ErrTooSmall, size, max(data, 0), DefaultDataOffset, DefaultDataOffset+minData)
	}
	return data, nil
}

func geometryMap(o *CreateOptions, dataSize int64) (*mapping.Map, error) {
	m, err := mapping.New(mappingGeometry(o.Level, o.Layout, o.Chunk, len(o.Members), dataSize))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadGeometry, err)
	}
	return m, nil
}

func createSparse(path string, size int64) (*Member, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", path, err)
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("member %s: %w", path, err)
	}
	m, err := OpenMember(path)
	if err != nil {
		os.Remove(path)
	}
	return m, err
}

func newSuperblocks(o *CreateOptions, dataSize int64) ([]*Superblock, error) {
	id, err := NewUUID()
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	sbs := make([]*Superblock, len(o.Members))
	slots := make([]uint64, len(o.Members))
	for i := range sbs {
		mid, err := NewUUID()
		if err != nil {
			return nil, err
		}
		slots[i] = mid.Tag()
		sbs[i] = &Superblock{
			ArrayUUID: id, Name: o.Name, Level: o.Level, Layout: o.Layout,
			ChunkSize: uint64(o.Chunk), Members: uint32(len(o.Members)), Index: uint32(i),
			MemberUUID: mid, DataOffset: DefaultDataOffset, DataSize: uint64(dataSize),
			Events: 1, State: StateClean, CreateTime: now, UpdateTime: now, Slots: slots,
		}
	}
	return sbs, nil
}
