package uring

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// BufRing is a provided-buffer ring (IORING_REGISTER_PBUF_RING, Linux 5.19):
// a group of buffers the kernel picks from for operations sent with
// IOSQE_BUFFER_SELECT and SQE.BufIndex = the group id, such as a multishot
// command that posts a CQE per filled buffer. The CQE says which buffer
// (IORING_CQE_F_BUFFER, the id in the flags' top 16 bits); the application
// reads it and gives it back with Add and Advance. The buffers themselves
// are the application's; the ring only lists them. Owned by one goroutine,
// like the Ring.
type BufRing struct {
	r     *Ring
	mem   []byte // the page-aligned ring the kernel reads
	slots []uapi.Buf
	mask  uint16
	tail  uint16 // next slot to fill; published by Advance
	bgid  uint16
}

// RegisterBufRing registers an empty provided-buffer ring of entries slots
// (a power of two up to 32768) as group bgid.
func (r *Ring) RegisterBufRing(bgid uint16, entries int) (*BufRing, error) {
	if r.fd < 0 {
		return nil, ErrClosed
	}
	if entries < 1 || entries > 1<<15 || entries&(entries-1) != 0 {
		return nil, fmt.Errorf("io_uring buffer ring: %d entries is not a power of two up to 32768", entries)
	}
	size := entries * int(unsafe.Sizeof(uapi.Buf{}))
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("io_uring buffer ring: %w", os.NewSyscallError("mmap", err))
	}
	arg := uapi.BufReg{RingAddr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))), RingEntries: uint32(entries), Bgid: bgid}
	if _, errno := register(r.fd, uapi.IORING_REGISTER_PBUF_RING, unsafe.Pointer(&arg), 1); errno != 0 {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("io_uring register buffer ring %d: %w", bgid, os.NewSyscallError("io_uring_register", errno))
	}
	return &BufRing{
		r:     r,
		mem:   mem,
		slots: unsafe.Slice((*uapi.Buf)(unsafe.Pointer(unsafe.SliceData(mem))), entries),
		mask:  uint16(entries - 1),
		bgid:  bgid,
	}, nil
}

// Add fills the slot i places after the tail with buffer bid at addr, n
// bytes. It becomes visible to the kernel with Advance.
func (b *BufRing) Add(addr uintptr, n uint32, bid uint16, i int) {
	s := &b.slots[(b.tail+uint16(i))&b.mask]
	s.Addr, s.Len, s.Bid = uint64(addr), n, bid
}

// Advance hands the next n slots filled by Add to the kernel. The tail is a
// u16 sharing an aligned 32-bit word with slot 0's bid, which only this
// side writes, so one atomic store of that word (with the bid it already
// holds) orders the slots' plain writes before the new tail.
func (b *BufRing) Advance(n int) {
	b.tail += uint16(n)
	word := (*uint32)(unsafe.Pointer(&b.mem[uapi.BufRingTailOffset-2]))
	atomic.StoreUint32(word, uint32(b.slots[0].Bid)|uint32(b.tail)<<16)
}

// Close unregisters the group and unmaps the ring. Nothing may use the
// group afterwards; closing the Ring unregisters it too, after which Close
// only unmaps.
func (b *BufRing) Close() error {
	if b.mem == nil {
		return nil
	}
	var err error
	if b.r.fd >= 0 {
		arg := uapi.BufReg{Bgid: b.bgid}
		if _, errno := register(b.r.fd, uapi.IORING_UNREGISTER_PBUF_RING, unsafe.Pointer(&arg), 1); errno != 0 {
			err = fmt.Errorf("io_uring unregister buffer ring %d: %w", b.bgid, os.NewSyscallError("io_uring_register", errno))
		}
	}
	if merr := unix.Munmap(b.mem); merr != nil && err == nil {
		err = fmt.Errorf("io_uring buffer ring: %w", os.NewSyscallError("munmap", merr))
	}
	b.mem, b.slots = nil, nil
	return err
}
