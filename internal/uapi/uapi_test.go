package uapi

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// field is one expected member of a kernel struct: its C name and byte
// offset in the Linux 6.12 headers (x86-64).
type field struct {
	name   string
	got    uintptr
	offset uintptr
}

type layout struct {
	cstruct string
	size    uintptr
	wantSz  uintptr
	fields  []field
}

// layouts lists every struct in the package with sizes and offsets taken
// from include/uapi/linux/ublk_cmd.h and io_uring.h of Linux 6.12.
func layouts() []layout {
	var (
		cc   CtrlCmd
		di   CtrlDevInfo
		iod  IODesc
		ic   IOCmd
		pb   ParamBasic
		pd   ParamDiscard
		pv   ParamDevt
		pz   ParamZoned
		p    Params
		sqe  SQE
		s128 SQE128
		cqe  CQE
		so   SQRingOffsets
		co   CQRingOffsets
		up   URingParams
		ga   GeteventsArg
		ab   AutoBufReg
		rr   RsrcRegister
		bio  BatchIO
		beh  BatchElemHeader
		br   BufReg
		buf  Buf
	)
	return []layout{
		{"ublksrv_ctrl_cmd", unsafe.Sizeof(cc), 32, []field{
			{"dev_id", unsafe.Offsetof(cc.DevID), 0},
			{"queue_id", unsafe.Offsetof(cc.QueueID), 4},
			{"len", unsafe.Offsetof(cc.Len), 6},
			{"addr", unsafe.Offsetof(cc.Addr), 8},
			{"data", unsafe.Offsetof(cc.Data), 16},
			{"dev_path_len", unsafe.Offsetof(cc.DevPathLen), 24},
			{"pad", unsafe.Offsetof(cc.Pad), 26},
			{"reserved", unsafe.Offsetof(cc.Reserved), 28},
		}},
		{"ublksrv_ctrl_dev_info", unsafe.Sizeof(di), 64, []field{
			{"nr_hw_queues", unsafe.Offsetof(di.NrHwQueues), 0},
			{"queue_depth", unsafe.Offsetof(di.QueueDepth), 2},
			{"state", unsafe.Offsetof(di.State), 4},
			{"pad0", unsafe.Offsetof(di.Pad0), 6},
			{"max_io_buf_bytes", unsafe.Offsetof(di.MaxIOBufBytes), 8},
			{"dev_id", unsafe.Offsetof(di.DevID), 12},
			{"ublksrv_pid", unsafe.Offsetof(di.UblksrvPID), 16},
			{"pad1", unsafe.Offsetof(di.Pad1), 20},
			{"flags", unsafe.Offsetof(di.Flags), 24},
			{"ublksrv_flags", unsafe.Offsetof(di.UblksrvFlags), 32},
			{"owner_uid", unsafe.Offsetof(di.OwnerUID), 40},
			{"owner_gid", unsafe.Offsetof(di.OwnerGID), 44},
			{"reserved1", unsafe.Offsetof(di.Reserved1), 48},
			{"reserved2", unsafe.Offsetof(di.Reserved2), 56},
		}},
		{"ublksrv_io_desc", unsafe.Sizeof(iod), 24, []field{
			{"op_flags", unsafe.Offsetof(iod.OpFlags), 0},
			{"nr_sectors", unsafe.Offsetof(iod.NrSectors), 4},
			{"start_sector", unsafe.Offsetof(iod.StartSector), 8},
			{"addr", unsafe.Offsetof(iod.Addr), 16},
		}},
		{"ublksrv_io_cmd", unsafe.Sizeof(ic), 16, []field{
			{"q_id", unsafe.Offsetof(ic.QID), 0},
			{"tag", unsafe.Offsetof(ic.Tag), 2},
			{"result", unsafe.Offsetof(ic.Result), 4},
			{"addr", unsafe.Offsetof(ic.Addr), 8},
		}},
		{"ublk_param_basic", unsafe.Sizeof(pb), 32, []field{
			{"attrs", unsafe.Offsetof(pb.Attrs), 0},
			{"logical_bs_shift", unsafe.Offsetof(pb.LogicalBsShift), 4},
			{"physical_bs_shift", unsafe.Offsetof(pb.PhysicalBsShift), 5},
			{"io_opt_shift", unsafe.Offsetof(pb.IOOptShift), 6},
			{"io_min_shift", unsafe.Offsetof(pb.IOMinShift), 7},
			{"max_sectors", unsafe.Offsetof(pb.MaxSectors), 8},
			{"chunk_sectors", unsafe.Offsetof(pb.ChunkSectors), 12},
			{"dev_sectors", unsafe.Offsetof(pb.DevSectors), 16},
			{"virt_boundary_mask", unsafe.Offsetof(pb.VirtBoundaryMask), 24},
		}},
		{"ublk_param_discard", unsafe.Sizeof(pd), 20, []field{
			{"discard_alignment", unsafe.Offsetof(pd.DiscardAlignment), 0},
			{"discard_granularity", unsafe.Offsetof(pd.DiscardGranularity), 4},
			{"max_discard_sectors", unsafe.Offsetof(pd.MaxDiscardSectors), 8},
			{"max_write_zeroes_sectors", unsafe.Offsetof(pd.MaxWriteZeroesSectors), 12},
			{"max_discard_segments", unsafe.Offsetof(pd.MaxDiscardSegments), 16},
			{"reserved0", unsafe.Offsetof(pd.Reserved0), 18},
		}},
		{"ublk_param_devt", unsafe.Sizeof(pv), 16, []field{
			{"char_major", unsafe.Offsetof(pv.CharMajor), 0},
			{"char_minor", unsafe.Offsetof(pv.CharMinor), 4},
			{"disk_major", unsafe.Offsetof(pv.DiskMajor), 8},
			{"disk_minor", unsafe.Offsetof(pv.DiskMinor), 12},
		}},
		{"ublk_param_zoned", unsafe.Sizeof(pz), 32, []field{
			{"max_open_zones", unsafe.Offsetof(pz.MaxOpenZones), 0},
			{"max_active_zones", unsafe.Offsetof(pz.MaxActiveZones), 4},
			{"max_zone_append_sectors", unsafe.Offsetof(pz.MaxZoneAppendSectors), 8},
			{"reserved", unsafe.Offsetof(pz.Reserved), 12},
		}},
		{"ublk_params", unsafe.Sizeof(p), 112, []field{
			{"len", unsafe.Offsetof(p.Len), 0},
			{"types", unsafe.Offsetof(p.Types), 4},
			{"basic", unsafe.Offsetof(p.Basic), 8},
			{"discard", unsafe.Offsetof(p.Discard), 40},
			{"devt", unsafe.Offsetof(p.Devt), 60},
			{"zoned", unsafe.Offsetof(p.Zoned), 76},
			{"(tail padding)", unsafe.Offsetof(p.Pad), 108},
		}},
		{"io_uring_sqe", unsafe.Sizeof(sqe), 64, []field{
			{"opcode", unsafe.Offsetof(sqe.Opcode), 0},
			{"flags", unsafe.Offsetof(sqe.Flags), 1},
			{"ioprio", unsafe.Offsetof(sqe.Ioprio), 2},
			{"fd", unsafe.Offsetof(sqe.Fd), 4},
			{"off", unsafe.Offsetof(sqe.Off), 8},
			{"addr", unsafe.Offsetof(sqe.Addr), 16},
			{"len", unsafe.Offsetof(sqe.Len), 24},
			{"rw_flags", unsafe.Offsetof(sqe.OpFlags), 28},
			{"user_data", unsafe.Offsetof(sqe.UserData), 32},
			{"buf_index", unsafe.Offsetof(sqe.BufIndex), 40},
			{"personality", unsafe.Offsetof(sqe.Personality), 42},
			{"file_index", unsafe.Offsetof(sqe.FileIndex), 44},
			{"addr3", unsafe.Offsetof(sqe.Addr3), 48},
			{"__pad2", unsafe.Offsetof(sqe.Pad2), 56},
		}},
		{"io_uring_sqe (SQE128)", unsafe.Sizeof(s128), 128, []field{
			{"cmd", unsafe.Offsetof(s128.Addr3), SQECmdOffset},
			{"(second half)", unsafe.Offsetof(s128.Ext), 64},
		}},
		{"io_uring_cqe", unsafe.Sizeof(cqe), 16, []field{
			{"user_data", unsafe.Offsetof(cqe.UserData), 0},
			{"res", unsafe.Offsetof(cqe.Res), 8},
			{"flags", unsafe.Offsetof(cqe.Flags), 12},
		}},
		{"io_sqring_offsets", unsafe.Sizeof(so), 40, []field{
			{"head", unsafe.Offsetof(so.Head), 0},
			{"tail", unsafe.Offsetof(so.Tail), 4},
			{"ring_mask", unsafe.Offsetof(so.RingMask), 8},
			{"ring_entries", unsafe.Offsetof(so.RingEntries), 12},
			{"flags", unsafe.Offsetof(so.Flags), 16},
			{"dropped", unsafe.Offsetof(so.Dropped), 20},
			{"array", unsafe.Offsetof(so.Array), 24},
			{"resv1", unsafe.Offsetof(so.Resv1), 28},
			{"user_addr", unsafe.Offsetof(so.UserAddr), 32},
		}},
		{"io_cqring_offsets", unsafe.Sizeof(co), 40, []field{
			{"head", unsafe.Offsetof(co.Head), 0},
			{"tail", unsafe.Offsetof(co.Tail), 4},
			{"ring_mask", unsafe.Offsetof(co.RingMask), 8},
			{"ring_entries", unsafe.Offsetof(co.RingEntries), 12},
			{"overflow", unsafe.Offsetof(co.Overflow), 16},
			{"cqes", unsafe.Offsetof(co.Cqes), 20},
			{"flags", unsafe.Offsetof(co.Flags), 24},
			{"resv1", unsafe.Offsetof(co.Resv1), 28},
			{"user_addr", unsafe.Offsetof(co.UserAddr), 32},
		}},
		{"io_uring_params", unsafe.Sizeof(up), 120, []field{
			{"sq_entries", unsafe.Offsetof(up.SqEntries), 0},
			{"cq_entries", unsafe.Offsetof(up.CqEntries), 4},
			{"flags", unsafe.Offsetof(up.Flags), 8},
			{"sq_thread_cpu", unsafe.Offsetof(up.SqThreadCPU), 12},
			{"sq_thread_idle", unsafe.Offsetof(up.SqThreadIdle), 16},
			{"features", unsafe.Offsetof(up.Features), 20},
			{"wq_fd", unsafe.Offsetof(up.WqFd), 24},
			{"resv", unsafe.Offsetof(up.Resv), 28},
			{"sq_off", unsafe.Offsetof(up.SqOff), 40},
			{"cq_off", unsafe.Offsetof(up.CqOff), 80},
		}},
		{"ublk_auto_buf_reg", unsafe.Sizeof(ab), 8, []field{
			{"index", unsafe.Offsetof(ab.Index), 0},
			{"flags", unsafe.Offsetof(ab.Flags), 2},
			{"reserved0", unsafe.Offsetof(ab.Reserved0), 3},
			{"reserved1", unsafe.Offsetof(ab.Reserved1), 4},
		}},
		{"io_uring_rsrc_register", unsafe.Sizeof(rr), 32, []field{
			{"nr", unsafe.Offsetof(rr.Nr), 0},
			{"flags", unsafe.Offsetof(rr.Flags), 4},
			{"resv2", unsafe.Offsetof(rr.Resv2), 8},
			{"data", unsafe.Offsetof(rr.Data), 16},
			{"tags", unsafe.Offsetof(rr.Tags), 24},
		}},
		{"ublk_batch_io", unsafe.Sizeof(bio), 16, []field{
			{"q_id", unsafe.Offsetof(bio.QID), 0},
			{"flags", unsafe.Offsetof(bio.Flags), 2},
			{"nr_elem", unsafe.Offsetof(bio.NrElem), 4},
			{"elem_bytes", unsafe.Offsetof(bio.ElemBytes), 6},
			{"reserved", unsafe.Offsetof(bio.Reserved), 7},
			{"reserved2", unsafe.Offsetof(bio.Reserved2), 8},
		}},
		{"ublk_elem_header", unsafe.Sizeof(beh), 8, []field{
			{"tag", unsafe.Offsetof(beh.Tag), 0},
			{"buf_index", unsafe.Offsetof(beh.BufIndex), 2},
			{"result", unsafe.Offsetof(beh.Result), 4},
		}},
		{"io_uring_buf_reg", unsafe.Sizeof(br), 40, []field{
			{"ring_addr", unsafe.Offsetof(br.RingAddr), 0},
			{"ring_entries", unsafe.Offsetof(br.RingEntries), 8},
			{"bgid", unsafe.Offsetof(br.Bgid), 12},
			// "flags" since 6.3, "pad" before: its offset is checked here
			// only, against the C header of 6.12.
			{"(flags)", unsafe.Offsetof(br.Flags), 14},
		}},
		{"io_uring_buf", unsafe.Sizeof(buf), 16, []field{
			{"addr", unsafe.Offsetof(buf.Addr), 0},
			{"len", unsafe.Offsetof(buf.Len), 8},
			{"bid", unsafe.Offsetof(buf.Bid), 12},
			{"resv", unsafe.Offsetof(buf.Resv), 14},
		}},
		{"io_uring_getevents_arg", unsafe.Sizeof(ga), 24, []field{
			{"sigmask", unsafe.Offsetof(ga.Sigmask), 0},
			{"sigmask_sz", unsafe.Offsetof(ga.SigmaskSz), 8},
			{"min_wait_usec", unsafe.Offsetof(ga.MinWaitUsec), 12},
			{"ts", unsafe.Offsetof(ga.Ts), 16},
		}},
	}
}

