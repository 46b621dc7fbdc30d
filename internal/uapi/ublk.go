package uapi

import "unsafe"

// Legacy (non ioctl-encoded) command numbers from ublk_cmd.h. 6.12 forces
// UBLK_F_CMD_IOCTL_ENCODE on, so uraid sends the UBLK_U_* values; these stay
// for decoding and for the _IOC_NR of each encoded value.
const (
	UBLK_CMD_GET_QUEUE_AFFINITY  = 0x01
	UBLK_CMD_GET_DEV_INFO        = 0x02
	UBLK_CMD_ADD_DEV             = 0x04
	UBLK_CMD_DEL_DEV             = 0x05
	UBLK_CMD_START_DEV           = 0x06
	UBLK_CMD_STOP_DEV            = 0x07
	UBLK_CMD_SET_PARAMS          = 0x08
	UBLK_CMD_GET_PARAMS          = 0x09
	UBLK_CMD_START_USER_RECOVERY = 0x10
	UBLK_CMD_END_USER_RECOVERY   = 0x11
	UBLK_CMD_GET_DEV_INFO2       = 0x12

	UBLK_IO_FETCH_REQ            = 0x20
	UBLK_IO_COMMIT_AND_FETCH_REQ = 0x21
	UBLK_IO_NEED_GET_DATA        = 0x22
)

// Control commands, ioctl-encoded with type 'u' and the size of CtrlCmd
// (32). They go in the cmd_op of an IORING_OP_URING_CMD on /dev/ublk-control
// with a CtrlCmd at SQE offset 48 (the ring must use IORING_SETUP_SQE128).
// The driver compares GET_FEATURES with the full value, so the direction
// bits matter.
const (
	UBLK_U_CMD_GET_QUEUE_AFFINITY  = 0x80207501 // _IOR('u', 0x01, ublksrv_ctrl_cmd)
	UBLK_U_CMD_GET_DEV_INFO        = 0x80207502 // _IOR('u', 0x02, ublksrv_ctrl_cmd)
	UBLK_U_CMD_ADD_DEV             = 0xC0207504 // _IOWR('u', 0x04, ublksrv_ctrl_cmd)
	UBLK_U_CMD_DEL_DEV             = 0xC0207505 // _IOWR('u', 0x05, ublksrv_ctrl_cmd)
	UBLK_U_CMD_START_DEV           = 0xC0207506 // _IOWR('u', 0x06, ublksrv_ctrl_cmd)
	UBLK_U_CMD_STOP_DEV            = 0xC0207507 // _IOWR('u', 0x07, ublksrv_ctrl_cmd)
	UBLK_U_CMD_SET_PARAMS          = 0xC0207508 // _IOWR('u', 0x08, ublksrv_ctrl_cmd)
	UBLK_U_CMD_GET_PARAMS          = 0x80207509 // _IOR('u', 0x09, ublksrv_ctrl_cmd)
	UBLK_U_CMD_START_USER_RECOVERY = 0xC0207510 // _IOWR('u', 0x10, ublksrv_ctrl_cmd)
	UBLK_U_CMD_END_USER_RECOVERY   = 0xC0207511 // _IOWR('u', 0x11, ublksrv_ctrl_cmd)
	UBLK_U_CMD_GET_DEV_INFO2       = 0x80207512 // _IOR('u', 0x12, ublksrv_ctrl_cmd)
	UBLK_U_CMD_GET_FEATURES        = 0x80207513 // _IOR('u', 0x13, ublksrv_ctrl_cmd)
	UBLK_U_CMD_DEL_DEV_ASYNC       = 0x80207514 // _IOR('u', 0x14, ublksrv_ctrl_cmd)

	// Added after 6.12; a 6.12 driver answers them with -EOPNOTSUPP.
	UBLK_U_CMD_UPDATE_SIZE  = 0xC0207515 // _IOWR('u', 0x15, ublksrv_ctrl_cmd)
	UBLK_U_CMD_QUIESCE_DEV  = 0xC0207516 // _IOWR('u', 0x16, ublksrv_ctrl_cmd)
	UBLK_U_CMD_TRY_STOP_DEV = 0xC0207517 // _IOWR('u', 0x17, ublksrv_ctrl_cmd)
)

