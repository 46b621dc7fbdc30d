// Package filetarget serves one regular file or block device as a ublk
// device: the simplest Target, used to test the ublk data path end to end
// and as a template for targets that fan requests out to several members.
//
// Reads and writes go to the backing file with O_DIRECT from the tag's
// buffer, submitted on the queue's own io_uring, so they neither block the
// queue nor cross threads. FLUSH is fdatasync; a FUA write is a RWF_DSYNC
// write. DISCARD punches a hole in a regular file and discards the range
// of a block device (BLOCK_URING_CMD_DISCARD, or BLKDISCARD on a worker
// goroutine when the kernel lacks it). WRITE_ZEROES zeroes the range,
// keeping it allocated when the request says NOUNMAP.
//
// A Target is safe for concurrent use by all queues of one device. Stats
// may be read at any time. Close stops the worker and closes the file once
// the device has been stopped.
package filetarget