func TestStructLayout(t *testing.T) {
	for _, l := range layouts() {
		t.Run(l.cstruct, func(t *testing.T) {
			assert.Equal(t, l.wantSz, l.size, "sizeof(struct %s)", l.cstruct)
			for _, f := range l.fields {
				assert.Equal(t, f.offset, f.got, "offsetof(struct %s, %s)", l.cstruct, f.name)
			}
		})
	}
}

func TestIoctlEncodedCommands(t *testing.T) {
	ctrl := uint32(unsafe.Sizeof(CtrlCmd{}))
	io := uint32(unsafe.Sizeof(IOCmd{}))
	ior := func(nr, size uint32) uint32 { return ioc(_IOC_READ, 'u', nr, size) }
	iowr := func(nr, size uint32) uint32 { return ioc(_IOC_READ|_IOC_WRITE, 'u', nr, size) }
	tests := []struct {
		name string
		got  uint32
		want uint32
	}{
		{"UBLK_U_CMD_GET_QUEUE_AFFINITY", UBLK_U_CMD_GET_QUEUE_AFFINITY, ior(UBLK_CMD_GET_QUEUE_AFFINITY, ctrl)},
		{"UBLK_U_CMD_GET_DEV_INFO", UBLK_U_CMD_GET_DEV_INFO, ior(UBLK_CMD_GET_DEV_INFO, ctrl)},
		{"UBLK_U_CMD_ADD_DEV", UBLK_U_CMD_ADD_DEV, iowr(UBLK_CMD_ADD_DEV, ctrl)},
		{"UBLK_U_CMD_DEL_DEV", UBLK_U_CMD_DEL_DEV, iowr(UBLK_CMD_DEL_DEV, ctrl)},
		{"UBLK_U_CMD_START_DEV", UBLK_U_CMD_START_DEV, iowr(UBLK_CMD_START_DEV, ctrl)},
		{"UBLK_U_CMD_STOP_DEV", UBLK_U_CMD_STOP_DEV, iowr(UBLK_CMD_STOP_DEV, ctrl)},
		{"UBLK_U_CMD_SET_PARAMS", UBLK_U_CMD_SET_PARAMS, iowr(UBLK_CMD_SET_PARAMS, ctrl)},
		{"UBLK_U_CMD_GET_PARAMS", UBLK_U_CMD_GET_PARAMS, ior(UBLK_CMD_GET_PARAMS, ctrl)},
		{"UBLK_U_CMD_START_USER_RECOVERY", UBLK_U_CMD_START_USER_RECOVERY, iowr(UBLK_CMD_START_USER_RECOVERY, ctrl)},
		{"UBLK_U_CMD_END_USER_RECOVERY", UBLK_U_CMD_END_USER_RECOVERY, iowr(UBLK_CMD_END_USER_RECOVERY, ctrl)},
		{"UBLK_U_CMD_GET_DEV_INFO2", UBLK_U_CMD_GET_DEV_INFO2, ior(UBLK_CMD_GET_DEV_INFO2, ctrl)},
		{"UBLK_U_CMD_GET_FEATURES", UBLK_U_CMD_GET_FEATURES, ior(0x13, ctrl)},
		{"UBLK_U_CMD_DEL_DEV_ASYNC", UBLK_U_CMD_DEL_DEV_ASYNC, ior(0x14, ctrl)},
		{"UBLK_U_CMD_UPDATE_SIZE", UBLK_U_CMD_UPDATE_SIZE, iowr(0x15, ctrl)},
		{"UBLK_U_CMD_QUIESCE_DEV", UBLK_U_CMD_QUIESCE_DEV, iowr(0x16, ctrl)},
		{"UBLK_U_CMD_TRY_STOP_DEV", UBLK_U_CMD_TRY_STOP_DEV, iowr(0x17, ctrl)},
		{"UBLK_U_IO_FETCH_REQ", UBLK_U_IO_FETCH_REQ, iowr(UBLK_IO_FETCH_REQ, io)},
		{"UBLK_U_IO_COMMIT_AND_FETCH_REQ", UBLK_U_IO_COMMIT_AND_FETCH_REQ, iowr(UBLK_IO_COMMIT_AND_FETCH_REQ, io)},
		{"UBLK_U_IO_NEED_GET_DATA", UBLK_U_IO_NEED_GET_DATA, iowr(UBLK_IO_NEED_GET_DATA, io)},
		{"UBLK_U_IO_REGISTER_IO_BUF", UBLK_U_IO_REGISTER_IO_BUF, iowr(0x23, io)},
		{"UBLK_U_IO_UNREGISTER_IO_BUF", UBLK_U_IO_UNREGISTER_IO_BUF, iowr(0x24, io)},
		{"UBLK_U_IO_PREP_IO_CMDS", UBLK_U_IO_PREP_IO_CMDS, iowr(0x25, uint32(unsafe.Sizeof(BatchIO{})))},
		{"UBLK_U_IO_COMMIT_IO_CMDS", UBLK_U_IO_COMMIT_IO_CMDS, iowr(0x26, uint32(unsafe.Sizeof(BatchIO{})))},
		{"UBLK_U_IO_FETCH_IO_CMDS", UBLK_U_IO_FETCH_IO_CMDS, iowr(0x27, uint32(unsafe.Sizeof(BatchIO{})))},
		{"BLOCK_URING_CMD_DISCARD", BLOCK_URING_CMD_DISCARD, ioc(_IOC_NONE, 0x12, 0, 0)},
	}
	for _, tt := range tests {
		assert.Equalf(t, tt.want, tt.got, "%s = %#x, want %#x", tt.name, tt.got, tt.want)
	}
}

