package reshape

import (
	"fmt"

	"uraid/internal/plant"
	"uraid/mapping"
)

// DefaultMaxWindowBytes caps one step when Config leaves it 0: the array
// range whose writes park meanwhile, and at most the memory a step needs.
const DefaultMaxWindowBytes = 64 << 20

// Config tunes a reshape. The zero value is ready.
type Config struct {
	// MaxWindowBytes caps the array bytes one step moves, backup steps
	// included. It is rounded down to whole units (Unit) and is at least
	// one unit; 0 selects DefaultMaxWindowBytes.
	MaxWindowBytes int64
}

// Reshape is the plan of one reshape from an old geometry to a wider one. It
// is immutable after New and safe for concurrent use.
type Reshape struct {
	from, to   *mapping.Map
	oldN, newN int
	chunk      int64
	// unit is the cursor's grain in array bytes: the fewest whole rows of
	// the new layout that hold whole chunks (one row for raid0 and for n2
	// over an even count, two rows for o2 and for n2 over an odd count,
	// where a row ends half-way through a chunk's pair).
	unit        int64
	rowsPerUnit int64
	// end is where the cursor stops: the old size rounded up to a unit.
	// Bytes in [from.Size(), end) are new space, dead by definition.
	end       int64
	maxWindow int64 // whole units
	// The backup area: rows [backupRow, backupRow+backupRows) of every new
	// member (oldN..newN-1), striped a chunk per member. It holds
	// backupUnits units.
	backupRow, backupRows int64
	backupUnits           int64
}

// New checks a reshape from the geometry from to the geometry to and plans
// it. from is the array as it stands: every member's data size (the
// superblocks' one number, so all equal). to lists the same members first,
// in the same order, then the new ones, each with the data space it offers
// at the same data offset; the array keeps its data size, so the new ones
// must be at least that large. The level, layout and chunk stay.
func New(from, to mapping.Geometry, cfg Config) (*Reshape, error) {
	if err := checkLevels(from, to); err != nil {
		return nil, err
	}
	n, m := len(from.MemberBytes), len(to.MemberBytes)
	if n == 0 {
		return nil, fmt.Errorf("reshape: %w: the old geometry has no members", ErrGeometry)
	}
	data := from.MemberBytes[0]
	for i, b := range from.MemberBytes {
		if b != data {
			return nil, fmt.Errorf("reshape: %w: old member %d has %d data bytes and member 0 %d: an array's members share one data size (read it from the superblock, not the devices)", ErrGeometry, i, b, data)
		}
	}
	if m <= n {
		return nil, fmt.Errorf("reshape: %w: %d members to %d: a reshape only adds members (give the new devices after the old ones; removing members is not supported)", ErrUnsupported, n, m)
	}
	for i, b := range to.MemberBytes {
		if b < data {
			return nil, fmt.Errorf("reshape: %w: member %d offers %d data bytes, less than the array's data size %d (use a device at least as large as the members, or shrink the array first)", ErrGeometry, i, b, data)
		}
	}
	r := &Reshape{oldN: n, newN: m}
	var err error
	if r.from, err = mapping.New(from); err != nil {
		return nil, fmt.Errorf("reshape: old geometry: %w", err)
	}
	same := mapping.Geometry{Level: to.Level, Layout: to.Layout, ChunkBytes: to.ChunkBytes, MemberBytes: make([]int64, m)}
	for i := range same.MemberBytes {
		same.MemberBytes[i] = data
	}
	if r.to, err = mapping.New(same); err != nil {
		return nil, fmt.Errorf("reshape: new geometry: %w", err)
	}
	r.chunk = r.to.ChunkBytes()
	copies := int64(r.to.Copies())
	unitChunks := int64(m)
	if copies == 2 && to.Layout == mapping.Near2 && m%2 == 0 {
		unitChunks = int64(m) / 2
	}
	r.unit = unitChunks * r.chunk
	r.rowsPerUnit = unitChunks * copies / int64(m)
	r.end = (r.from.Size() + r.unit - 1) / r.unit * r.unit
	if r.end > r.to.Size() {
		return nil, fmt.Errorf("reshape: %w: the old array's %d bytes, rounded up to the new %d-byte row, pass the new array's %d bytes", ErrGeometry, r.from.Size(), r.unit, r.to.Size())
	}
	r.maxWindow = max(1, cfg.MaxWindowBytes/r.unit)
	if cfg.MaxWindowBytes == 0 {
		r.maxWindow = max(1, DefaultMaxWindowBytes/r.unit)
	}
	if err := r.planBackup(unitChunks); err != nil {
		return nil, err
	}
	return r, nil
}