// I/O commands, ioctl-encoded with type 'u' and the size of IOCmd (16). They
// go in the cmd_op of an IORING_OP_URING_CMD on /dev/ublkcN with an IOCmd at
// SQE offset 48; a 64-byte SQE is enough.
const (
	UBLK_U_IO_FETCH_REQ            = 0xC0107520 // _IOWR('u', 0x20, ublksrv_io_cmd)
	UBLK_U_IO_COMMIT_AND_FETCH_REQ = 0xC0107521 // _IOWR('u', 0x21, ublksrv_io_cmd)
	UBLK_U_IO_NEED_GET_DATA        = 0xC0107522 // _IOWR('u', 0x22, ublksrv_io_cmd)

	// Added after 6.12 (zero copy by buffer registration).
	UBLK_U_IO_REGISTER_IO_BUF   = 0xC0107523 // _IOWR('u', 0x23, ublksrv_io_cmd)
	UBLK_U_IO_UNREGISTER_IO_BUF = 0xC0107524 // _IOWR('u', 0x24, ublksrv_io_cmd)

	// With UBLK_F_BATCH_IO (in place of FETCH_REQ and COMMIT_AND_FETCH_REQ),
	// with a BatchIO payload of the same size: PREP hands the driver every
	// tag of a queue once, FETCH (multishot, with a provided-buffer ring)
	// delivers the tags of new requests as arrays of u16, COMMIT completes
	// many requests at once. PREP and COMMIT read an array of
	// BatchElemHeader (each followed by a buffer address with
	// UBLK_BATCH_F_HAS_BUF_ADDR) at the SQE's addr.
	UBLK_U_IO_PREP_IO_CMDS   = 0xC0107525 // _IOWR('u', 0x25, ublk_batch_io)
	UBLK_U_IO_COMMIT_IO_CMDS = 0xC0107526 // _IOWR('u', 0x26, ublk_batch_io)
	UBLK_U_IO_FETCH_IO_CMDS  = 0xC0107527 // _IOWR('u', 0x27, ublk_batch_io)
)

// Flags of BatchIO: what follows each element's header. HAS_BUF_ADDR is for
// devices the driver copies data to and from (no zero copy);
// AUTO_BUF_REG_FALLBACK is UBLK_AUTO_BUF_REG_FALLBACK for every element.
const (
	UBLK_BATCH_F_HAS_ZONE_LBA          = 1 << 0
	UBLK_BATCH_F_HAS_BUF_ADDR          = 1 << 1
	UBLK_BATCH_F_AUTO_BUF_REG_FALLBACK = 1 << 2
)

// UBLK_FEATURES_LEN is the exact CtrlCmd.Len of UBLK_U_CMD_GET_FEATURES: the
// kernel writes one u64 of UBLK_F_* bits.
const UBLK_FEATURES_LEN = 8

// Results of a FETCH or COMMIT_AND_FETCH completion (cqe.res). Only ABORT
// means "do not fetch this tag again": the device is going away.
const (
	UBLK_IO_RES_OK            = 0
	UBLK_IO_RES_NEED_GET_DATA = 1
	UBLK_IO_RES_ABORT         = -19 // -ENODEV
)

// Layout of the mmap regions of /dev/ublkcN. Queue q's descriptor array
// (depth IODescs, read-only) is mapped at UBLKSRV_CMD_BUF_OFFSET +
// q*CmdBufMaxSize(pageSize); with UBLK_F_USER_COPY, request data is read and
// written with pread/pwrite at UBLKSRV_IO_BUF_OFFSET + IOBufOffset(q, tag).
const (
	UBLKSRV_CMD_BUF_OFFSET = 0
	UBLKSRV_IO_BUF_OFFSET  = 0x80000000

	// Tags are 16 bits in the user-copy offset but a queue is still
	// limited to 4096 of them.
	UBLK_MAX_QUEUE_DEPTH = 4096

	// A single request buffer is at most 32 MiB (1<<25).
	UBLK_IO_BUF_OFF       = 0
	UBLK_IO_BUF_BITS      = 25
	UBLK_IO_BUF_BITS_MASK = (1 << UBLK_IO_BUF_BITS) - 1

	UBLK_TAG_OFF       = UBLK_IO_BUF_BITS
	UBLK_TAG_BITS      = 16
	UBLK_TAG_BITS_MASK = (1 << UBLK_TAG_BITS) - 1

	UBLK_QID_OFF       = UBLK_TAG_OFF + UBLK_TAG_BITS
	UBLK_QID_BITS      = 12
	UBLK_QID_BITS_MASK = (1 << UBLK_QID_BITS) - 1

	UBLK_MAX_NR_QUEUES = 1 << UBLK_QID_BITS

	UBLKSRV_IO_BUF_TOTAL_BITS = UBLK_QID_OFF + UBLK_QID_BITS
	UBLKSRV_IO_BUF_TOTAL_SIZE = 1 << UBLKSRV_IO_BUF_TOTAL_BITS
)

