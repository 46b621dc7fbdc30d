package ublk

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
	"uraid/internal/uring"
	"uraid/internal/verify"
)

// Batch I/O (UBLK_F_BATCH_IO, Linux 6.19): instead of one FETCH per tag and
// one COMMIT_AND_FETCH per finished request, a queue
//   - hands the driver all its tags once (PREP_IO_CMDS, one command),
//   - keeps one multishot FETCH_IO_CMDS outstanding, which posts a CQE per
//     group of new requests with their tags written, as u16s, into a
//     buffer of its provided-buffer ring,
//   - completes every request finished since it last looked with one
//     COMMIT_IO_CMDS.
// The per-tag states, the target's side and the drain and stop rules are
// those of the per-tag commands; only how tags reach and leave the queue
// differs.

// BatchIO chooses whether a device uses the batch I/O commands. Off is the
// default: on the kernel-native benchmark (docs/benchmarks.md, 7.3, two
// queues) they measured no faster than one command per request.
type BatchIO uint8

// Batch I/O choices for Options.BatchIO.
const (
	// BatchIOOff uses the per-tag commands.
	BatchIOOff BatchIO = iota
	// BatchIOAuto uses the batch commands where the kernel has
	// UBLK_F_BATCH_IO, the per-tag ones elsewhere.
	BatchIOAuto
)

var batchIONames = [...]string{"off", "auto"}

func (b BatchIO) String() string {
	if int(b) < len(batchIONames) {
		return batchIONames[b]
	}
	return fmt.Sprintf("batchio(%d)", uint8(b))
}

// ParseBatchIO reads "off" (or "") or "auto".
func ParseBatchIO(s string) (BatchIO, error) {
	if s == "" {
		return BatchIOOff, nil
	}
	for i, n := range batchIONames {
		if s == n {
			return BatchIO(i), nil
		}
	}
	return 0, fmt.Errorf("batch I/O %q: want off or auto", s)
}

// BatchIOStatus says whether a started device uses the batch I/O commands,
// and why not when it does not.
type BatchIOStatus struct {
	On     bool
	Reason string
}

// chooseBatch decides batch I/O for a new device; reason explains no.
func chooseBatch(want BatchIO, features Features, kernel string) (bool, string) {
	switch {
	case want == BatchIOOff:
		return false, "off (the default; batch I/O auto uses it where the kernel has it)"
	case !features.Has(FeatureBatchIO):
		return false, fmt.Sprintf("kernel %s lacks UBLK_F_BATCH_IO (Linux 6.19)", kernel)
	}
	return true, ""
}

// user_data of the batch commands (kind udBatch): the low byte says which.
const (
	udBatch       = 5 << udKindShift
	udBatchPrep   = 1
	udBatchFetch  = 2
	udBatchCommit = 3 // bits 8-15: the commit buffer; 16-31: its elements
)

// Sizes of the fetch side. The driver writes at most 128 tags per CQE, so a
// buffer holds 128; fetchBufs of them cover a full queue of 4096 twice over
// before the queue must give any back, and it gives them back as it reads
// them. Running out is not an error anyway: the fetch ends with ENOBUFS,
// its tags stay queued in the driver, and a new fetch picks them up.
const (
	fetchBufTags = 128
	fetchBufs    = 64
	fetchGroup   = 0 // provided-buffer group id on the queue's ring
)

// batch is a queue's batch-I/O state, owned by the queue goroutine.
type batch struct {
	flags     uint16 // UBLK_BATCH_F_* of PREP and COMMIT
	elemBytes int    // 8, or 16 with a buffer address

	// Two commit buffers of depth elements: one filled while the other
	// may still be with the kernel. busy[i] is set from the COMMIT's
	// submission to its CQE; n counts the elements in cur.
	commit [2][]byte
	busy   [2]bool
	cur, n int
	// unreaped counts COMMITs queued whose CQE has not been reaped: the
	// queue's wait asks for that many completions more than the one it
	// waits for, so that a commit's own CQE, posted as the command is
	// issued, does not end the wait (at QD1 it would cost a second
	// io_uring_enter per request).
	unreaped int
	mem      []byte // backs commit

	fetchMem []byte // fetchBufs buffers of fetchBufTags u16s
	ring     *uring.BufRing
	// fetching is true while a FETCH is outstanding; dead once the
	// driver ended it for good (the device is going away).
	fetching, dead bool
	prepared       bool
	prepErr        error
}

