package ublk

import "sync/atomic"

// completions is the set of tags whose requests a target has finished but
// the queue goroutine has not yet committed to the kernel. Any goroutine
// pushes; only the queue goroutine takes, and it takes everything at once.
//
// It is a lock-free stack threaded through a per-tag array, so pushing never
// allocates. Taking the whole stack with one swap (never popping one entry)
// is what makes it safe from ABA: a pusher only ever links to whatever the
// head currently is.
type completions struct {
	// head is 1 + the most recently pushed tag, or 0 when empty.
	head atomic.Uint32
	// next[tag] is the head value that tag was pushed on top of. It is
	// written before the CAS that publishes tag and read only after the
	// swap that takes it.
	next []uint32
	// res[tag] is the result the target completed tag with, published the
	// same way as next.
	res []int32
}

func newCompletions(depth int) completions {
	return completions{next: make([]uint32, depth), res: make([]int32, depth)}
}

// push records that tag finished with res. Each tag is pushed at most once
// between two takes that return it.
func (c *completions) push(tag uint16, res int32) {
	c.res[tag] = res
	for {
		old := c.head.Load()
		c.next[tag] = old
		if c.head.CompareAndSwap(old, uint32(tag)+1) {
			return
		}
	}
}

// takeAll removes every pushed tag at once and returns the detached list,
// to be walked with walk until it returns 0.
func (c *completions) takeAll() uint32 { return c.head.Swap(0) }

// walk returns the tag and result at the front of the detached list l and
// the rest of the list. l must not be 0.
func (c *completions) walk(l uint32) (tag uint16, res int32, rest uint32) {
	tag = uint16(l - 1)
	return tag, c.res[tag], c.next[tag]
}

// empty reports whether nothing is waiting to be taken.
func (c *completions) empty() bool { return c.head.Load() == 0 }