// checkLevels refuses the reshapes this package does not do.
func checkLevels(from, to mapping.Geometry) error {
	switch {
	case from.Level == mapping.Linear:
		return fmt.Errorf("reshape: %w: a linear array grows by appending members, which moves no data (uraid grow --add appends)", ErrUnsupported)
	case from.Level == mapping.RAID1:
		return fmt.Errorf("reshape: %w: a raid1's members are its copies (use uraid grow --copies N to add one)", ErrUnsupported)
	case from.Level == mapping.RAID10 && from.Layout == mapping.Far2:
		return fmt.Errorf("reshape: %w: raid10 f2 keeps its second copies from the middle of every member, so a wider f2 moves every byte twice and has no room to move them in place (create an n2 or o2 array and copy the data)", ErrUnsupported)
	case from.Level != mapping.RAID0 && from.Level != mapping.RAID10:
		return fmt.Errorf("reshape: %w: level %v", ErrUnsupported, from.Level)
	case to.Level != from.Level || to.Layout != from.Layout:
		return fmt.Errorf("reshape: %w: %v %v to %v %v: a reshape keeps the level and layout (only members are added)", ErrUnsupported, from.Level, from.Layout, to.Level, to.Layout)
	}
	if chunkOrDefault(from.ChunkBytes) != chunkOrDefault(to.ChunkBytes) {
		return fmt.Errorf("reshape: %w: chunk %d bytes to %d: a chunk change is not supported (reshape with the array's chunk, %d bytes)", ErrUnsupported, chunkOrDefault(from.ChunkBytes), chunkOrDefault(to.ChunkBytes), chunkOrDefault(from.ChunkBytes))
	}
	return nil
}

func chunkOrDefault(c int64) int64 {
	if c == 0 {
		return mapping.DefaultChunkBytes
	}
	return c
}

// planBackup sizes and places the backup area in the new members' tail,
// past every row a step writes there. The area holds the critical section
// (the units before the first safe step) if it fits, else as much of it as
// fits; each backup step then holds one area's worth.
func (r *Reshape) planBackup(unitChunks int64) error {
	rows := r.to.MemberBytes(r.oldN) / r.chunk // every member the same
	free := rows - r.rowsFor(r.end)
	newMembers := int64(r.newN - r.oldN)
	fit := free * newMembers / unitChunks
	if fit < 1 {
		return fmt.Errorf("reshape: %w: the new members keep %d free chunk rows past the reshaped data, too few for a backup of one %d-byte row of the new layout (add more members at once, or use larger members and a larger data size)", ErrGeometry, max(free, 0), r.unit)
	}
	critical := int64(1)
	for c := r.unit; c < r.end && r.safeUnits(c) == 0; c += r.unit {
		critical++
	}
	r.backupUnits = min(critical, fit, r.maxWindow)
	r.backupRows = (r.backupUnits*unitChunks + newMembers - 1) / newMembers
	r.backupRow = rows - r.backupRows
	return nil
}

// rowsFor returns how many member rows of the new layout hold the array
// bytes below x, a multiple of the unit.
func (r *Reshape) rowsFor(x int64) int64 { return x / r.unit * r.rowsPerUnit }

// safeUnits returns how many units a step from cursor c may move without a
// backup: the most units w such that every member row the step writes,
// [rowsFor(c), rowsFor(c+w*unit)), holds on each old member only array bytes
// below c (already durable in their new home) or nothing. New members hold
// nothing of the old layout. It is capped by what is left, not by the window.
func (r *Reshape) safeUnits(c int64) int64 {
	lo, hi := int64(0), (r.end-c)/r.unit
	for lo < hi { // largest w in [0, hi] with safe(c, w); safe is monotone in w
		w := (lo + hi + 1) / 2
		if r.oldBelow(r.rowsFor(c+w*r.unit)) < c {
			lo = w
		} else {
			hi = w - 1
		}
	}
	if plant.Is("reshapewindow") {
		// Planted: one unit past the safe distance. The step then overwrites
		// old places of its own window; a cut before its cursor is durable
		// redoes it from bytes it already destroyed.
		lo = min(lo+1, (r.end-c)/r.unit)
	}
	return lo
}

// oldBelow returns the largest array offset the old layout keeps in member
// rows below h on the old members, or -1 if none. The old layouts fill rows
// in order (raid0 and n2 one slot after another, o2 a row and its copy row
// with the same chunks), so the largest is in row h-1 or, for o2's pairs and
// n2's unused last slot, h-2.
func (r *Reshape) oldBelow(h int64) int64 {
	top := int64(-1)
	for row := max(0, h-2); row < h; row++ {
		for d := range r.oldN {
			top = max(top, r.from.LogicalAt(d, row*r.chunk))
		}
	}
	return top
}

// From returns the map of the old geometry; To the map of the new one, in
// which the members keep the array's data size.
func (r *Reshape) From() *mapping.Map { return r.from }

// To returns the map of the new geometry.
func (r *Reshape) To() *mapping.Map { return r.to }

// Unit returns the cursor's grain in array bytes.
func (r *Reshape) Unit() int64 { return r.unit }

// End returns the cursor's last value: the old array size rounded up to a
// unit. The array keeps serving the old size until the reshape is done.
func (r *Reshape) End() int64 { return r.end }

// MaxWindowBytes returns the most array bytes one step moves: the buffer a
// step needs.
func (r *Reshape) MaxWindowBytes() int64 { return r.maxWindow * r.unit }

// BackupBytes returns the array bytes one backup holds at most.
func (r *Reshape) BackupBytes() int64 { return r.backupUnits * r.unit }

// BackupRow returns the first chunk row of the backup area on the new
// members (members From().Members() and up).
func (r *Reshape) BackupRow() int64 { return r.backupRow }