// Device feature flags (ctrl_dev_info.flags, and the bits GET_FEATURES
// reports) that 6.12 has: it reports 0x1FE, bits 1 to 8.
const (
	// Cleared by 6.12: the driver has no zero copy yet.
	UBLK_F_SUPPORT_ZERO_COPY = 1 << 0
	// Forced on by 6.12.
	UBLK_F_URING_CMD_COMP_IN_TASK = 1 << 1
	// WRITEs arrive first as UBLK_IO_RES_NEED_GET_DATA and the server
	// answers with UBLK_U_IO_NEED_GET_DATA carrying the buffer address.
	UBLK_F_NEED_GET_DATA = 1 << 2
	// The device survives the server: it is QUIESCED, not deleted, and a
	// new server resumes it with START/END_USER_RECOVERY. In-flight I/O
	// is failed.
	UBLK_F_USER_RECOVERY = 1 << 3
	// As UBLK_F_USER_RECOVERY, but in-flight I/O is reissued to the new
	// server.
	UBLK_F_USER_RECOVERY_REISSUE = 1 << 4
	UBLK_F_UNPRIVILEGED_DEV      = 1 << 5
	// Forced on by 6.12.
	UBLK_F_CMD_IOCTL_ENCODE = 1 << 6
	// Data moves by pread/pwrite on /dev/ublkcN instead of a buffer
	// address in FETCH.
	UBLK_F_USER_COPY = 1 << 7
	UBLK_F_ZONED     = 1 << 8
)

// Device feature flags added after 6.12, which rejects or clears them, each
// with the first kernel that reports it. From 6.16 on the versions are what
// GET_FEATURES answers on Debian's kernels: 6.16 0x3FFF, 6.17 and 6.18
// 0x7FFF, 7.2 0xFFFFF, 7.3 0x1FFFFF. Debian carried nothing between 6.12
// and 6.16, so 6.13 and 6.15 come from the kernel's history; and its archive
// keeps no modules for 6.19 to 7.1, so bits 15 to 19 are known only to
// arrive after 6.18 and by 7.2. UBLK_F_SUPPORT_ZERO_COPY, cleared by 6.12,
// is reported again from 6.15 (zero copy by UBLK_U_IO_REGISTER_IO_BUF).
const (
	// 6.13: as UBLK_F_USER_RECOVERY, but I/O issued while no server runs
	// fails instead of queueing.
	UBLK_F_USER_RECOVERY_FAIL_IO = 1 << 9
	// 6.15: UBLK_U_CMD_UPDATE_SIZE resizes a live device.
	UBLK_F_UPDATE_SIZE = 1 << 10
	// 6.16: the request buffer is registered in the server's io_uring
	// buffer table before the request is delivered.
	UBLK_F_AUTO_BUF_REG = 1 << 11
	// 6.16: UBLK_U_CMD_QUIESCE_DEV (with UBLK_F_USER_RECOVERY).
	UBLK_F_QUIESCE = 1 << 12
	// 6.16: each (queue, tag) may have its own daemon task.
	UBLK_F_PER_IO_DAEMON = 1 << 13
	// 6.17: REGISTER/UNREGISTER_IO_BUF from any task.
	UBLK_F_BUF_REG_OFF_DAEMON = 1 << 14
	// 6.19-7.2: UBLK_U_IO_PREP/COMMIT/FETCH_IO_CMDS, batched I/O commands
	// in place of FETCH_REQ and COMMIT_AND_FETCH_REQ.
	UBLK_F_BATCH_IO = 1 << 15
	// 6.19-7.2: requests with an integrity (metadata) buffer; needs
	// UBLK_F_USER_COPY.
	UBLK_F_INTEGRITY = 1 << 16
	// 6.19-7.2: UBLK_U_CMD_TRY_STOP_DEV stops the device only when no one
	// has it open.
	UBLK_F_SAFE_STOP_DEV = 1 << 17
	// 6.19-7.2: no partition scan when the device starts.
	UBLK_F_NO_AUTO_PART_SCAN = 1 << 18
	// 6.19-7.2: shared-memory zero copy through UBLK_U_CMD_REG_BUF.
	UBLK_F_SHMEM_ZC = 1 << 19
	// 7.3: the size of ublksrv_io_desc is set by the device info.
	UBLK_F_IO_DESC_SIZE = 1 << 20
)

