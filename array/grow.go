package array

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"uraid/internal/blkdiscard"
	"uraid/internal/bytesize"
	"uraid/internal/fsprobe"
	"uraid/internal/plant"
	"uraid/mapping"
	"uraid/raid"
	"uraid/region"
)

// Failpoints of a grow, one before each of its writes (docs/design.md, Growing).
const (
	// FailpointGrowTrim: the checks passed; the new space is about to be trimmed.
	FailpointGrowTrim = "grow-trim"
	// FailpointGrowMap: the new space is trimmed; the region map of the new size is about to be
	// written.
	FailpointGrowMap = "grow-map"
	// FailpointGrowCommit: the map of the new size is on the members; the superblocks with the
	// new data size are about to be written (the commit point).
	FailpointGrowCommit = "grow-commit"
)

// GrowOptions say what Grow is to do.
type GrowOptions struct {
	// Size is the array size wanted in bytes; 0 is as large as the smallest device allows.
	Size int64
	// Force shrinks the array below the filesystem found on it.
	Force bool
}

// ErrGrowBusy means the array is doing something a grow must not overlap: it is degraded, a
// sync job or a replace runs, or writes are in flight where they must not be.
var ErrGrowBusy = errors.New("array busy")

// Grow changes the array's size to what o asks for, as far as the layout allows without moving a
// byte (raid.PlanGrow), and returns what it did. It checks everything first and changes nothing
// on a refusal. Then, in this order, each step durable before the next:
//
//  1. the bytes past the old end are trimmed on every member (the bytes the old map's partial last
//     region gains are written with zeros instead, so that its copies agree as its state says);
//  2. the region map of the new size, the new regions trimmed, is written to every member;
//  3. the superblocks take the new data size: the commit point. Before it the array assembles at
//     its old size with its old map (the map blocks decide when the header is of the other
//     size); after it at the new size, with the new regions trimmed and nothing to resync.
//
// It may run while the array serves: steps 2 and 3 hold writes back (they park, as for a region a
// sync job holds) and wait for those in flight, so the map is resized with none in flight, and
// the layout changes to one that places every old byte where it was. The caller tells the kernel
// of the new size afterwards (ublk UPDATE_SIZE), and of a smaller one before (PlanGrow).
func (a *Array) Grow(o GrowOptions) (raid.GrowPlan, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	p, err := a.planGrow(o)
	if err != nil {
		return p, fmt.Errorf("grow array %s: %w", a.Name, err)
	}
	sb := a.Superblock()
	newMap, err := mapping.New(mapping.Geometry{Level: sb.Level, Layout: sb.Layout, ChunkBytes: int64(sb.ChunkSize),
		MemberBytes: growMemberBytes(len(a.members), p.NewDataSize)})
	if err != nil {
		return p, fmt.Errorf("grow array %s: %w", a.Name, err)
	}
	hit(FailpointGrowTrim)
	if p.NewSize > p.OldSize {
		// Nothing reaches these bytes yet: the device ends before them.
		if err := a.clearNewSpace(newMap, p); err != nil {
			return p, fmt.Errorf("grow array %s: new space: %w (nothing changed: the array keeps its size)", a.Name, err)
		}
	}
	if a.regions != nil {
		a.regions.holdWrites()
		defer a.regions.releaseWrites()
		if err := a.regions.resize(p.NewSize); err != nil {
			return p, fmt.Errorf("grow array %s: region map: %w (the array keeps its size)", a.Name, err)
		}
	}
	hit(FailpointGrowCommit)
	a.sbMu.Lock()
	oldData := a.sb.DataSize
	a.sb.DataSize = uint64(p.NewDataSize)
	st := a.sb.State
	a.sbMu.Unlock()
	if err := a.writeSuperblocks(st); err != nil {
		// Some members may have the new size: the next assemble takes the newest. This run
		// keeps serving the old size, which is inside both.
		a.sbMu.Lock()
		a.sb.DataSize = oldData
		a.sbMu.Unlock()
		return p, fmt.Errorf("grow array %s: superblocks: %w", a.Name, err)
	}
	a.mp.Store(newMap)
	a.log.Info("grown", "old_size", p.OldSize, "new_size", p.NewSize, "data_size", p.NewDataSize)
	return p, nil
}

