package ublk

import (
	"errors"
	"fmt"

	"uraid/internal/uapi"
	"uraid/internal/uring"
	"uraid/internal/verify"
)

// Harness drives a Target the way a device queue does, without the ublk
// driver: requests are encoded as the kernel would encode them, decoded and
// dispatched by the queue's own code, and served on a real io_uring (ring
// I/O and completions from other goroutines included); results come back
// to the caller instead of the kernel. It lets targets be tested, and their
// hot path measured, on any kernel with io_uring and without root.
//
// A Harness is not safe for concurrent use; completions of its requests may
// come from any goroutine as usual.
type Harness struct {
	q       *queue
	results []int32
	ready   []uint16 // finished tags not yet returned by Wait
}

// HarnessRequest is a request to inject. Offset and Length must be
// multiples of 512, and Length at most the harness's buffer size for READ
// and WRITE.
type HarnessRequest struct {
	Op             Op
	Offset, Length int64
	FUA, NoUnmap   bool
}

// NewHarness makes a queue of depth tags with maxIOBytes buffers for t.
func NewHarness(t Target, depth, maxIOBytes int) (*Harness, error) {
	return newHarness(t, 0, depth, maxIOBytes, false)
}

// NewHarnessQueue is NewHarness playing queue number queue of a device: harnesses of different
// queues of one target, each driven by a goroutine of its own, serve it concurrently as a
// device's queues do.
func NewHarnessQueue(t Target, queue uint16, depth, maxIOBytes int) (*Harness, error) {
	return newHarness(t, queue, depth, maxIOBytes, false)
}

// NewZeroCopyHarness is NewHarness in zero-copy mode, as a device on a
// kernel with UBLK_F_AUTO_BUF_REG runs when the target can (see
// ByteTarget): the target sees no Request.Buf, and its PrepReadInto and
// PrepWriteFrom become fixed-buffer I/O on slot tag of the ring's buffer
// table. Without the driver there are no request pages to lend, so the
// harness registers its own buffers (Buf) in those slots; the kernel then
// reads and writes them directly, never through the target.
func NewZeroCopyHarness(t Target, depth, maxIOBytes int) (*Harness, error) {
	return newHarness(t, 0, depth, maxIOBytes, true)
}