// Device states (ctrl_dev_info.state).
const (
	UBLK_S_DEV_DEAD     = 0
	UBLK_S_DEV_LIVE     = 1
	UBLK_S_DEV_QUIESCED = 2
	// Added after 6.12.
	UBLK_S_DEV_FAIL_IO = 3
)

// Request operations: the low 8 bits of IODesc.OpFlags.
const (
	UBLK_IO_OP_READ           = 0
	UBLK_IO_OP_WRITE          = 1
	UBLK_IO_OP_FLUSH          = 2
	UBLK_IO_OP_DISCARD        = 3
	UBLK_IO_OP_WRITE_SAME     = 4 // defined but never sent
	UBLK_IO_OP_WRITE_ZEROES   = 5
	UBLK_IO_OP_ZONE_OPEN      = 10
	UBLK_IO_OP_ZONE_CLOSE     = 11
	UBLK_IO_OP_ZONE_FINISH    = 12
	UBLK_IO_OP_ZONE_APPEND    = 13
	UBLK_IO_OP_ZONE_RESET_ALL = 14
	UBLK_IO_OP_ZONE_RESET     = 15
	UBLK_IO_OP_REPORT_ZONES   = 18
)

// Request flags, as bit positions in IODesc.OpFlags itself (not shifted
// down by 8 the way C's ublksrv_get_flags returns them): test them with
// IODesc.Flags()&UBLK_IO_F_FUA.
const (
	UBLK_IO_F_FAILFAST_DEV       = 1 << 8
	UBLK_IO_F_FAILFAST_TRANSPORT = 1 << 9
	UBLK_IO_F_FAILFAST_DRIVER    = 1 << 10
	UBLK_IO_F_META               = 1 << 11
	UBLK_IO_F_FUA                = 1 << 13
	// On WRITE_ZEROES: zero without deallocating.
	UBLK_IO_F_NOUNMAP = 1 << 15
	UBLK_IO_F_SWAP    = 1 << 16
	// With UBLK_F_AUTO_BUF_REG and UBLK_AUTO_BUF_REG_FALLBACK: the driver
	// could not register the request's buffer, and the server must
	// register it with UBLK_U_IO_REGISTER_IO_BUF before using it.
	UBLK_IO_F_NEED_REG_BUF = 1 << 17
)

// Flags of AutoBufReg. With FALLBACK a request whose buffer the driver
// could not register arrives with UBLK_IO_F_NEED_REG_BUF; without it the
// request fails with EIO and the server never sees it.
const (
	UBLK_AUTO_BUF_REG_FALLBACK = 1 << 0
	UBLK_AUTO_BUF_REG_F_MASK   = UBLK_AUTO_BUF_REG_FALLBACK
)

// Attributes in ParamBasic.Attrs. FLUSH requests arrive only with
// VOLATILE_CACHE, FUA writes only with VOLATILE_CACHE|FUA.
const (
	UBLK_ATTR_READ_ONLY      = 1 << 0
	UBLK_ATTR_ROTATIONAL     = 1 << 1
	UBLK_ATTR_VOLATILE_CACHE = 1 << 2
	UBLK_ATTR_FUA            = 1 << 3
)

// Parameter groups present in Params.Types. DEVT is read-only: setting it
// is -EINVAL.
const (
	UBLK_PARAM_TYPE_BASIC   = 1 << 0
	UBLK_PARAM_TYPE_DISCARD = 1 << 1
	UBLK_PARAM_TYPE_DEVT    = 1 << 2
	UBLK_PARAM_TYPE_ZONED   = 1 << 3
)

