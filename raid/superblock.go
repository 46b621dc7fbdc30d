package raid

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"uraid/mapping"
)

// Every member of an array carries one superblock: a single 4096-byte block
// at byte offset 4096 of the member, modelled on md's v1.2 superblock. Bytes
// 0-4095 are left untouched so a partition table or boot record written
// there survives, and the array's data starts at DataOffset, well clear of
// both. All integers are little-endian.
//
//	offset size field
//	     0    8 magic "URAIDSB\x00"
//	     8    2 major version (2; 1 is read too; 3 while a reshape runs, superblock_reshape.go):
//	          a reader refuses a newer one
//	    10    2 minor version (0); newer minors only add fields in reserved
//	          space, so a reader accepts any minor and ignores what it
//	          does not know
//	    12    1 level: 1 linear, 2 raid0, 3 raid1, 4 raid10
//	    13    1 layout: 0 none, 1 n2, 2 f2, 3 o2 (raid10 only)
//	    14    1 state: 1 clean, 2 dirty
//	    15    1 reserved, written as zero
//	    16   16 array UUID
//	    32   16 member UUID
//	    48   32 array name, NUL padded, [A-Za-z0-9._-]{1,32}
//	    80    4 member count, 1 to mapping.MaxMembers (256)
//	    84    4 this member's index, < member count
//	    88    8 chunk size in bytes: a power of two from 4096 to 1 GiB for
//	          raid0 and raid10, zero for linear and raid1
//	    96    8 data offset in bytes from the start of the member, a
//	          multiple of 1 MiB
//	   104    8 data size in bytes, from data offset, a multiple of 512
//	   112    8 event counter, bumped on every superblock update
//	   120    8 creation time, Unix nanoseconds
//	   128    8 update time, Unix nanoseconds
//	   136    1 role (minor 1): 0 in its slot, 1 spare, 2 being rebuilt into its slot
//	   137    7 reserved, written as zero
//	   144 2048 slot table (minor 2): per slot, the first 8 bytes of the member UUID of the
//	          device in service there (in its slot or being rebuilt into it), 0 for none;
//	          entries past the member count are zero
//	  2192    8 whole events (minor 2): the events of the update after which the array was last
//	          made whole again (a rebuild ended with every slot in service); 0 for never
//	  2200 1892 reserved for later minor versions, written as zero
//	  4092    4 CRC32C (Castagnoli) of bytes 0-4091
//
// The magic, the major version and the checksum keep their positions in
// every future version, so any reader can tell "not ours", "corrupt" and
// "too new" apart.
//
// The limits on member count, chunk size and data size granularity are
// mapping's, so create, the planner and the superblock cannot disagree on
// them; the rest of the geometry (raid1 copies, member size) is mapping.New's
// to check, which MapOf calls when an array starts.

// Superblock placement and format constants.
const (
	SuperblockOffset = 4096 // byte offset of the superblock on a member
	SuperblockSize   = 4096 // bytes, one aligned block for O_DIRECT

	// VersionMajor is written; incompatible format changes bump it. 2 says the member carries a
	// region map between its superblock and its data (docs/superblock.md): a uraid that reads
	// only 1 would write data without updating the map, which the next assemble would trust, so
	// it must refuse such a member. Version 1 members are still read (they have no map yet) and
	// become version 2 when an array of them first runs.
	VersionMajor    = 2
	MinVersionMajor = 1
	VersionMinor    = 2 // fields added in reserved space bump this; 1 added the role, 2 the slot table

	DefaultDataOffset = 1 << 20 // data starts 1 MiB in, as in md 1.2
	DataOffsetAlign   = 1 << 20 // aligns data to any sector, page or discard granularity

	MaxNameLen = 32 // bytes of the name field
)

// Magic identifies a uraid superblock.
var Magic = [8]byte{'U', 'R', 'A', 'I', 'D', 'S', 'B', 0}

// Errors reported when decoding a superblock. Test with errors.Is; the
// wrapping error says which field and what to do.
var (
	// ErrNotMember means the block holds no uraid magic: the device was
	// never part of an array, was wiped, or is the wrong device.
	ErrNotMember = errors.New("not a uraid member")
	// ErrCorrupt means the magic is present but the checksum does not
	// match: the block was damaged after uraid wrote it.
	ErrCorrupt = errors.New("corrupt superblock")
	// ErrUnsupportedVersion means a newer uraid with an incompatible
	// format wrote the block.
	ErrUnsupportedVersion = errors.New("unsupported superblock version")
	// ErrInvalid means a field holds a value no array can have. On a
	// block that passed its checksum this points at a bug in whatever
	// wrote it; from Marshal it means the caller filled in a bad value.
	ErrInvalid = errors.New("invalid superblock")
)