// PlanGrow is what Grow would do now, without doing any of it.
func (a *Array) PlanGrow(o GrowOptions) (raid.GrowPlan, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	p, err := a.planGrow(o)
	if err != nil {
		return p, fmt.Errorf("grow array %s: %w", a.Name, err)
	}
	return p, nil
}

func growMemberBytes(n int, dataSize int64) []int64 {
	b := make([]int64, n)
	for i := range b {
		b[i] = dataSize
	}
	return b
}

// planGrow checks that the array can grow now and plans it. Under adminMu.
func (a *Array) planGrow(o GrowOptions) (raid.GrowPlan, error) {
	sb := a.Superblock()
	if a.reshaping() != nil {
		return raid.GrowPlan{}, fmt.Errorf("%w: %w: the array grows by itself when the reshape is done", ErrGrowBusy, ErrReshaping)
	}
	if a.Degraded() {
		return raid.GrowPlan{}, fmt.Errorf("%w: it is degraded: bring every member back (uraid add) and let the rebuild finish first", ErrGrowBusy)
	}
	if a.syncer != nil {
		if job := a.syncer.busyWith(); job != "" {
			return raid.GrowPlan{}, fmt.Errorf("%w: a %s runs: wait for it (uraid wait) first", ErrGrowBusy, job)
		}
		if c := a.regions.cursor(); c.Action != region.ActionNone {
			return raid.GrowPlan{}, fmt.Errorf("%w: a %s stopped at region %d is to resume: let it finish first", ErrGrowBusy, c.Action, c.Position)
		}
	}
	var devs []raid.MemberSize
	a.membersMu.Lock()
	for _, m := range a.shadowMembers {
		if m != nil {
			a.membersMu.Unlock()
			return raid.GrowPlan{}, fmt.Errorf("%w: a replace runs: wait for it (uraid wait) first", ErrGrowBusy)
		}
	}
	var errs []error
	for i, list := range [][]*raid.Member{a.members, a.spares} {
		for _, m := range list {
			size, err := deviceSize(m)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m.Path, err))
			}
			devs = append(devs, raid.MemberSize{Path: m.Path, Size: size, Spare: i == 1})
		}
	}
	a.membersMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return raid.GrowPlan{}, err
	}
	p, err := raid.PlanGrow(&sb, devs, o.Size)
	if err != nil {
		return p, err
	}
	if p.Shrinks() {
		kind, size, err := fsprobe.Size(a.reader())
		if err != nil {
			return p, fmt.Errorf("looking for a filesystem before shrinking: %w", err)
		}
		if kind != "" && size > p.NewSize && !o.Force {
			return p, fmt.Errorf("%w: the array holds %s of %s (%d bytes), larger than %s (%d bytes): shrinking would cut "+
				"its end off; shrink the filesystem first (resize2fs, btrfs filesystem resize; xfs cannot shrink), "+
				"or give --force if it is not in use", raid.ErrGrow, kind, bytesize.Format(size), size,
				bytesize.Format(p.NewSize), p.NewSize)
		}
	}
	return p, nil
}