// TestIoctlKnownValues pins the encoder itself to values printed by gcc
// for the kernel macros, so that a wrong ioc cannot make the test above
// pass vacuously.
func TestIoctlKnownValues(t *testing.T) {
	assert.Equal(t, uint32(0x80207502), ioc(_IOC_READ, 'u', 2, 32))
	assert.Equal(t, uint32(0xC0107520), ioc(_IOC_READ|_IOC_WRITE, 'u', 0x20, 16))
	// BLKDISCARD is _IO(0x12, 119).
	assert.Equal(t, uint32(0x1277), ioc(_IOC_NONE, 0x12, 119, 0))
}

func TestCmdBufGeometry(t *testing.T) {
	tests := []struct {
		name     string
		qid      uint16
		depth    uint16
		page     int
		wantOff  int64
		wantSize int
	}{
		// 4096 descriptors of 24 bytes = 98304 bytes = 24 pages.
		{"q0 depth1 4k", 0, 1, 4096, 0, 4096},
		{"q1 depth128 4k", 1, 128, 4096, 98304, 4096},
		{"q2 depth171 4k", 2, 171, 4096, 2 * 98304, 8192}, // 171*24 = 4104
		{"q3 depth4096 4k", 3, 4096, 4096, 3 * 98304, 98304},
		{"q1 depth128 64k", 1, 128, 65536, 131072, 65536},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantOff, CmdBufOffset(tt.qid, tt.page))
			assert.Equal(t, tt.wantSize, CmdBufSize(tt.depth, tt.page))
		})
	}
}

