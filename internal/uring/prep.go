package uring

import (
	"uraid/internal/uapi"
)

// Prep helpers fill an SQE from NextSQE (which is already zeroed) for one
// operation. They set neither UserData nor Flags: assign those fields
// directly. Buffer addresses are bare uintptrs because the memory must not
// be Go heap the collector may free while the kernel still uses it: use
// mmap'd buffers, or pin them for the life of the request.

// PrepNop prepares an IORING_OP_NOP, which completes with res 0.
func PrepNop(sqe *uapi.SQE) {
	sqe.Opcode = uapi.IORING_OP_NOP
	sqe.Fd = -1
}

// PrepRead prepares a pread of n bytes at off into the buffer at addr.
func PrepRead(sqe *uapi.SQE, fd int, addr uintptr, n uint32, off uint64) {
	prepRW(sqe, uapi.IORING_OP_READ, fd, addr, n, off)
}

// PrepWrite prepares a pwrite of n bytes at off from the buffer at addr.
func PrepWrite(sqe *uapi.SQE, fd int, addr uintptr, n uint32, off uint64) {
	prepRW(sqe, uapi.IORING_OP_WRITE, fd, addr, n, off)
}

// PrepReadFixed prepares a pread of n bytes at off into slot index of the
// ring's fixed-buffer table, at addr: an address inside the slot's
// application buffer, or the byte offset into a kernel request's pages
// (see RegisterBuffersSparse).
func PrepReadFixed(sqe *uapi.SQE, fd int, index uint16, addr uint64, n uint32, off uint64) {
	prepRW(sqe, uapi.IORING_OP_READ_FIXED, fd, uintptr(addr), n, off)
	sqe.BufIndex = index
}

// PrepWriteFixed prepares a pwrite of n bytes at off from slot index of
// the fixed-buffer table, at addr as for PrepReadFixed.
func PrepWriteFixed(sqe *uapi.SQE, fd int, index uint16, addr uint64, n uint32, off uint64) {
	prepRW(sqe, uapi.IORING_OP_WRITE_FIXED, fd, uintptr(addr), n, off)
	sqe.BufIndex = index
}

func prepRW(sqe *uapi.SQE, op uint8, fd int, addr uintptr, n uint32, off uint64) {
	sqe.Opcode = op
	sqe.Fd = int32(fd)
	sqe.Addr = uint64(addr)
	sqe.Len = n
	sqe.Off = off
}

// PrepFsync prepares an fsync, or an fdatasync when datasync is set.
func PrepFsync(sqe *uapi.SQE, fd int, datasync bool) {
	sqe.Opcode = uapi.IORING_OP_FSYNC
	sqe.Fd = int32(fd)
	if datasync {
		sqe.OpFlags = uapi.IORING_FSYNC_DATASYNC
	}
}

// PrepFallocate prepares fallocate(fd, mode, off, length), e.g. with
// FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE to discard a range of a
// regular file. The kernel reads the length from addr and the mode from
// len.
func PrepFallocate(sqe *uapi.SQE, fd int, mode uint32, off, length uint64) {
	sqe.Opcode = uapi.IORING_OP_FALLOCATE
	sqe.Fd = int32(fd)
	sqe.Off = off
	sqe.Addr = length
	sqe.Len = mode
}

// PrepURingCmd prepares an IORING_OP_URING_CMD with the given cmd_op. The
// caller writes the payload at offset 48 (SQE.IOCmd, SQE128.CtrlCmd or
// SQE128.Cmd).
func PrepURingCmd(sqe *uapi.SQE, fd int, cmdOp uint32) {
	sqe.Opcode = uapi.IORING_OP_URING_CMD
	sqe.Fd = int32(fd)
	sqe.SetCmdOp(cmdOp)
}

// PrepDiscard prepares an asynchronous discard of length bytes at off on a
// block device opened for writing (BLOCK_URING_CMD_DISCARD, Linux 6.12).
// Both must be multiples of the logical block size. -EAGAIN in the CQE
// means retry; -EOPNOTSUPP means the device cannot discard.
func PrepDiscard(sqe *uapi.SQE, fd int, off, length uint64) {
	PrepURingCmd(sqe, fd, uapi.BLOCK_URING_CMD_DISCARD)
	sqe.Addr = off
	sqe.Addr3 = length
}

// PrepPollAdd prepares a one-shot poll for events (POLLIN...) on fd; the
// CQE's res is the returned event mask.
func PrepPollAdd(sqe *uapi.SQE, fd int, events uint32) {
	sqe.Opcode = uapi.IORING_OP_POLL_ADD
	sqe.Fd = int32(fd)
	sqe.OpFlags = events
}

// PrepCancel prepares the cancellation of the request whose UserData is
// target. Its own CQE says 0 (found), -ENOENT or -EALREADY; the cancelled
// request completes with -ECANCELED.
func PrepCancel(sqe *uapi.SQE, target uint64) {
	sqe.Opcode = uapi.IORING_OP_ASYNC_CANCEL
	sqe.Fd = -1
	sqe.Addr = target
}