// Field offsets, see the table above.
const (
	offMagic      = 0
	offMajor      = 8
	offMinor      = 10
	offLevel      = 12
	offLayout     = 13
	offState      = 14
	offArrayUUID  = 16
	offMemberUUID = 32
	offName       = 48
	offCount      = 80
	offIndex      = 84
	offChunk      = 88
	offDataOffset = 96
	offDataSize   = 104
	offEvents     = 112
	offCreateTime = 120
	offUpdateTime = 128
	offRole       = 136
	offSlots      = 144
	offWhole      = offSlots + 8*mapping.MaxMembers
	offReserved   = offWhole + 8
	offChecksum   = SuperblockSize - 4
)

var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

// Superblock is the decoded metadata of one member. The zero value is not
// valid: fill every field, then Validate or Marshal.
type Superblock struct {
	ArrayUUID  UUID
	Name       string // 1-32 bytes of letters, digits, '-', '_', '.'
	Level      mapping.Level
	Layout     mapping.Layout // mapping.NoLayout unless Level.HasLayout (raid10)
	ChunkSize  uint64         // bytes; zero for levels that do not stripe
	Members    uint32         // member count of the array, including absent ones
	Index      uint32         // this member's slot, 0 <= Index < Members
	MemberUUID UUID
	DataOffset uint64 // bytes from the start of the member
	DataSize   uint64 // bytes of array data on this member
	Events     uint64 // the member with the highest count is the newest
	State      State
	CreateTime int64 // Unix nanoseconds
	UpdateTime int64 // Unix nanoseconds
	// Role says what the member is to the array: in its slot (Index), a spare waiting for a slot
	// (Index is then 0 and means nothing), or being rebuilt into slot Index (its data there is
	// not whole yet: the region map's cursor says how far the rebuild got).
	Role Role
	// Slots says, as of this update, which device is in service in each slot (the member UUID's
	// Tag, 0 for none); nil in a superblock older than minor 2. Each update reaches the members
	// one after another, so a crash can leave some of them one update behind the rest without
	// their having missed a write: assemble takes such a member as current when the newest
	// superblock's table names it in its slot, and as stale otherwise (its failure was what the
	// update recorded).
	Slots []uint64
	// WholeEvents is the event count of the update after which the array was last made whole
	// again, when the region map forgets which regions were written while a member was out. A
	// device that left before it (its Events are lower) misses more than the map can say, so it
	// comes back by a full rebuild, not a re-add. 0: never, or written before minor 2.
	WholeEvents uint64
	// Reshape is the reshape under way (superblock_reshape.go), nil when none: such a superblock
	// is written with major version VersionMajorReshape.
	Reshape *ReshapeInfo
}

// ValidateName reports whether name can be an array name: it ends up in
// device paths and command lines, so only [A-Za-z0-9._-] are allowed, it
// may not start with '-' (it would read as a flag) and may not be "." or
// "..".
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("array name is empty: give the array a name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("array name %q is %d bytes, the limit is %d", name, len(name), MaxNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("array name %q is a path element; pick another name", name)
	case name[0] == '-':
		return fmt.Errorf("array name %q starts with '-' and would read as a flag", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("array name %q has byte %q at %d: use only letters, digits, '-', '_' and '.'", name, c, i)
		}
	}
	return nil
}