// CtrlCmd is struct ublksrv_ctrl_cmd (ublk_cmd.h): the payload of every
// control command, at SQE offset 48 of a 128-byte SQE.
type CtrlCmd struct {
	DevID uint32
	// QueueID is 0xFFFF for commands that are not about one queue.
	QueueID uint16
	// Len is the size of the buffer at Addr.
	Len  uint16
	Addr uint64
	// Data is inline data: the daemon pid for START_DEV and
	// END_USER_RECOVERY.
	Data uint64
	// DevPathLen counts the trailing NUL; used by unprivileged devices
	// and GET_DEV_INFO2 only.
	DevPathLen uint16
	Pad        uint16
	Reserved   uint32
}

// CtrlDevInfo is struct ublksrv_ctrl_dev_info (ublk_cmd.h), passed to
// ADD_DEV and returned by GET_DEV_INFO(2).
type CtrlDevInfo struct {
	NrHwQueues    uint16
	QueueDepth    uint16
	State         uint16
	Pad0          uint16
	MaxIOBufBytes uint32
	DevID         uint32
	UblksrvPID    int32
	Pad1          uint32
	Flags         uint64
	// UblksrvFlags is kept by the driver and never interpreted.
	UblksrvFlags uint64
	OwnerUID     uint32
	OwnerGID     uint32
	Reserved1    uint64
	Reserved2    uint64
}

// IODesc is struct ublksrv_io_desc (ublk_cmd.h): one request, written by
// the driver into the queue's shared descriptor array at index tag before
// it completes that tag's FETCH.
type IODesc struct {
	// OpFlags holds the operation in bits 0-7 and UBLK_IO_F_* flags above.
	OpFlags uint32
	// NrSectors counts 512-byte sectors (nr_zones for REPORT_ZONES).
	NrSectors   uint32
	StartSector uint64
	// Addr is the buffer the server gave in FETCH.
	Addr uint64
}

// Op returns the UBLK_IO_OP_* of the request.
func (d *IODesc) Op() uint8 { return uint8(d.OpFlags) }

// Flags returns the UBLK_IO_F_* bits in place, so that
// d.Flags()&UBLK_IO_F_FUA != 0 works. (C's ublksrv_get_flags shifts them
// down by 8, which does not match the constants.)
func (d *IODesc) Flags() uint32 { return d.OpFlags &^ 0xff }

// IOCmd is struct ublksrv_io_cmd (ublk_cmd.h): the payload of FETCH,
// COMMIT_AND_FETCH and NEED_GET_DATA, at SQE offset 48.
type IOCmd struct {
	QID uint16
	Tag uint16
	// Result is the request's outcome for COMMIT: bytes for READ/WRITE,
	// 0 for the rest, or -errno.
	Result int32
	// Addr is the request buffer for FETCH (zero with UBLK_F_USER_COPY);
	// the ZONE_APPEND LBA on commit of a zone append.
	Addr uint64
}

// AutoBufReg is struct ublk_auto_buf_reg (ublk_cmd.h, 6.16): with
// UBLK_F_AUTO_BUF_REG, where in the fixed-buffer table of the ring that
// sends FETCH or COMMIT_AND_FETCH the driver registers the next request's
// pages. It travels in the SQE's addr field (not IOCmd.Addr, which must
// then be zero), packed as SQEAddr gives it. The reserved fields must be
// zero.
type AutoBufReg struct {
	Index     uint16
	Flags     uint8
	Reserved0 uint8
	Reserved1 uint32
}

// SQEAddr packs r as the kernel's ublk_auto_buf_reg_to_sqe_addr does:
// index in bits 0-15, flags 16-23, reserved0 24-31, reserved1 32-63.
func (r AutoBufReg) SQEAddr() uint64 {
	return uint64(r.Index) | uint64(r.Flags)<<16 | uint64(r.Reserved0)<<24 | uint64(r.Reserved1)<<32
}

