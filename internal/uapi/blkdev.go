package uapi

// BLOCK_URING_CMD_DISCARD (include/uapi/linux/blkdev.h, Linux 6.12+) is the
// cmd_op of an IORING_OP_URING_CMD that discards a byte range of a block
// device asynchronously: SQE addr is the start and addr3 (offset 48) the
// length, both in bytes and multiples of the logical block size. It is
// _IO(0x12, 0).
const BLOCK_URING_CMD_DISCARD = 0x1200
