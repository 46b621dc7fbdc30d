package uapi

import "unsafe"

// SQE flags (io_uring_sqe.flags).
const (
	IOSQE_FIXED_FILE       = 1 << 0
	IOSQE_IO_DRAIN         = 1 << 1
	IOSQE_IO_LINK          = 1 << 2
	IOSQE_IO_HARDLINK      = 1 << 3
	IOSQE_ASYNC            = 1 << 4
	IOSQE_BUFFER_SELECT    = 1 << 5
	IOSQE_CQE_SKIP_SUCCESS = 1 << 6
)

// io_uring_setup flags (URingParams.Flags).
const (
	IORING_SETUP_IOPOLL     = 1 << 0
	IORING_SETUP_SQPOLL     = 1 << 1
	IORING_SETUP_SQ_AFF     = 1 << 2
	IORING_SETUP_CQSIZE     = 1 << 3
	IORING_SETUP_CLAMP      = 1 << 4
	IORING_SETUP_ATTACH_WQ  = 1 << 5
	IORING_SETUP_R_DISABLED = 1 << 6
	IORING_SETUP_SUBMIT_ALL = 1 << 7
	// Completions run as task work only when the task enters the kernel,
	// instead of interrupting it.
	IORING_SETUP_COOP_TASKRUN = 1 << 8
	IORING_SETUP_TASKRUN_FLAG = 1 << 9
	// 128-byte SQEs: 80 bytes of command payload from offset 48. Required
	// by /dev/ublk-control.
	IORING_SETUP_SQE128 = 1 << 10
	IORING_SETUP_CQE32  = 1 << 11
	// Only one task submits; the kernel may skip locking.
	IORING_SETUP_SINGLE_ISSUER = 1 << 12
	// Completion work runs only inside io_uring_enter(GETEVENTS) by the
	// submitter task. Requires SINGLE_ISSUER.
	IORING_SETUP_DEFER_TASKRUN      = 1 << 13
	IORING_SETUP_NO_MMAP            = 1 << 14
	IORING_SETUP_REGISTERED_FD_ONLY = 1 << 15
	IORING_SETUP_NO_SQARRAY         = 1 << 16
)

// io_uring_enter flags.
const (
	IORING_ENTER_GETEVENTS       = 1 << 0
	IORING_ENTER_SQ_WAKEUP       = 1 << 1
	IORING_ENTER_SQ_WAIT         = 1 << 2
	IORING_ENTER_EXT_ARG         = 1 << 3
	IORING_ENTER_REGISTERED_RING = 1 << 4
	IORING_ENTER_ABS_TIMER       = 1 << 5
)

// Features reported by io_uring_setup (URingParams.Features).
const (
	IORING_FEAT_SINGLE_MMAP = 1 << 0
	// Completions that do not fit the CQ are kept in an overflow list
	// instead of dropped; they are flushed by the next enter(GETEVENTS).
	IORING_FEAT_NODROP          = 1 << 1
	IORING_FEAT_SUBMIT_STABLE   = 1 << 2
	IORING_FEAT_RW_CUR_POS      = 1 << 3
	IORING_FEAT_CUR_PERSONALITY = 1 << 4
	IORING_FEAT_FAST_POLL       = 1 << 5
	IORING_FEAT_POLL_32BITS     = 1 << 6
	IORING_FEAT_SQPOLL_NONFIXED = 1 << 7
	IORING_FEAT_EXT_ARG         = 1 << 8
	IORING_FEAT_NATIVE_WORKERS  = 1 << 9
	IORING_FEAT_RSRC_TAGS       = 1 << 10
	IORING_FEAT_CQE_SKIP        = 1 << 11
	IORING_FEAT_LINKED_FILE     = 1 << 12
	IORING_FEAT_REG_REG_RING    = 1 << 13
	IORING_FEAT_RECVSEND_BUNDLE = 1 << 14
	IORING_FEAT_MIN_TIMEOUT     = 1 << 15
)

