package raid

import (
	"errors"
	"fmt"

	"uraid/internal/bytesize"
	"uraid/mapping"
	"uraid/region"
)

// Growing an array changes one number, the superblock's DataSize: how much of each member holds
// array data. It is possible without moving a byte only where the layout places every array byte
// by its offset alone, independently of the data size, so that the bytes past the old end are
// appended behind the old ones: raid1, raid0, raid10 n2 and o2, and linear of one member. raid10
// f2 puts its second copies at the middle of each member and linear of several members puts each
// member's bytes after the previous member's end; both move when the data size changes.
//
// The region map (raid1, raid10) describes the array in regions whose size was chosen from the
// array size (region.ChooseRegionSize). Growing keeps that size, so the blocks already on the
// members keep meaning what they meant; the array can therefore grow only as far as that region
// size is still the one ChooseRegionSize picks, 256 GiB for 1 MiB regions with the default data
// offset.

// ErrGrow is wrapped by every refusal of PlanGrow: the array cannot take the size asked for.
var ErrGrow = errors.New("cannot grow")

// MemberSize is one device of an array as a grow sees it: its path and its size now.
type MemberSize struct {
	Path  string
	Size  int64
	Spare bool
}

// GrowPlan is what a grow (or a shrink) of an array comes to. It is plain data: Array.Grow does it.
type GrowPlan struct {
	OldDataSize, NewDataSize int64 // bytes of each member's data area
	OldSize, NewSize         int64 // bytes of the array
	// Asked is the array size asked for (0: as large as the members allow); Rounded says it
	// was not a size the layout can have, and NewSize is the largest one below it.
	Asked   int64
	Rounded bool
	// RegionSize is the region map's (0 for levels without one); it stays.
	RegionSize int64
}

// Shrinks reports whether the plan makes the array smaller.
func (p GrowPlan) Shrinks() bool { return p.NewSize < p.OldSize }

// Growable reports whether an array of this layout can change its data size without moving a
// byte, and why not.
func Growable(level mapping.Level, layout mapping.Layout, members int) error {
	switch {
	case level == mapping.RAID10 && layout == mapping.Far2:
		return fmt.Errorf("%w: raid10 f2 keeps its second copies from the middle of each member: a new data size "+
			"moves every one of them, which uraid does not do; make a new array on the larger members and copy", ErrGrow)
	case level == mapping.Linear && members > 1:
		return fmt.Errorf("%w: linear of %d members puts each member's data after the previous member's end: a new "+
			"data size moves every byte past the first member; make a new array on the larger members and copy", ErrGrow, members)
	}
	return nil
}

// dataUnit is the step of the data size the layout uses: a whole chunk for striped levels (the
// bytes past the last whole chunk hold nothing), a sector for the others.
func dataUnit(sb *Superblock) int64 {
	if sb.Level.Striped() {
		return int64(sb.ChunkSize)
	}
	return mapping.SectorBytes
}

// arraySizeAt is the array's size when every member holds dataSize bytes of data.
func arraySizeAt(sb *Superblock, dataSize int64) (int64, error) {
	m, err := mapping.New(mappingGeometry(sb.Level, sb.Layout, int64(sb.ChunkSize), int(sb.Members), dataSize))
	if err != nil {
		return 0, err
	}
	return m.Size(), nil
}

// MapAreaBytes is how many bytes of a member with this superblock hold the region map: from the
// end of the superblock to the data.
func MapAreaBytes(sb *Superblock) int64 {
	return int64(sb.DataOffset) - (SuperblockOffset + SuperblockSize)
}