// Validate reports the first field that holds a value no array can have.
// The error wraps ErrInvalid.
func (sb *Superblock) Validate() error {
	if err := sb.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (sb *Superblock) validate() error {
	if sb.ArrayUUID.IsZero() {
		return errors.New("array UUID is all zeros")
	}
	if sb.MemberUUID.IsZero() {
		return errors.New("member UUID is all zeros")
	}
	if err := ValidateName(sb.Name); err != nil {
		return err
	}
	// Decoding turned unknown codes into errors already; these catch a
	// caller's bad value before it is encoded.
	if _, ok := levelCode(sb.Level); !ok {
		return fmt.Errorf("level %v is not linear, raid0, raid1 or raid10", sb.Level)
	}
	if _, ok := layoutCode(sb.Layout); !ok {
		return fmt.Errorf("layout %v is not n2, f2 or o2", sb.Layout)
	}
	level := sb.Level.ShortName()
	if sb.Level.HasLayout() && sb.Layout == mapping.NoLayout {
		return fmt.Errorf("level %s needs a layout: n2, f2 or o2", level)
	}
	if !sb.Level.HasLayout() && sb.Layout != mapping.NoLayout {
		return fmt.Errorf("layout %s given for level %s; only level 10 has a layout", sb.Layout, level)
	}
	if sb.Level.Striped() {
		c := sb.ChunkSize
		if c < mapping.MinChunkBytes || c > mapping.MaxChunkBytes || c&(c-1) != 0 {
			return fmt.Errorf("chunk size %d bytes for level %s: want a power of two from %d to %d",
				c, level, mapping.MinChunkBytes, mapping.MaxChunkBytes)
		}
	} else if sb.ChunkSize != 0 {
		return fmt.Errorf("chunk size %d bytes given for level %s, which does not stripe; want 0",
			sb.ChunkSize, level)
	}
	if sb.Members == 0 || sb.Members > mapping.MaxMembers {
		return fmt.Errorf("member count %d: want 1 to %d", sb.Members, mapping.MaxMembers)
	}
	if sb.Level == mapping.RAID10 && sb.Members < 2 {
		return fmt.Errorf("level 10 with %d member: two copies need at least 2", sb.Members)
	}
	if sb.Index >= sb.Members {
		return fmt.Errorf("member index %d is not below member count %d", sb.Index, sb.Members)
	}
	if sb.DataOffset == 0 || sb.DataOffset%DataOffsetAlign != 0 {
		return fmt.Errorf("data offset %d bytes: want a non-zero multiple of %d (1 MiB)", sb.DataOffset, DataOffsetAlign)
	}
	if sb.DataSize == 0 {
		return errors.New("data size is zero")
	}
	if sb.DataSize%mapping.SectorBytes != 0 {
		return fmt.Errorf("data size %d bytes is not a multiple of %d", sb.DataSize, mapping.SectorBytes)
	}
	if sb.DataOffset > math.MaxInt64 || sb.DataSize > math.MaxInt64-sb.DataOffset {
		return fmt.Errorf("data offset %d plus data size %d passes the largest file offset", sb.DataOffset, sb.DataSize)
	}
	if !sb.State.Valid() {
		return fmt.Errorf("unknown state code %d", uint8(sb.State))
	}
	if !sb.Role.Valid() {
		return fmt.Errorf("unknown role code %d (written by a newer uraid? upgrade it)", uint8(sb.Role))
	}
	if sb.Role == RoleSpare && sb.Index != 0 {
		return fmt.Errorf("spare with member index %d: a spare has no slot, its index is 0", sb.Index)
	}
	if sb.Slots != nil && len(sb.Slots) != int(sb.Members) {
		return fmt.Errorf("slot table of %d entries for %d members", len(sb.Slots), sb.Members)
	}
	if sb.Slots != nil && !slices.ContainsFunc(sb.Slots, func(t uint64) bool { return t != 0 }) {
		// It would read back as no table: an array in service has a device in some slot.
		return errors.New("slot table names no device")
	}
	return sb.validateReshape()
}

// MarshalBinary encodes sb into a new SuperblockSize-byte block with a
// fresh checksum. It refuses a superblock that Validate rejects, so uraid
// never writes one it would refuse to read.
func (sb *Superblock) MarshalBinary() ([]byte, error) {
	block := make([]byte, SuperblockSize)
	if err := sb.marshalInto(block); err != nil {
		return nil, err
	}
	return block, nil
}

// marshalInto encodes sb into block, which must be SuperblockSize bytes;
// every byte is written, so block may hold anything before.
func (sb *Superblock) marshalInto(block []byte) error {
	if len(block) != SuperblockSize {
		return fmt.Errorf("encode superblock: buffer is %d bytes, want %d", len(block), SuperblockSize)
	}
	if err := sb.Validate(); err != nil {
		return fmt.Errorf("encode superblock: %w", err)
	}
	level, _ := levelCode(sb.Level)    // Validate checked there is one
	layout, _ := layoutCode(sb.Layout) // likewise
	clear(block)
	le := binary.LittleEndian
	copy(block[offMagic:], Magic[:])
	le.PutUint16(block[offMajor:], VersionMajor)
	le.PutUint16(block[offMinor:], VersionMinor)
	block[offLevel] = level
	block[offLayout] = layout
	block[offState] = byte(sb.State)
	copy(block[offArrayUUID:], sb.ArrayUUID[:])
	copy(block[offMemberUUID:], sb.MemberUUID[:])
	copy(block[offName:offName+MaxNameLen], sb.Name)
	le.PutUint32(block[offCount:], sb.Members)
	le.PutUint32(block[offIndex:], sb.Index)
	le.PutUint64(block[offChunk:], sb.ChunkSize)
	le.PutUint64(block[offDataOffset:], sb.DataOffset)
	le.PutUint64(block[offDataSize:], sb.DataSize)
	le.PutUint64(block[offEvents:], sb.Events)
	le.PutUint64(block[offCreateTime:], uint64(sb.CreateTime))
	le.PutUint64(block[offUpdateTime:], uint64(sb.UpdateTime))
	block[offRole] = byte(sb.Role)
	for i, t := range sb.Slots {
		le.PutUint64(block[offSlots+8*i:], t)
	}
	le.PutUint64(block[offWhole:], sb.WholeEvents)
	sb.marshalReshape(block)
	le.PutUint32(block[offChecksum:], crc32.Checksum(block[:offChecksum], crc32cTable))
	return nil
}

// UnmarshalBinary decodes a SuperblockSize-byte block. It checks, in this
// order, the magic (ErrNotMember), the checksum (ErrCorrupt), the major
// version (ErrUnsupportedVersion) and then every field (ErrInvalid), so a
// damaged block is reported as damaged rather than by whichever field the
// damage hit. Of the fields, an unknown level or layout code comes first: it
// says a newer uraid wrote the block, which may also explain every other
// field this version finds odd. On error sb is left unchanged.
func (sb *Superblock) UnmarshalBinary(block []byte) error {
	if len(block) != SuperblockSize {
		return fmt.Errorf("%w: block is %d bytes, want %d", ErrCorrupt, len(block), SuperblockSize)
	}
	if !bytes.Equal(block[offMagic:offMagic+len(Magic)], Magic[:]) {
		return fmt.Errorf("%w: no uraid magic at the superblock position (wrong device, or never part of an array?)", ErrNotMember)
	}
	le := binary.LittleEndian
	if le.Uint32(block[offChecksum:]) != crc32.Checksum(block[:offChecksum], crc32cTable) {
		return fmt.Errorf("%w: checksum mismatch: the block was damaged after it was written; "+
			"re-add the member from its mirror or re-create the array", ErrCorrupt)
	}
	if major := le.Uint16(block[offMajor:]); major < MinVersionMajor || major > VersionMajorReshape {
		return fmt.Errorf("%w: version %d.%d, this uraid reads %d.x to %d.x: upgrade uraid",
			ErrUnsupportedVersion, major, le.Uint16(block[offMinor:]), MinVersionMajor, VersionMajorReshape)
	}
	name := block[offName : offName+MaxNameLen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		if bytes.ContainsFunc(name[i:], func(r rune) bool { return r != 0 }) {
			return fmt.Errorf("%w: array name field has bytes after its NUL terminator", ErrInvalid)
		}
		name = name[:i]
	}
	var d Superblock
	var ok bool
	if d.Level, ok = levelOfCode(block[offLevel]); !ok {
		return fmt.Errorf("%w: unknown level code %d (written by a newer uraid? upgrade it)", ErrInvalid, block[offLevel])
	}
	if d.Layout, ok = layoutOfCode(block[offLayout]); !ok {
		return fmt.Errorf("%w: unknown layout code %d (written by a newer uraid? upgrade it)", ErrInvalid, block[offLayout])
	}
	d.State = State(block[offState])
	copy(d.ArrayUUID[:], block[offArrayUUID:])
	copy(d.MemberUUID[:], block[offMemberUUID:])
	d.Name = string(name)
	d.Members = le.Uint32(block[offCount:])
	d.Index = le.Uint32(block[offIndex:])
	d.ChunkSize = le.Uint64(block[offChunk:])
	d.DataOffset = le.Uint64(block[offDataOffset:])
	d.DataSize = le.Uint64(block[offDataSize:])
	d.Events = le.Uint64(block[offEvents:])
	d.CreateTime = int64(le.Uint64(block[offCreateTime:]))
	d.UpdateTime = int64(le.Uint64(block[offUpdateTime:]))
	d.Role = Role(block[offRole])
	if le.Uint16(block[offMajor:]) >= 2 && le.Uint16(block[offMinor:]) >= 2 {
		d.WholeEvents = le.Uint64(block[offWhole:])
	}
	if le.Uint16(block[offMajor:]) >= 2 && le.Uint16(block[offMinor:]) >= 2 && d.Members <= mapping.MaxMembers {
		// A table of zeros is no table (Validate refuses to write one).
		for i := range d.Members {
			if t := le.Uint64(block[offSlots+8*i:]); t != 0 {
				if d.Slots == nil {
					d.Slots = make([]uint64, d.Members)
				}
				d.Slots[i] = t
			}
		}
	}
	if err := unmarshalReshape(block, &d); err != nil {
		return err
	}
	if err := d.Validate(); err != nil {
		return err
	}
	*sb = d
	return nil
}