func TestIOBufOffset(t *testing.T) {
	assert.Equal(t, int64(0x80000000), IOBufOffset(0, 0))
	assert.Equal(t, int64(0x80000000+1<<25), IOBufOffset(0, 1))
	assert.Equal(t, int64(0x80000000+1<<41), IOBufOffset(1, 0))
	// The largest queue and tag still fit below the total size.
	last := IOBufOffset(UBLK_MAX_NR_QUEUES-1, UBLK_TAG_BITS_MASK) + UBLK_IO_BUF_BITS_MASK
	assert.Less(t, last-UBLKSRV_IO_BUF_OFFSET, int64(UBLKSRV_IO_BUF_TOTAL_SIZE))
}

func TestIODescAccessors(t *testing.T) {
	d := IODesc{OpFlags: UBLK_IO_OP_WRITE_ZEROES | UBLK_IO_F_NOUNMAP | UBLK_IO_F_FUA}
	assert.Equal(t, uint8(UBLK_IO_OP_WRITE_ZEROES), d.Op())
	assert.NotZero(t, d.Flags()&UBLK_IO_F_NOUNMAP)
	assert.NotZero(t, d.Flags()&UBLK_IO_F_FUA)
	assert.Zero(t, d.Flags()&UBLK_IO_F_META)
	assert.Zero(t, d.Flags()&0xff, "flags must not carry the op")
}