// Opcodes (enum io_uring_op), up to what 6.12 knows.
const (
	IORING_OP_NOP = iota
	IORING_OP_READV
	IORING_OP_WRITEV
	IORING_OP_FSYNC
	IORING_OP_READ_FIXED
	IORING_OP_WRITE_FIXED
	IORING_OP_POLL_ADD
	IORING_OP_POLL_REMOVE
	IORING_OP_SYNC_FILE_RANGE
	IORING_OP_SENDMSG
	IORING_OP_RECVMSG
	IORING_OP_TIMEOUT
	IORING_OP_TIMEOUT_REMOVE
	IORING_OP_ACCEPT
	IORING_OP_ASYNC_CANCEL
	IORING_OP_LINK_TIMEOUT
	IORING_OP_CONNECT
	IORING_OP_FALLOCATE
	IORING_OP_OPENAT
	IORING_OP_CLOSE
	IORING_OP_FILES_UPDATE
	IORING_OP_STATX
	IORING_OP_READ
	IORING_OP_WRITE
	IORING_OP_FADVISE
	IORING_OP_MADVISE
	IORING_OP_SEND
	IORING_OP_RECV
	IORING_OP_OPENAT2
	IORING_OP_EPOLL_CTL
	IORING_OP_SPLICE
	IORING_OP_PROVIDE_BUFFERS
	IORING_OP_REMOVE_BUFFERS
	IORING_OP_TEE
	IORING_OP_SHUTDOWN
	IORING_OP_RENAMEAT
	IORING_OP_UNLINKAT
	IORING_OP_MKDIRAT
	IORING_OP_SYMLINKAT
	IORING_OP_LINKAT
	IORING_OP_MSG_RING
	IORING_OP_FSETXATTR
	IORING_OP_SETXATTR
	IORING_OP_FGETXATTR
	IORING_OP_GETXATTR
	IORING_OP_SOCKET
	IORING_OP_URING_CMD
	IORING_OP_SEND_ZC
	IORING_OP_SENDMSG_ZC
	IORING_OP_READ_MULTISHOT
	IORING_OP_WAITID
	IORING_OP_FUTEX_WAIT
	IORING_OP_FUTEX_WAKE
	IORING_OP_FUTEX_WAITV
	IORING_OP_FIXED_FD_INSTALL
	IORING_OP_FTRUNCATE
	IORING_OP_BIND
	IORING_OP_LISTEN
	IORING_OP_LAST
)

// Per-opcode flags (the rw_flags union of the SQE).
const (
	IORING_URING_CMD_FIXED = 1 << 0
	// A URING_CMD that completes many times (IORING_CQE_F_MORE on all
	// but its last CQE), each time into a buffer it selects from a
	// provided-buffer ring (IOSQE_BUFFER_SELECT, SQE.BufIndex the group).
	IORING_URING_CMD_MULTISHOT = 1 << 1
	IORING_FSYNC_DATASYNC      = 1 << 0

	IORING_TIMEOUT_ABS           = 1 << 0
	IORING_TIMEOUT_UPDATE        = 1 << 1
	IORING_TIMEOUT_BOOTTIME      = 1 << 2
	IORING_TIMEOUT_REALTIME      = 1 << 3
	IORING_LINK_TIMEOUT_UPDATE   = 1 << 4
	IORING_TIMEOUT_ETIME_SUCCESS = 1 << 5
	IORING_TIMEOUT_MULTISHOT     = 1 << 6

	// POLL_ADD flags travel in the SQE len field.
	IORING_POLL_ADD_MULTI        = 1 << 0
	IORING_POLL_UPDATE_EVENTS    = 1 << 1
	IORING_POLL_UPDATE_USER_DATA = 1 << 2
	IORING_POLL_ADD_LEVEL        = 1 << 3

	IORING_ASYNC_CANCEL_ALL      = 1 << 0
	IORING_ASYNC_CANCEL_FD       = 1 << 1
	IORING_ASYNC_CANCEL_ANY      = 1 << 2
	IORING_ASYNC_CANCEL_FD_FIXED = 1 << 3
	IORING_ASYNC_CANCEL_USERDATA = 1 << 4
	IORING_ASYNC_CANCEL_OP       = 1 << 5
)

// CQE flags.
const (
	IORING_CQE_F_BUFFER        = 1 << 0
	IORING_CQE_F_MORE          = 1 << 1
	IORING_CQE_F_SOCK_NONEMPTY = 1 << 2
	IORING_CQE_F_NOTIF         = 1 << 3
	IORING_CQE_F_BUF_MORE      = 1 << 4

	IORING_CQE_BUFFER_SHIFT = 16
)

// mmap offsets on the ring fd.
const (
	IORING_OFF_SQ_RING    = 0
	IORING_OFF_CQ_RING    = 0x8000000
	IORING_OFF_SQES       = 0x10000000
	IORING_OFF_PBUF_RING  = 0x80000000
	IORING_OFF_PBUF_SHIFT = 16
	IORING_OFF_MMAP_MASK  = 0xf8000000
)

