package raid

import (
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// AlignedBlock returns a zeroed SuperblockSize-byte buffer whose address is
// a multiple of SuperblockSize, as O_DIRECT reads and writes require. The Go
// heap does not move objects, so slicing an over-sized allocation at an
// aligned address is enough; the capacity is capped so an append can never
// reach past the aligned block.
func AlignedBlock() []byte { return AlignedBytes(SuperblockSize) }

// AlignedBytes returns n zeroed bytes whose address is a multiple of SuperblockSize (4096), as
// O_DIRECT wants, capped so that an append cannot reach past them: the buffers of any direct I/O
// to a member, the superblock's and the serving array's (region map, sync jobs) alike.
func AlignedBytes(n int) []byte {
	buf := make([]byte, n+SuperblockSize)
	skip := 0
	if rem := int(uintptr(unsafe.Pointer(&buf[0])) % SuperblockSize); rem != 0 {
		skip = SuperblockSize - rem
	}
	return buf[skip : skip+n : skip+n]
}

// fileSyncer is implemented by *os.File; Write and Wipe flush through it so the
// superblock is on stable storage before they return.
type fileSyncer interface {
	Sync() error
}

// ReadSuperblock reads and decodes the superblock of a member. r is usually
// an *os.File for a block device, which may be opened with O_DIRECT: the
// read is one aligned SuperblockSize-byte read at SuperblockOffset.
func ReadSuperblock(r io.ReaderAt) (*Superblock, error) {
	block := AlignedBlock()
	n, err := r.ReadAt(block, SuperblockOffset)
	if n < len(block) {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read superblock: %w: device ends %d bytes into the superblock at offset %d "+
				"(too small to be a member)", ErrNotMember, n, SuperblockOffset)
		}
		return nil, fmt.Errorf("read superblock at offset %d: %w", SuperblockOffset, err)
	}
	var sb Superblock
	if err := sb.UnmarshalBinary(block); err != nil {
		return nil, fmt.Errorf("read superblock: %w", err)
	}
	return &sb, nil
}

// WriteSuperblock encodes sb and writes it to a member in exactly one
// aligned SuperblockSize-byte write at SuperblockOffset, so it works on a
// file opened with O_DIRECT and is never split into separate requests; a
// write torn by power loss fails the checksum on the next read. If w can
// Sync (an *os.File) it is synced afterwards; no other write follows.
func WriteSuperblock(w io.WriterAt, sb *Superblock) error {
	block := AlignedBlock()
	if err := sb.marshalInto(block); err != nil {
		return fmt.Errorf("write superblock: %w", err)
	}
	return writeSuperblockBlock(w, block, "write superblock")
}

// WipeSuperblock overwrites the superblock position of a member with
// zeros, so the device no longer reads as a member. It touches neither
// bytes 0-4095 nor the data area.
func WipeSuperblock(w io.WriterAt) error {
	return writeSuperblockBlock(w, AlignedBlock(), "wipe superblock")
}

func writeSuperblockBlock(w io.WriterAt, block []byte, what string) error {
	n, err := w.WriteAt(block, SuperblockOffset)
	if err != nil {
		return fmt.Errorf("%s at offset %d: %w", what, SuperblockOffset, err)
	}
	if n != len(block) {
		return fmt.Errorf("%s at offset %d: short write of %d of %d bytes", what, SuperblockOffset, n, len(block))
	}
	if s, ok := w.(fileSyncer); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("%s: sync: %w", what, err)
		}
	}
	return nil
}