func TestSQEPayloadAccessors(t *testing.T) {
	var s SQE128
	raw := (*[128]byte)(unsafe.Pointer(&s))

	s.Off = ^uint64(0)
	s.SetCmdOp(UBLK_U_CMD_ADD_DEV)
	assert.Equal(t, uint32(UBLK_U_CMD_ADD_DEV), s.CmdOp())
	// cmd_op at offset 8, __pad1 at 12 zeroed (little-endian bytes).
	assert.Equal(t, []byte{0x04, 0x75, 0x20, 0xC0, 0, 0, 0, 0}, raw[8:16])

	c := s.CtrlCmd()
	c.DevID = 0x11223344
	c.Reserved = 0xAABBCCDD
	assert.Equal(t, []byte{0x44, 0x33, 0x22, 0x11}, raw[48:52])
	assert.Equal(t, []byte{0xDD, 0xCC, 0xBB, 0xAA}, raw[76:80])

	s.Cmd()[79] = 0x5A
	assert.Equal(t, byte(0x5A), raw[127])

	var small SQE
	small.IOCmd().Tag = 0x0102
	small.IOCmd().Addr = 0x0807060504030201
	sraw := (*[64]byte)(unsafe.Pointer(&small))
	assert.Equal(t, []byte{0x02, 0x01}, sraw[50:52])
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, sraw[56:64])
	require.Equal(t, uintptr(SQECmdOffset+16), unsafe.Sizeof(small), "IOCmd must end inside a 64-byte SQE")
}

