// Package fsprobe finds a filesystem at the start of a block device's bytes and says how large it
// is, so that a shrink of the device never cuts one off. It knows ext2/3/4, XFS and btrfs, the
// filesystems whose size decides how far a uraid array may shrink; it reads through an
// io.ReaderAt in whole 4 KiB blocks (O_DIRECT-safe) and has no other I/O. Safe for concurrent use.
package fsprobe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

const block = 4096

// Size reports the filesystem at the start of r: its kind ("ext4", "xfs", "btrfs") and its size
// in bytes; kind "" when none of them is there. A device too short for a superblock holds none.
func Size(r io.ReaderAt) (kind string, size int64, err error) {
	b0, err := readBlock(r, 0)
	if err != nil {
		return "", 0, err
	}
	if b0 == nil {
		return "", 0, nil
	}
	// ext2/3/4: the superblock at byte 1024, magic 0xEF53 at 56.
	if sb := b0[1024:]; binary.LittleEndian.Uint16(sb[56:]) == 0xEF53 {
		logBlock := binary.LittleEndian.Uint32(sb[24:])
		if logBlock > 6 {
			return "", 0, fmt.Errorf("ext superblock with block size 2^%d KiB: damaged", logBlock)
		}
		blocks := uint64(binary.LittleEndian.Uint32(sb[4:]))
		const incompat64bit = 0x80
		if binary.LittleEndian.Uint32(sb[96:])&incompat64bit != 0 {
			blocks |= uint64(binary.LittleEndian.Uint32(sb[0x150:])) << 32
		}
		return "ext4", int64(blocks) << (10 + logBlock), nil
	}
	// XFS: "XFSB", big-endian block size at 4 and data blocks at 8.
	if bytes.Equal(b0[:4], []byte("XFSB")) {
		bs := binary.BigEndian.Uint32(b0[4:])
		return "xfs", int64(binary.BigEndian.Uint64(b0[8:])) * int64(bs), nil
	}
	// btrfs: the superblock at 64 KiB, magic at 0x40, total bytes at 0x70.
	b64, err := readBlock(r, 64<<10)
	if err != nil || b64 == nil {
		return "", 0, err
	}
	if bytes.Equal(b64[0x40:0x48], []byte("_BHRfS_M")) {
		return "btrfs", int64(binary.LittleEndian.Uint64(b64[0x70:])), nil
	}
	return "", 0, nil
}

// readBlock reads the block at off; nil when the device ends before it. The buffer is aligned
// to the block, as a device opened with O_DIRECT (a member) requires.
func readBlock(r io.ReaderAt, off int64) ([]byte, error) {
	raw := make([]byte, 2*block)
	skip := (block - int(uintptr(unsafe.Pointer(&raw[0]))%block)) % block
	b := raw[skip : skip+block]
	n, err := r.ReadAt(b, off)
	if n == block {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, nil
	}
	return nil, fmt.Errorf("read %d bytes at %d: %w", block, off, err)
}
