// Package uapi holds the Linux kernel ABI that uraid speaks to ublk and
// io_uring: struct layouts and constants from include/uapi/linux/ublk_cmd.h,
// include/uapi/linux/io_uring.h and include/uapi/linux/blkdev.h as of Linux
// 6.12, the oldest kernel uraid supports.
//
// Constants keep their kernel names verbatim (UBLK_U_CMD_ADD_DEV,
// IORING_SETUP_SQE128) so they can be grepped against the headers. Struct
// types use Go names with a comment naming the C struct; every padding byte
// is an explicit field so that a struct's Go size is its C size, which
// uapi_test.go checks field by field. Constants added after 6.12 are present
// only where a 6.12 kernel answers them predictably (it rejects or clears
// them), and each says so.
//
// The package is data only: no syscalls, no state. Values are safe for
// concurrent use exactly as much as the memory holding them is; structs that
// live in memory shared with the kernel (ring entries, IODesc) must be read
// with the ordering rules of the ring that owns them.
package uapi