func newHarness(t Target, queue uint16, depth, maxIOBytes int, zeroCopy bool) (*Harness, error) {
	o, err := Options{Queues: 1, Depth: depth, MaxIOBytes: maxIOBytes}.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Harness{results: make([]int32, o.Depth), ready: make([]uint16, 0, o.Depth)}
	q := newQueue(queue, o.Depth, t, t.Params().Size)
	q.iods = make([]uapi.IODesc, o.Depth)
	h.q = q
	if zeroCopy {
		q.mode, _ = chooseMode(ZeroCopyAuto, t, FeatureAutoBufReg, "harness")
	}
	if err := q.openBuffers(o.MaxIOBytes, true); err != nil {
		q.close()
		return nil, err
	}
	ring, err := uring.New(ringEntries(o.Depth))
	if err != nil {
		q.close()
		return nil, fmt.Errorf("ublk harness: %w", err)
	}
	q.ring = ring
	if q.mode.zeroCopy() {
		if err := ring.RegisterBuffers(q.bufs); err != nil {
			h.Close()
			return nil, fmt.Errorf("ublk harness: zero copy: %w", err)
		}
		q.fixedBase = make([]uint64, o.Depth)
		for tag, b := range q.bufs {
			q.fixedBase[tag] = bufAddr(b)
		}
	} else {
		q.registerCopyBuffers(ring)
	}
	if err := q.armWake(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// ZeroCopy reports whether the harness serves its target in zero-copy
// mode: NewZeroCopyHarness with a target that can be.
func (h *Harness) ZeroCopy() bool { return h.q.mode.zeroCopy() }

// SetSize changes the size of the device the harness plays, as ublk UPDATE_SIZE does.
func (h *Harness) SetSize(size int64) { h.q.size.Store(size) }

// Buf is tag's request buffer: fill it before starting a WRITE, read it
// after a READ finished.
func (h *Harness) Buf(tag uint16) []byte { return h.q.bufs[tag] }

// Start dispatches r on tag, which must not be in use.
func (h *Harness) Start(tag uint16, r HarnessRequest) error {
	q := h.q
	if int(tag) >= q.depth || q.state[tag] != tagFetching {
		return fmt.Errorf("ublk harness: tag %d is busy or out of range", tag)
	}
	if r.Offset%512 != 0 || r.Length%512 != 0 || r.Offset < 0 || r.Length < 0 || r.Length>>9 > 0xFFFFFFFF {
		return fmt.Errorf("ublk harness: offset %d and length %d must be whole sectors", r.Offset, r.Length)
	}
	op := uint32(uapi.UBLK_IO_OP_READ)
	switch r.Op {
	case OpWrite:
		op = uapi.UBLK_IO_OP_WRITE
	case OpFlush:
		op = uapi.UBLK_IO_OP_FLUSH
	case OpDiscard:
		op = uapi.UBLK_IO_OP_DISCARD
	case OpWriteZeroes:
		op = uapi.UBLK_IO_OP_WRITE_ZEROES
	}
	if r.FUA {
		op |= uapi.UBLK_IO_F_FUA
	}
	if r.NoUnmap {
		op |= uapi.UBLK_IO_F_NOUNMAP
	}
	q.iods[tag] = uapi.IODesc{
		OpFlags: op, NrSectors: uint32(r.Length >> 9), StartSector: uint64(r.Offset >> 9), Addr: bufAddr(q.bufs[tag]),
	}
	q.onIO(tag, uapi.UBLK_IO_RES_OK)
	return nil
}

// Wait returns a finished request and its result; when several have
// finished, the most recent first.
func (h *Harness) Wait() (tag uint16, res int32, err error) {
	q := h.q
	for {
		if err := h.collect(); err != nil {
			return 0, 0, err
		}
		if err := q.checkDrain(); err != nil {
			return 0, 0, err
		}
		if n := len(h.ready); n > 0 {
			tag = h.ready[n-1]
			h.ready = h.ready[:n-1]
			return tag, h.results[tag], nil
		}
		if q.serving == 0 {
			return 0, 0, errors.New("ublk harness: no request in flight")
		}
		if err := q.wait(); err != nil {
			return 0, 0, err
		}
		q.maybeYield()
	}
}

// collect is the queue's commitDone with the harness in the kernel's place:
// finished requests are retired as the queue retires them and their results
// kept for Wait, so the queue's own commit loop has no case for a harness.
func (h *Harness) collect() error {
	q := h.q
	q.resumeHeld()
	for l := q.done.takeAll(); l != 0; {
		tag, res, rest := q.done.walk(l)
		l = rest
		if ok, err := q.retire(tag); !ok {
			if err != nil {
				return err
			}
			continue
		}
		h.finished(tag, res)
	}
	if verify.On {
		q.verify()
	}
	return nil
}

// Drain withholds requests started from now on from the target, as
// Device.Drain does; the returned channel receives once the target holds
// none (seen by Wait). EndDrain serves them; Withheld counts them.
func (h *Harness) Drain() <-chan uint16 {
	p := &drainRequest{done: make(chan uint16, 1)}
	h.q.draining.Store(p)
	return p.done
}

// EndDrain serves the requests Drain withheld, at the next Wait.
func (h *Harness) EndDrain() { h.q.draining.Store(nil) }

// Withheld is the number of requests Drain holds back.
func (h *Harness) Withheld() int { return h.q.withheld }

// Do runs r on tag 0 and waits for it.
func (h *Harness) Do(r HarnessRequest) (int32, error) {
	if err := h.Start(0, r); err != nil {
		return 0, err
	}
	_, res, err := h.Wait()
	return res, err
}

func (h *Harness) finished(tag uint16, res int32) {
	h.results[tag] = res
	// Never grows past depth: each tag finishes once per Start.
	h.ready = append(h.ready, tag)
}

// Close releases the ring and memory. Requests still held by the target
// must have finished.
func (h *Harness) Close() error {
	var errs []error
	if h.q.ring != nil {
		errs = append(errs, h.q.ring.Close())
		h.q.ring = nil
	}
	errs = append(errs, h.q.close())
	return errors.Join(errs...)
}
