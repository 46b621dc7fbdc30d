package uring

import (
	"sync/atomic"

	"uraid/internal/uapi"
)

// Option configures New.
type Option func(*config)

type config struct {
	flags  uint32
	cqSize uint32
	enters *atomic.Uint64
}

// WithSQE128 sets IORING_SETUP_SQE128: every slot is 128 bytes and
// NextSQE128 hands out the 80-byte command area. /dev/ublk-control refuses
// commands from rings without it.
func WithSQE128() Option {
	return func(c *config) { c.flags |= uapi.IORING_SETUP_SQE128 }
}

// WithCQSize sets the number of CQ entries (rounded up to a power of two by
// the kernel; at least the SQ size). The default is twice the SQ size.
func WithCQSize(n uint32) Option {
	return func(c *config) { c.cqSize = n }
}

// WithFlags ORs IORING_SETUP_* flags into the setup, e.g.
// IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN for a ring that
// only its locked thread touches, or IORING_SETUP_COOP_TASKRUN. SQPOLL and
// IOPOLL are not supported by this package.
func WithFlags(f uint32) Option {
	return func(c *config) { c.flags |= f }
}

// WithEnterCounter has the ring add one to *n for every io_uring_enter it
// makes, so that whoever owns the ring can say what its waits and submits
// cost in system calls while another goroutine reads the count.
func WithEnterCounter(n *atomic.Uint64) Option {
	return func(c *config) { c.enters = n }
}
