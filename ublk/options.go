package ublk

import (
	"fmt"
	"os"
	"runtime"

	"uraid/internal/uapi"
)

// Defaults for the zero Options.
const (
	DefaultDepth      = 128
	DefaultMaxIOBytes = 512 << 10
)

// Options shape the device beyond what its Target describes.
type Options struct {
	// ID asks for /dev/ublkbID when FixedID is set; otherwise the kernel
	// picks the lowest free id.
	ID      uint32
	FixedID bool
	// Queues is the number of hardware queues, each served by its own
	// goroutine and thread. Zero means one per CPU.
	Queues int
	// Depth is the number of requests each queue may have in flight
	// (1 to 4096). Zero means DefaultDepth.
	Depth int
	// MaxIOBytes is the largest read or write the kernel sends, and the
	// size of each tag's buffer: a multiple of the page size. Zero means
	// DefaultMaxIOBytes.
	MaxIOBytes int

	// UserRecovery makes the device outlive its server: if the server
	// dies, /dev/ublkbN stays (its I/O waits, "quiesced") until a new
	// server takes it over with NewRecovery. Requests the dead server
	// held fail with EIO, unless ReissueOnRecovery sends them to the new
	// server instead. A kernel without a feature ignores it: Flags says
	// what the device got.
	UserRecovery      bool
	ReissueOnRecovery bool

	// BeforeEndRecovery, when set, is called by a recovering Start once
	// every new queue is fetching, just before the device is made live
	// again: a hook for tests that need a server to die at that point.
	BeforeEndRecovery func()
	// ZeroCopy chooses whether member I/O uses the request's own pages
	// (see ZeroCopy); the zero value takes the best the kernel offers.
	// Device.ZeroCopy says what was chosen and why. A device taken over
	// with NewRecovery keeps the mode it was created with.
	ZeroCopy ZeroCopy
	// BatchIO chooses whether the queues use the batch I/O commands
	// (UBLK_F_BATCH_IO); the zero value does not. Device.BatchIO says
	// what was chosen. A device taken over with NewRecovery keeps the
	// commands it was created with.
	BatchIO BatchIO
}

// withDefaults fills in zero fields and checks the rest, so that a bad
// option is refused before anything is asked of the kernel.
func (o Options) withDefaults() (Options, error) {
	page := os.Getpagesize()
	if o.Queues == 0 {
		o.Queues = runtime.NumCPU()
	}
	if o.Depth == 0 {
		o.Depth = DefaultDepth
	}
	if o.MaxIOBytes == 0 {
		o.MaxIOBytes = DefaultMaxIOBytes
	}
	switch {
	case o.Queues < 1 || o.Queues > uapi.UBLK_MAX_NR_QUEUES:
		return o, fmt.Errorf("ublk options: %d queues is outside 1..%d", o.Queues, uapi.UBLK_MAX_NR_QUEUES)
	case o.Depth < 1 || o.Depth > uapi.UBLK_MAX_QUEUE_DEPTH:
		return o, fmt.Errorf("ublk options: queue depth %d is outside 1..%d", o.Depth, uapi.UBLK_MAX_QUEUE_DEPTH)
	case o.MaxIOBytes < page || o.MaxIOBytes%page != 0 || o.MaxIOBytes > 1<<uapi.UBLK_IO_BUF_BITS:
		return o, fmt.Errorf("ublk options: max I/O size %d is not a multiple of the page size %d up to %d", o.MaxIOBytes, page, 1<<uapi.UBLK_IO_BUF_BITS)
	case o.ZeroCopy > ZeroCopyRegister:
		return o, fmt.Errorf("ublk options: zero copy mode %d is not one of auto, off, register", o.ZeroCopy)
	case o.BatchIO > BatchIOAuto:
		return o, fmt.Errorf("ublk options: batch I/O mode %d is not one of off, auto", o.BatchIO)
	case o.ReissueOnRecovery && !o.UserRecovery:
		return o, fmt.Errorf("ublk options: ReissueOnRecovery needs UserRecovery")
	case o.FixedID && o.ID >= 1<<20:
		// The block layer's minor numbers run out at 2^20.
		return o, fmt.Errorf("ublk options: device id %d is too large", o.ID)
	}
	return o, nil
}