// BatchIO is struct ublk_batch_io (ublk_cmd.h, 6.19): the payload of the
// batch I/O commands, at SQE offset 48. NrElem elements of ElemBytes each
// (8, or 16 with UBLK_BATCH_F_HAS_BUF_ADDR) sit at the SQE's addr for PREP
// and COMMIT; FETCH takes ElemBytes 2 and Flags 0.
type BatchIO struct {
	QID       uint16
	Flags     uint16
	NrElem    uint16
	ElemBytes uint8
	Reserved  uint8
	Reserved2 uint64
}

// BatchElemHeader is struct ublk_elem_header (ublk_cmd.h, 6.19): one tag of
// a PREP or COMMIT. BufIndex is where, with UBLK_F_AUTO_BUF_REG, the driver
// registers the tag's next request; Result is the request's outcome
// (COMMIT only), as IOCmd.Result.
type BatchElemHeader struct {
	Tag      uint16
	BufIndex uint16
	Result   int32
}

// ParamBasic is struct ublk_param_basic (ublk_cmd.h).
type ParamBasic struct {
	Attrs           uint32
	LogicalBsShift  uint8
	PhysicalBsShift uint8
	IOOptShift      uint8
	IOMinShift      uint8
	MaxSectors      uint32
	// ChunkSectors keeps reads and writes from crossing a chunk; discards
	// are not split at it.
	ChunkSectors     uint32
	DevSectors       uint64
	VirtBoundaryMask uint64
}

// ParamDiscard is struct ublk_param_discard (ublk_cmd.h).
type ParamDiscard struct {
	DiscardAlignment uint32
	// DiscardGranularity is in bytes and must not be zero.
	DiscardGranularity    uint32
	MaxDiscardSectors     uint32
	MaxWriteZeroesSectors uint32
	// MaxDiscardSegments must be 1 when MaxDiscardSectors is not zero:
	// the server sees one contiguous range per request.
	MaxDiscardSegments uint16
	Reserved0          uint16
}

// ParamDevt is struct ublk_param_devt (ublk_cmd.h), read-only; the disk
// numbers are valid once the device is started.
type ParamDevt struct {
	CharMajor uint32
	CharMinor uint32
	DiskMajor uint32
	DiskMinor uint32
}

// ParamZoned is struct ublk_param_zoned (ublk_cmd.h).
type ParamZoned struct {
	MaxOpenZones         uint32
	MaxActiveZones       uint32
	MaxZoneAppendSectors uint32
	Reserved             [20]uint8
}

// Params is struct ublk_params (ublk_cmd.h) as of 6.12 (112 bytes). Len
// must be set for both SET_PARAMS and GET_PARAMS; Types says which groups
// are meaningful.
type Params struct {
	Len     uint32
	Types   uint32
	Basic   ParamBasic
	Discard ParamDiscard
	Devt    ParamDevt
	Zoned   ParamZoned
	// Tail padding the C compiler adds to align the struct to 8.
	Pad [4]uint8
}

const (
	sizeofIODesc = unsafe.Sizeof(IODesc{})
)

// CmdBufMaxSize is the stride between queues in the /dev/ublkcN mmap
// offset space: room for UBLK_MAX_QUEUE_DEPTH descriptors, rounded up to a
// page.
func CmdBufMaxSize(pageSize int) int64 {
	return roundUp(int64(UBLK_MAX_QUEUE_DEPTH)*int64(sizeofIODesc), int64(pageSize))
}

// CmdBufOffset is the mmap offset of queue qid's descriptor array.
func CmdBufOffset(qid uint16, pageSize int) int64 {
	return UBLKSRV_CMD_BUF_OFFSET + int64(qid)*CmdBufMaxSize(pageSize)
}

// CmdBufSize is the exact mmap length the driver accepts for a queue of the
// given depth; any other length is -EINVAL.
func CmdBufSize(depth uint16, pageSize int) int {
	return int(roundUp(int64(depth)*int64(sizeofIODesc), int64(pageSize)))
}

// IOBufOffset is the pread/pwrite offset of request (qid, tag) on
// /dev/ublkcN with UBLK_F_USER_COPY; add the byte offset within the
// request.
func IOBufOffset(qid, tag uint16) int64 {
	return UBLKSRV_IO_BUF_OFFSET | int64(qid)<<UBLK_QID_OFF | int64(tag)<<UBLK_TAG_OFF
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
