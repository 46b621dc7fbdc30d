// Package raid holds the metadata of uraid's arrays: what makes a set of
// devices one array, and the checks that decide whether a set of devices
// may run as one. Serving an assembled array is package array's; raid
// knows nothing of it.
//
// # Superblock
//
// Every member carries a Superblock: one 4096-byte block at byte offset
// 4096, after md's v1.2 format, protected by a CRC32C checksum. It records
// the array's identity (UUID, name), its geometry (level, layout, chunk
// size, member count, per-member data size), the member's own slot and
// UUID, where the data starts, and an event counter that orders updates.
// The byte layout is documented beside the encoder in superblock.go and in
// docs/superblock.md. Levels, layouts and the limits on an array are
// mapping's (mapping.Level, mapping.Layout, mapping.MaxMembers); the
// superblock keeps only their one-byte on-disk codes.
//
// Guarantees:
//   - UnmarshalBinary and ReadSuperblock never panic, whatever the bytes;
//     they tell apart a device that is not a member (ErrNotMember), a
//     damaged block (ErrCorrupt), a block from a newer incompatible uraid
//     (ErrUnsupportedVersion) and impossible field values (ErrInvalid).
//   - uraid never writes a superblock it would refuse to read: Marshal
//     validates first.
//   - WriteSuperblock and WipeSuperblock issue exactly one aligned 4096-byte
//     write at offset 4096, so they work on devices opened with O_DIRECT and
//     never touch the first 4096 bytes or the data area.
//
// # Assembly
//
// CheckAssembly takes the superblocks read from the devices a user named
// and decides whether they form one array: same array UUID, same
// geometry, each slot claimed once. The member with the most events is the
// reference; members behind it are stale and slots nobody claims are
// missing. Every error names the member at fault, why, and what to do.
//
// # Members, create and scan
//
// OpenMember opens a member device (a block device or a regular file),
// claims it exclusively and probes its size and discard support; it tells
// a device another program holds (ErrMemberBusy) from one of the wrong
// kind. Create checks a new array's members and geometry and only then
// writes their superblocks; CheckFresh, which it applies to every member,
// refuses a device holding a superblock or any signature util-linux's blkid
// finds (ProbeSignature runs blkid -p). PlanCreate and Commit split Create
// so a caller can check more between them; Created.Undo puts the members
// back as they were. ZeroSuperblocks erases members' superblocks, checking
// every device before writing to any. Scan reads the
// superblocks of candidate devices (BlockCandidates, ReadConfig) and
// groups them by array, for assembly at boot; Config.Select applies the
// configuration's ARRAY allow-list to what it found. StablePath is the name
// a member is recorded by: its /dev/disk/by-id link, or a file's absolute
// path.
//
// # Concurrency
//
// Superblock, MemberSB and Assembly are plain values with no internal
// locking: share them read-only or copy them. The functions in this package
// keep no state and are safe to call concurrently, but two concurrent
// writes to the same member's superblock race on the device; the caller
// that owns a member serialises its superblock updates.
//
// # What it does not touch
//
// raid never serves an array (package array does: the data path, the
// region map, sync jobs and membership changes of a running array) and
// holds no array's state; it writes only superblocks, at create and when
// a caller asks, and logs nothing.
package raid