// PlanGrow works out the new data size of the array sb describes, for an array of want bytes (0:
// as large as the smallest device allows), from the sizes its devices have now (every member
// in service and every spare). It changes nothing; every refusal wraps ErrGrow or ErrTooSmall
// and says what to do.
//
// A size the layout cannot have exactly is rounded down to the largest one it can (a whole
// chunk per member for raid0 and raid10, a sector for the others), and the plan says so.
func PlanGrow(sb *Superblock, devices []MemberSize, want int64) (GrowPlan, error) {
	oldData := int64(sb.DataSize)
	oldSize, err := arraySizeAt(sb, oldData)
	if err != nil {
		return GrowPlan{}, fmt.Errorf("%w: the superblock's geometry: %v", ErrGrow, err)
	}
	p := GrowPlan{OldDataSize: oldData, OldSize: oldSize, Asked: want}
	if err := Growable(sb.Level, sb.Layout, int(sb.Members)); err != nil {
		return p, err
	}
	if want < 0 {
		return p, fmt.Errorf("%w: size %d bytes: give a positive size, or max", ErrGrow, want)
	}
	if len(devices) == 0 {
		return p, fmt.Errorf("%w: no device of the array is open", ErrGrow)
	}
	unit := dataUnit(sb)
	smallest := devices[0]
	for _, d := range devices[1:] {
		if d.Size < smallest.Size {
			smallest = d
		}
	}
	// The largest data area every device holds, in whole units.
	limit := min(smallest.Size-int64(sb.DataOffset), mapping.MaxMemberBytes)
	limit -= limit % unit
	if limit < unit {
		return p, fmt.Errorf("%w: %s holds %d bytes, not even one %d-byte unit past the data offset %d",
			ErrTooSmall, smallest.Path, smallest.Size, unit, sb.DataOffset)
	}
	maxSize, err := arraySizeAt(sb, limit)
	if err != nil {
		return p, fmt.Errorf("%w: %v", ErrGrow, err)
	}
	newData := limit
	if want > 0 {
		if want > maxSize {
			return p, fmt.Errorf("%w: %s (%s) allows an array of at most %s (%d bytes), %s asked for: "+
				"replace it with a larger device (uraid replace), or give a size up to %d",
				ErrTooSmall, smallest.Path, bytesize.Format(smallest.Size), bytesize.Format(maxSize), maxSize,
				bytesize.Format(want), maxSize)
		}
		// The largest whole-unit data size whose array fits in want: the size only grows with
		// the data size, so a search over units finds it.
		lo, hi := int64(0), limit/unit // units; size(lo) <= want holds for lo = 0 by convention
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			s, err := arraySizeAt(sb, mid*unit)
			if err == nil && s <= want {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		if lo == 0 {
			return p, fmt.Errorf("%w: %d bytes is smaller than the smallest array this layout has", ErrGrow, want)
		}
		newData = lo * unit
	}
	if p.NewSize, err = arraySizeAt(sb, newData); err != nil {
		return p, fmt.Errorf("%w: %v", ErrGrow, err)
	}
	p.NewDataSize = newData
	p.Rounded = want > 0 && p.NewSize != want
	if p.NewSize == oldSize {
		if want == 0 {
			return p, fmt.Errorf("%w: no member has grown: the smallest, %s, holds %s, which allows %s, the array's size "+
				"already; replace members with larger devices (uraid replace) or grow the member devices first",
				ErrGrow, smallest.Path, bytesize.Format(smallest.Size), bytesize.Format(oldSize))
		}
		return p, fmt.Errorf("%w: the array is %s (%d bytes) already%s", ErrGrow, bytesize.Format(oldSize), oldSize, p.roundedNote())
	}
	if sb.Level.Redundant() {
		if p.RegionSize, err = keepRegionSize(sb, oldSize, p.NewSize); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (p GrowPlan) roundedNote() string {
	if !p.Rounded {
		return ""
	}
	return fmt.Sprintf(" (%d bytes asked for, rounded down to what the layout can have)", p.Asked)
}

// keepRegionSize checks that the region map of the new size keeps the old one's region size, so
// that the map blocks on the members keep their meaning, and returns it.
func keepRegionSize(sb *Superblock, oldSize, newSize int64) (int64, error) {
	area := MapAreaBytes(sb)
	rs, err := region.ChooseRegionSize(oldSize, area)
	if err != nil {
		return 0, fmt.Errorf("%w: region map: %v", ErrGrow, err)
	}
	nrs, err := region.ChooseRegionSize(newSize, area)
	if err == nil && nrs == rs {
		return rs, nil
	}
	// The sizes that keep rs: above the largest that fits the next smaller region size, up to
	// the largest that rs's region count allows.
	capacity := min(int64(region.MaxRegions), (area/region.BlockSize-1)*region.RegionsPerBlock)
	hi := capacity * rs
	lo := int64(1)
	if rs > region.MinRegionSize {
		lo = capacity*(rs/2) + 1
	}
	return 0, fmt.Errorf("%w: the region map's regions of %s stay as they are so that its blocks on the members keep their "+
		"meaning, which allows arrays of %d to %d bytes (%s); %d is outside: grow in steps within it, or make a "+
		"new array and copy", ErrGrow, bytesize.Format(rs), lo, hi, bytesize.Format(hi), newSize)
}
