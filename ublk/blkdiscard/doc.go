// Package blkdiscard discards ranges of a block device without holding the device's locks
// against other discards: through io_uring's BLOCK_URING_CMD_DISCARD (Linux 6.12) where the
// kernel has it, and through the BLKDISCARD ioctl otherwise.
//
// BLKDISCARD takes the device's invalidate lock, so concurrent calls on one device run one after
// another in the kernel; the io_uring command does not, so a drive with queued TRIM (NVMe) gets
// as many TRIMs at once as the caller sends. Neither excludes reads and writes of the range:
// ordering them is the caller's job (the discard engine's).
//
// A Discarder is safe for concurrent use; each call blocks until its TRIM completes.
package blkdiscard