// deviceSize is a member's size now: a device or file may have grown since it was opened.
func deviceSize(m *raid.Member) (int64, error) {
	if m.Block {
		n, err := unix.IoctlGetUint64(int(m.File.Fd()), unix.BLKGETSIZE64)
		if err != nil {
			return 0, os.NewSyscallError("ioctl BLKGETSIZE64", err)
		}
		return int64(n), nil
	}
	fi, err := m.File.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// clearNewSpace makes the array's bytes from the old end to the new one hold nothing of anyone:
// those the old last region gains are written with zeros on every copy (that region keeps its
// state, which may say its copies agree), the rest are trimmed on every member. Durable on return.
func (a *Array) clearNewSpace(m *mapping.Map, p raid.GrowPlan) error {
	zeroEnd := p.OldSize
	if a.regions != nil {
		rs := p.RegionSize
		zeroEnd = min(p.NewSize, (p.OldSize+rs-1)/rs*rs)
	}
	if zeroEnd > p.OldSize {
		ext, err := m.Write(p.OldSize, zeroEnd-p.OldSize, nil)
		if err != nil {
			return err
		}
		for _, e := range ext {
			if err := a.zeroMember(e); err != nil {
				return err
			}
		}
	}
	if plant.Is("growtrim") {
		// The planted defect: the trim begins a mebibyte below the old end, in the user's data.
		zeroEnd = max(0, p.OldSize-1<<20)
	}
	if zeroEnd < p.NewSize {
		ext, err := m.Discard(zeroEnd, p.NewSize-zeroEnd, nil, nil)
		if err != nil {
			return err
		}
		for _, e := range ext {
			if err := a.trimMember(e); err != nil {
				return err
			}
		}
	}
	for _, mem := range a.members {
		if err := mem.File.Sync(); err != nil {
			return fmt.Errorf("member %s: %w", mem.Path, err)
		}
	}
	return nil
}

func (a *Array) zeroMember(e mapping.Extent) error {
	mem := a.members[e.Member]
	const step = 1 << 20
	buf := raid.AlignedBytes(step)
	for off := int64(0); off < e.Length; off += step {
		n := min(step, e.Length-off)
		if _, err := mem.File.WriteAt(buf[:n], a.dataOff[e.Member]+e.Offset+off); err != nil {
			return fmt.Errorf("member %s: write zeros: %w", mem.Path, err)
		}
	}
	return nil
}

// trimMember discards e on its member. A member that cannot discard keeps whatever it held
// there: the region map's Trimmed promises nothing about the bytes, only that none is the user's.
func (a *Array) trimMember(e mapping.Extent) error {
	return a.trimAt(a.members[e.Member], a.dataOff[e.Member]+e.Offset, e.Length)
}

// trimAt discards length bytes of mem at off (a member's offset, not the data area's), as
// trimMember does.
func (a *Array) trimAt(mem *raid.Member, off, length int64) error {
	var err error
	if mem.Block {
		err = blkdiscard.Ioctl(int(mem.File.Fd()), off, length)
	} else {
		err = unix.Fallocate(int(mem.File.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length)
		if err != nil {
			err = os.NewSyscallError("fallocate", err)
		}
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) {
		a.log.Info("member cannot discard; its new space keeps what it held", "member", mem.Path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("member %s: trim [%d, +%d): %w", mem.Path, off, length, err)
	}
	return nil
}

// reader reads the array's bytes from its members (the first copy in service), for looking at
// what the array holds when it does not serve.
func (a *Array) reader() readerAt { return readerAt{a} }

type readerAt struct{ a *Array }

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	a := r.a
	if off < 0 || off >= a.Map().Size() {
		return 0, io.EOF
	}
	n := min(int64(len(p)), a.Map().Size()-off)
	pieces, err := a.Map().Read(off, n, nil)
	if err != nil {
		return 0, err
	}
	for _, pc := range pieces {
		e := pc.Copies[0]
		buf := raid.AlignedBytes(int(e.Length))
		if _, err := a.members[e.Member].File.ReadAt(buf, a.dataOff[e.Member]+e.Offset); err != nil {
			return int(pc.Logical - off), err
		}
		copy(p[pc.Logical-off:], buf)
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// cursor is the map's job checkpoint.
func (g *regions) cursor() region.Cursor {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Cursor()
}

// resize puts the map of the array at size bytes in the place of the old one and writes it whole
// to every member, durably. No other flush runs meanwhile, and the map changes under mu, so
// nothing sees a half-resized map; a write in flight makes it refuse (region.Map.Resized).
func (g *regions) resize(size int64) error {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	g.mu.Lock()
	n, err := g.m.Resized(size)
	if err != nil {
		g.mu.Unlock()
		return err
	}
	g.m = n
	if g.fineMaps != nil {
		fine := make([][]uint64, n.Regions())
		copy(fine, g.fineMaps)
		for _, bm := range g.fineMaps[min(len(g.fineMaps), n.Regions()):] {
			g.fineBytes -= int64(len(bm)) * 8
		}
		g.fineMaps = fine
	}
	g.blocks = make([]region.Block, 0, n.Blocks())
	g.resync.Store(n.Resyncs() > 0)
	g.mu.Unlock()
	hit(FailpointGrowMap)
	return g.flushLocked(region.FlushAll, nil)
}