// openBatch maps the commit and fetch buffers.
func (q *queue) openBatch() error {
	b := &batch{elemBytes: int(unsafe.Sizeof(uapi.BatchElemHeader{}))}
	switch {
	case !q.mode.zeroCopy():
		b.flags = uapi.UBLK_BATCH_F_HAS_BUF_ADDR
		b.elemBytes += 8
	case q.mode == modeAutoReg && q.canRegister:
		b.flags = uapi.UBLK_BATCH_F_AUTO_BUF_REG_FALLBACK
	}
	per := q.depth * b.elemBytes
	mem, err := unix.Mmap(-1, 0, 2*per+fetchBufs*fetchBufTags*2, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("ublk queue %d: map batch buffers: %w", q.id, os.NewSyscallError("mmap", err))
	}
	b.mem = mem
	b.commit[0], b.commit[1] = mem[:per:per], mem[per:2*per:2*per]
	b.fetchMem = mem[2*per:]
	q.batch = b
	return nil
}

// closeBatch unmaps what openBatch mapped; after the ring is closed.
func (q *queue) closeBatch() error {
	b := q.batch
	if b == nil || b.mem == nil {
		return nil
	}
	err := unix.Munmap(b.mem)
	b.mem, b.commit, b.fetchMem = nil, [2][]byte{}, nil
	return err
}

// startBatch queues the PREP of every tag and the first FETCH. PREP's
// elements live in commit buffer 0, free until the first commit.
func (q *queue) startBatch() error {
	b := q.batch
	ring, err := q.ring.RegisterBufRing(fetchGroup, fetchBufs)
	if err != nil {
		return fmt.Errorf("ublk queue %d: batch I/O: %w", q.id, err)
	}
	b.ring = ring
	for bid := range fetchBufs {
		ring.Add(uintptr(bufAddr(q.fetchBuf(uint16(bid)))), fetchBufTags*2, uint16(bid), bid)
	}
	ring.Advance(fetchBufs)

	for tag := range q.depth {
		q.putElem(b.commit[0], tag, uint16(tag), 0)
	}
	sqe, err := q.sqe()
	if err != nil {
		return err
	}
	q.prepBatchCmd(sqe, uapi.UBLK_U_IO_PREP_IO_CMDS, b.commit[0], q.depth)
	sqe.UserData = udBatch | udBatchPrep
	return q.prepFetch()
}

// fetchBuf is fetch buffer bid.
func (q *queue) fetchBuf(bid uint16) []byte {
	off := int(bid) * fetchBufTags * 2
	return q.batch.fetchMem[off : off+fetchBufTags*2]
}

// putElem writes element i of buf: tag, its result, and where its next
// request's data goes (slot tag of the buffer table, or its buffer).
func (q *queue) putElem(buf []byte, i int, tag uint16, res int32) {
	b := q.batch
	e := buf[i*b.elemBytes:]
	*(*uapi.BatchElemHeader)(unsafe.Pointer(&e[0])) = uapi.BatchElemHeader{Tag: tag, BufIndex: tag, Result: res}
	if b.flags&uapi.UBLK_BATCH_F_HAS_BUF_ADDR != 0 {
		*(*uint64)(unsafe.Pointer(&e[8])) = bufAddr(q.bufs[tag])
	}
}

// prepBatchCmd makes sqe the batch command op over the first n elements of
// buf.
func (q *queue) prepBatchCmd(sqe *uapi.SQE, op uint32, buf []byte, n int) {
	b := q.batch
	uring.PrepURingCmd(sqe, int(q.charFd), op)
	*sqe.BatchCmd() = uapi.BatchIO{QID: q.id, Flags: b.flags, NrElem: uint16(n), ElemBytes: uint8(b.elemBytes)}
	sqe.Addr = bufAddr(buf)
	sqe.Len = uint32(n * b.elemBytes)
}

// prepFetch queues the multishot FETCH.
func (q *queue) prepFetch() error {
	sqe, err := q.sqe()
	if err != nil {
		return err
	}
	uring.PrepURingCmd(sqe, int(q.charFd), uapi.UBLK_U_IO_FETCH_IO_CMDS)
	*sqe.BatchCmd() = uapi.BatchIO{QID: q.id, NrElem: fetchBufTags, ElemBytes: 2}
	sqe.OpFlags = uapi.IORING_URING_CMD_MULTISHOT
	sqe.Flags |= uapi.IOSQE_BUFFER_SELECT
	sqe.BufIndex = fetchGroup
	sqe.UserData = udBatch | udBatchFetch
	q.batch.fetching = true
	return nil
}

// onBatch handles the completion of a batch command.
func (q *queue) onBatch(ud uint64, res int32, flags uint32) error {
	b := q.batch
	switch ud & 0xff {
	case udBatchPrep:
		b.prepared = res == 0
		if res < 0 {
			b.prepErr = fmt.Errorf("ublk queue %d: prepare %d tags: %w", q.id, q.depth, unix.Errno(-res))
		}
		return nil
	case udBatchCommit:
		i, n := int(ud>>8&0xff), int(ud>>16&0xffff)
		b.busy[i] = false
		b.unreaped--
		// A request left uncommitted never completes: nothing but
		// ending the queue (which fails or reissues it) is safe.
		if res < 0 && b.dead {
			// The device is going away: the driver fails or
			// reissues what it could not take back.
			return nil
		}
		if res < 0 {
			return fmt.Errorf("ublk queue %d: commit %d requests: %w", q.id, n, unix.Errno(-res))
		}
		if int(res) != n*b.elemBytes {
			return fmt.Errorf("ublk queue %d: the driver took %d of %d committed requests", q.id, int(res)/b.elemBytes, n)
		}
		return nil
	case udBatchFetch:
		return q.onFetch(res, flags)
	}
	return nil
}