// Flags the kernel sets in the SQ ring's flags word.
const (
	IORING_SQ_NEED_WAKEUP = 1 << 0
	// Completions are waiting in the kernel's overflow list because the CQ
	// was full; enter(GETEVENTS) moves them into the CQ.
	IORING_SQ_CQ_OVERFLOW = 1 << 1
	IORING_SQ_TASKRUN     = 1 << 2
)

// Flags in the CQ ring's flags word, set by the application.
const IORING_CQ_EVENTFD_DISABLED = 1 << 0

// io_uring_register opcodes, up to what 6.12 knows.
const (
	IORING_REGISTER_BUFFERS          = 0
	IORING_UNREGISTER_BUFFERS        = 1
	IORING_REGISTER_FILES            = 2
	IORING_UNREGISTER_FILES          = 3
	IORING_REGISTER_EVENTFD          = 4
	IORING_UNREGISTER_EVENTFD        = 5
	IORING_REGISTER_FILES_UPDATE     = 6
	IORING_REGISTER_EVENTFD_ASYNC    = 7
	IORING_REGISTER_PROBE            = 8
	IORING_REGISTER_PERSONALITY      = 9
	IORING_UNREGISTER_PERSONALITY    = 10
	IORING_REGISTER_RESTRICTIONS     = 11
	IORING_REGISTER_ENABLE_RINGS     = 12
	IORING_REGISTER_FILES2           = 13
	IORING_REGISTER_FILES_UPDATE2    = 14
	IORING_REGISTER_BUFFERS2         = 15
	IORING_REGISTER_BUFFERS_UPDATE   = 16
	IORING_REGISTER_IOWQ_AFF         = 17
	IORING_UNREGISTER_IOWQ_AFF       = 18
	IORING_REGISTER_IOWQ_MAX_WORKERS = 19
	IORING_REGISTER_RING_FDS         = 20
	IORING_UNREGISTER_RING_FDS       = 21
	IORING_REGISTER_PBUF_RING        = 22
	IORING_UNREGISTER_PBUF_RING      = 23
	IORING_REGISTER_SYNC_CANCEL      = 24
	IORING_REGISTER_FILE_ALLOC_RANGE = 25
	IORING_REGISTER_PBUF_STATUS      = 26
	IORING_REGISTER_NAPI             = 27
	IORING_UNREGISTER_NAPI           = 28
	IORING_REGISTER_CLOCK            = 29
	IORING_REGISTER_CLONE_BUFFERS    = 30

	IORING_REGISTER_USE_REGISTERED_RING = 1 << 31
)

// Flags of RsrcRegister.
const (
	// IORING_RSRC_REGISTER_SPARSE makes a table of Nr empty slots, to be
	// filled later (by IORING_REGISTER_BUFFERS_UPDATE, or by a driver
	// such as ublk registering a request's pages).
	IORING_RSRC_REGISTER_SPARSE = 1 << 0
)

// RsrcRegister is struct io_uring_rsrc_register (io_uring.h), the argument
// of IORING_REGISTER_BUFFERS2 and IORING_REGISTER_FILES2; nr_args is its
// size.
type RsrcRegister struct {
	Nr    uint32
	Flags uint32
	Resv2 uint64
	// Data and Tags are user addresses of Nr iovecs and Nr u64 tags; both
	// zero for a sparse table.
	Data uint64
	Tags uint64
}

// Flags of BufReg.
const (
	IOU_PBUF_RING_MMAP = 1 // the kernel allocates the ring (mmap it at IORING_OFF_PBUF_RING)
	IOU_PBUF_RING_INC  = 2 // buffers are consumed a part at a time
)

// BufReg is struct io_uring_buf_reg (io_uring.h), the argument of
// IORING_REGISTER_PBUF_RING: RingEntries Buf slots (a power of two) at the
// page-aligned RingAddr make provided-buffer group Bgid. 6.12 calls the
// last 24 bytes resv[3]; later kernels use their first 4 as min_left, which
// zero leaves unset.
type BufReg struct {
	RingAddr    uint64
	RingEntries uint32
	Bgid        uint16
	Flags       uint16
	Resv        [3]uint64
}

// Buf is struct io_uring_buf (io_uring.h): one slot of a provided-buffer
// ring. The ring's tail (u16) overlays Resv of slot 0, at byte 14.
type Buf struct {
	Addr uint64
	Len  uint32
	Bid  uint16
	Resv uint16
}