// TestOpcodesPinned pins the enum io_uring_op values that are counted with
// iota, including those newer than the system headers the C cross-check
// can see, so that an entry missed or added in the middle shifts nothing.
func TestOpcodesPinned(t *testing.T) {
	tests := []struct {
		name      string
		got, want int
	}{
		{"IORING_OP_NOP", IORING_OP_NOP, 0},
		{"IORING_OP_READV", IORING_OP_READV, 1},
		{"IORING_OP_WRITEV", IORING_OP_WRITEV, 2},
		{"IORING_OP_FSYNC", IORING_OP_FSYNC, 3},
		{"IORING_OP_READ_FIXED", IORING_OP_READ_FIXED, 4},
		{"IORING_OP_WRITE_FIXED", IORING_OP_WRITE_FIXED, 5},
		{"IORING_OP_POLL_ADD", IORING_OP_POLL_ADD, 6},
		{"IORING_OP_ASYNC_CANCEL", IORING_OP_ASYNC_CANCEL, 14},
		{"IORING_OP_FALLOCATE", IORING_OP_FALLOCATE, 17},
		{"IORING_OP_READ", IORING_OP_READ, 22},
		{"IORING_OP_WRITE", IORING_OP_WRITE, 23},
		{"IORING_OP_MSG_RING", IORING_OP_MSG_RING, 40},
		{"IORING_OP_URING_CMD", IORING_OP_URING_CMD, 46},
		{"IORING_OP_SENDMSG_ZC", IORING_OP_SENDMSG_ZC, 48},
		{"IORING_OP_READ_MULTISHOT", IORING_OP_READ_MULTISHOT, 49},
		{"IORING_OP_FUTEX_WAIT", IORING_OP_FUTEX_WAIT, 51},
		{"IORING_OP_FTRUNCATE", IORING_OP_FTRUNCATE, 55},
		{"IORING_OP_LISTEN", IORING_OP_LISTEN, 57},
		{"IORING_OP_LAST (6.12)", IORING_OP_LAST, 58},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.got, tt.name)
	}
}

// The packing the kernel's ublk_sqe_addr_to_auto_buf_reg undoes.
func TestAutoBufRegSQEAddr(t *testing.T) {
	assert.Equal(t, uint64(0x0001_0007), AutoBufReg{Index: 7, Flags: UBLK_AUTO_BUF_REG_FALLBACK}.SQEAddr())
	assert.Equal(t, uint64(0xdeadbeef_5a01ffff), AutoBufReg{Index: 0xffff, Flags: 1, Reserved0: 0x5a, Reserved1: 0xdeadbeef}.SQEAddr())
}