// onFetch handles a CQE of the multishot FETCH: tags of new requests, or
// its end.
func (q *queue) onFetch(res int32, flags uint32) error {
	b := q.batch
	if res > 0 {
		if flags&uapi.IORING_CQE_F_BUFFER == 0 {
			return fmt.Errorf("ublk queue %d: fetch delivered %d bytes in no buffer", q.id, res)
		}
		bid := uint16(flags >> uapi.IORING_CQE_BUFFER_SHIFT)
		if int(bid) >= fetchBufs || int(res) > fetchBufTags*2 {
			return fmt.Errorf("ublk queue %d: fetch delivered %d bytes in buffer %d", q.id, res, bid)
		}
		tags := unsafe.Slice((*uint16)(unsafe.Pointer(&q.fetchBuf(bid)[0])), int(res)/2)
		for _, tag := range tags {
			if int(tag) >= q.depth || q.state[tag] != tagFetching {
				// The driver handed out a tag this queue has not
				// given it: serving it would corrupt another
				// request's state.
				if verify.On {
					panic(fmt.Sprintf("ublk queue %d: fetch delivered tag %d in state %d", q.id, tag, q.state[min(int(tag), q.depth-1)]))
				}
				continue
			}
			q.arrived(tag)
		}
		b.ring.Add(uintptr(bufAddr(q.fetchBuf(bid))), fetchBufTags*2, bid, 0)
		b.ring.Advance(1)
	}
	if flags&uapi.IORING_CQE_F_MORE != 0 {
		return nil
	}
	b.fetching = false
	switch {
	case res >= 0 || res == -int32(unix.ENOBUFS):
		// Ended without the device going away (no buffer was free):
		// the driver keeps the tags queued for the next fetch.
		return q.prepFetch()
	case res == uapi.UBLK_IO_RES_ABORT:
	default:
		if q.err == nil {
			q.err = fmt.Errorf("ublk queue %d: fetch refused: %w", q.id, unix.Errno(-res))
		}
	}
	b.dead = true
	return nil
}

// addCommit adds tag's result to the commit being filled. The caller has
// made sure a buffer is free (commitFree).
func (q *queue) addCommit(tag uint16, res int32) {
	b := q.batch
	q.putElem(b.commit[b.cur], b.n, tag, res)
	b.n++
}

// commitFree reports whether a commit buffer can take elements, settling
// a busy one by submitting and reaping first: the driver reads a COMMIT's
// buffer when the command is issued, so once submitted its CQE is due.
func (q *queue) commitFree() (bool, error) {
	b := q.batch
	if !b.busy[b.cur] {
		return true, nil
	}
	if _, err := q.ring.Submit(); err != nil {
		return false, fmt.Errorf("ublk queue %d: submit commits: %w", q.id, err)
	}
	if err := q.reap(); err != nil {
		return false, err
	}
	return !b.busy[b.cur], nil
}

// flushCommit queues the COMMIT of what addCommit gathered.
func (q *queue) flushCommit() error {
	b := q.batch
	if b.n == 0 {
		return nil
	}
	sqe, err := q.sqe()
	if err != nil {
		return err
	}
	q.prepBatchCmd(sqe, uapi.UBLK_U_IO_COMMIT_IO_CMDS, b.commit[b.cur], b.n)
	sqe.UserData = udBatch | udBatchCommit | uint64(b.cur)<<8 | uint64(b.n)<<16
	if verify.On {
		verify.Check(b.n <= q.depth, "ublk queue %d: commit of %d requests, depth %d", q.id, b.n, q.depth)
	}
	b.busy[b.cur] = true
	b.unreaped++
	b.cur ^= 1
	b.n = 0
	return nil
}

// awaitPrep submits the PREP (and the fetch and wake queued behind it) and
// waits for PREP's completion, which the driver posts as it issues it.
func (q *queue) awaitPrep() error {
	for !q.batch.prepared {
		if q.batch.prepErr != nil {
			return q.batch.prepErr
		}
		if _, err := q.ring.SubmitAndWait(1); err != nil {
			return fmt.Errorf("ublk queue %d: submit batch prepare: %w", q.id, err)
		}
		if err := q.reap(); err != nil {
			return err
		}
	}
	return nil
}