// BufRingTailOffset is the byte offset of the tail in a provided-buffer
// ring (struct io_uring_buf_ring).
const BufRingTailOffset = 14

// SQE is struct io_uring_sqe (io_uring.h), 64 bytes. The C unions are
// flattened to their first member; accessors below reach the others.
type SQE struct {
	Opcode uint8
	Flags  uint8
	Ioprio uint16
	Fd     int32
	// Off is off, addr2, or {cmd_op, __pad1} for URING_CMD (see CmdOp).
	Off  uint64
	Addr uint64
	Len  uint32
	// OpFlags is the per-opcode flags union: rw_flags, fsync_flags,
	// poll32_events, uring_cmd_flags...
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	// FileIndex is file_index, splice_fd_in or addr_len.
	FileIndex uint32
	// Addr3 and Pad2 are the first 16 bytes of the command area cmd[]
	// that starts here for URING_CMD.
	Addr3 uint64
	Pad2  uint64
}

// SQECmdOffset is where the URING_CMD payload (sqe->cmd) starts.
const SQECmdOffset = 48

// CmdOp returns cmd_op, the low-addressed half of Off.
func (s *SQE) CmdOp() uint32 { return *(*uint32)(unsafe.Pointer(&s.Off)) }

// SetCmdOp sets cmd_op and clears __pad1, which the kernel requires to be
// zero.
func (s *SQE) SetCmdOp(op uint32) {
	p := (*[2]uint32)(unsafe.Pointer(&s.Off))
	p[0], p[1] = op, 0
}

// IOCmd returns the ublk I/O command payload at offset 48, which fits in a
// 64-byte SQE.
func (s *SQE) IOCmd() *IOCmd { return (*IOCmd)(unsafe.Pointer(&s.Addr3)) }

// BatchCmd returns the ublk batch command payload at offset 48, in place
// of IOCmd.
func (s *SQE) BatchCmd() *BatchIO { return (*BatchIO)(unsafe.Pointer(&s.Addr3)) }

// SQE128 is a slot of a ring set up with IORING_SETUP_SQE128: an SQE
// followed by 64 more bytes, so that the command area runs 80 bytes from
// offset 48.
type SQE128 struct {
	SQE
	Ext [64]uint8
}

// Cmd returns the 80-byte command area.
func (s *SQE128) Cmd() *[80]uint8 { return (*[80]uint8)(unsafe.Pointer(&s.Addr3)) }

// CtrlCmd returns the ublk control command payload at offset 48.
func (s *SQE128) CtrlCmd() *CtrlCmd { return (*CtrlCmd)(unsafe.Pointer(&s.Addr3)) }

// CQE is struct io_uring_cqe (io_uring.h), 16 bytes (rings without
// IORING_SETUP_CQE32).
type CQE struct {
	UserData uint64
	// Res is the operation's result or -errno.
	Res   int32
	Flags uint32
}

// SQRingOffsets is struct io_sqring_offsets (io_uring.h): byte offsets of
// the SQ ring's fields in its mmap.
type SQRingOffsets struct {
	Head        uint32
	Tail        uint32
	RingMask    uint32
	RingEntries uint32
	Flags       uint32
	Dropped     uint32
	Array       uint32
	Resv1       uint32
	UserAddr    uint64
}

// CQRingOffsets is struct io_cqring_offsets (io_uring.h): byte offsets of
// the CQ ring's fields in its mmap.
type CQRingOffsets struct {
	Head        uint32
	Tail        uint32
	RingMask    uint32
	RingEntries uint32
	Overflow    uint32
	Cqes        uint32
	Flags       uint32
	Resv1       uint32
	UserAddr    uint64
}

// URingParams is struct io_uring_params (io_uring.h), 120 bytes: the
// argument of io_uring_setup, filled in by the kernel.
type URingParams struct {
	SqEntries    uint32
	CqEntries    uint32
	Flags        uint32
	SqThreadCPU  uint32
	SqThreadIdle uint32
	Features     uint32
	WqFd         uint32
	Resv         [3]uint32
	SqOff        SQRingOffsets
	CqOff        CQRingOffsets
}

// GeteventsArg is struct io_uring_getevents_arg (io_uring.h), passed to
// io_uring_enter with IORING_ENTER_EXT_ARG to wait with a timeout.
type GeteventsArg struct {
	Sigmask   uint64
	SigmaskSz uint32
	// MinWaitUsec is pad before 6.12.
	MinWaitUsec uint32
	Ts          uint64
}
