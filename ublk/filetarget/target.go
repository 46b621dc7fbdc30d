package filetarget

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/blkdiscard"
	"uraid/ublk"
)

// Options adjust how the backing file is used.
type Options struct {
	// Buffered opens the file without O_DIRECT, for filesystems that
	// refuse it. Open falls back to it by itself when O_DIRECT fails.
	Buffered bool
}

// Stats counts requests by kind since Open.
type Stats struct {
	Reads, Writes, FUAWrites, Flushes, Discards, WriteZeroes uint64
	// DiscardedBytes sums the lengths of discard requests.
	DiscardedBytes uint64
	// SlowDiscards counts discards done with BLKDISCARD on the worker
	// because the kernel lacks the asynchronous discard command.
	SlowDiscards uint64
}

// Target serves one file or block device. See the package doc.
type Target struct {
	f      *os.File
	fd     int
	block  bool
	direct bool
	params ublk.Params

	// policy chooses between BLOCK_URING_CMD_DISCARD and BLKDISCARD, as
	// for array members (internal/blkdiscard).
	policy blkdiscard.Policy
	// zeroRange is cleared when the filesystem refuses FALLOC_FL_ZERO_RANGE
	// (tmpfs does); NOUNMAP zeroing then punches and reallocates.
	zeroRange atomic.Bool

	// slow feeds the worker that runs blocking ioctls off the queue
	// threads. Buffered for every tag of every queue, so that sending
	// never blocks a queue.
	slow   chan *ublk.Request
	worker sync.WaitGroup
	closed sync.Once

	reads, writes, fuaWrites, flushes, discards, writeZeroes atomic.Uint64
	discardedBytes, slowDiscards                             atomic.Uint64
}

// Sub values tag the ring I/O of a request with the step it belongs to.
const (
	subIO        uint32 = iota // the whole request in one operation
	subDiscard                 // BLOCK_URING_CMD_DISCARD, may fall back
	subZeroRange               // FALLOC_FL_ZERO_RANGE, may fall back
	subZeroPunch               // first half of the punch+allocate fallback
	subZeroAlloc               // its second half
)

// maxRequests bounds the requests in flight across all queues, which sizes
// the worker's channel: 4096 queues of depth 4096 would be absurd, so the
// channel holds what a device of up to 64 queues at the maximum depth can
// hand out.
const maxRequests = 64 * 4096

// Open opens path, a regular file or a block device, for serving.
func Open(path string, opts Options) (*Target, error) {
	flags := os.O_RDWR | unix.O_CLOEXEC
	direct := !opts.Buffered
	f, err := os.OpenFile(path, flags|directFlag(direct), 0)
	if err != nil && direct && errors.Is(err, unix.EINVAL) {
		// The filesystem has no O_DIRECT.
		direct = false
		f, err = os.OpenFile(path, flags, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("file target: %w", err)
	}
	t := &Target{f: f, fd: int(f.Fd()), direct: direct, slow: make(chan *ublk.Request, maxRequests)}
	t.zeroRange.Store(true)
	if err := t.probe(); err != nil {
		f.Close()
		return nil, fmt.Errorf("file target %s: %w", path, err)
	}
	t.worker.Add(1)
	go t.work()
	return t, nil
}

func directFlag(on bool) int {
	if on {
		return unix.O_DIRECT
	}
	return 0
}

// probe fills in the device parameters from what the file is.
func (t *Target) probe() error {
	var st unix.Stat_t
	if err := unix.Fstat(t.fd, &st); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return t.probeFile(&st)
	case unix.S_IFBLK:
		t.block = true
		return t.probeBlock(&st)
	}
	return fmt.Errorf("not a regular file or block device (mode %#o)", st.Mode)
}

func (t *Target) probeFile(st *unix.Stat_t) error {
	page := uint32(os.Getpagesize())
	lbs := uint32(512)
	if t.direct {
		// O_DIRECT needs offsets aligned to what the filesystem says;
		// make that the device's logical block so the kernel never
		// sends less.
		var sx unix.Statx_t
		if err := unix.Statx(t.fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &sx); err == nil &&
			sx.Mask&unix.STATX_DIOALIGN != 0 && sx.Dio_offset_align != 0 {
			lbs = max(lbs, sx.Dio_offset_align)
		}
	}
	if lbs > page || lbs&(lbs-1) != 0 {
		return fmt.Errorf("direct I/O alignment %d is not a power of two up to the page size (try buffered mode)", lbs)
	}
	// Holes are punched in filesystem blocks: a smaller discard would
	// only zero, not free.
	fsBlock := uint32(st.Blksize)
	if fsBlock < lbs || fsBlock&(fsBlock-1) != 0 {
		fsBlock = lbs
	}
	size := st.Size &^ int64(lbs-1)
	if size == 0 {
		return fmt.Errorf("file is smaller than one %d-byte block (size it first, e.g. truncate -s 256M)", lbs)
	}
	t.params = ublk.Params{
		Size:               size,
		LogicalBlockSize:   lbs,
		PhysicalBlockSize:  min(fsBlock, page),
		DiscardGranularity: fsBlock,
		MaxDiscardSize:     1 << 40,
		MaxWriteZeroesSize: 1 << 40,
		VolatileCache:      true,
		FUA:                true,
	}
	return nil
}

func (t *Target) probeBlock(st *unix.Stat_t) error {
	var size uint64
	if err := ioctlPtr(t.fd, unix.BLKGETSIZE64, unsafe.Pointer(&size)); err != nil {
		return os.NewSyscallError("ioctl BLKGETSIZE64", err)
	}
	lbs, err := unix.IoctlGetInt(t.fd, unix.BLKSSZGET)
	if err != nil {
		return os.NewSyscallError("ioctl BLKSSZGET", err)
	}
	pbs, err := unix.IoctlGetUint32(t.fd, unix.BLKPBSZGET)
	if err != nil {
		return os.NewSyscallError("ioctl BLKPBSZGET", err)
	}
	page := uint32(os.Getpagesize())
	p := ublk.Params{
		Size:               int64(size) &^ int64(lbs-1),
		LogicalBlockSize:   uint32(lbs),
		PhysicalBlockSize:  min(max(pbs, uint32(lbs)), page),
		MaxWriteZeroesSize: 1 << 40,
		VolatileCache:      true,
		FUA:                true,
	}
	q := queueLimits(unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	if q.discardMax > 0 && q.discardGranularity > 0 {
		p.DiscardGranularity = max(uint32(q.discardGranularity), uint32(lbs))
		p.MaxDiscardSize = q.discardMax
	}
	t.params = p
	return nil
}

// Params reports the device the file makes.
func (t *Target) Params() ublk.Params { return t.params }

// Direct reports whether the file is open with O_DIRECT.
func (t *Target) Direct() bool { return t.direct }

// Stats returns the request counters.
func (t *Target) Stats() Stats {
	return Stats{
		Reads: t.reads.Load(), Writes: t.writes.Load(), FUAWrites: t.fuaWrites.Load(),
		Flushes: t.flushes.Load(), Discards: t.discards.Load(), WriteZeroes: t.writeZeroes.Load(),
		DiscardedBytes: t.discardedBytes.Load(), SlowDiscards: t.slowDiscards.Load(),
	}
}

// Close stops the worker and closes the file. Call it after the device
// has stopped: no request may be served afterwards.
func (t *Target) Close() error {
	var err error
	t.closed.Do(func() {
		close(t.slow)
		t.worker.Wait()
		err = t.f.Close()
	})
	return err
}

// Serve starts r on the queue's ring; see ublk.Target.
func (t *Target) Serve(r *ublk.Request) {
	var err error
	switch r.Op {
	case ublk.OpRead:
		t.reads.Add(1)
		err = r.PrepReadInto(t.fd, 0, r.Length, r.Offset, subIO)
	case ublk.OpWrite:
		t.writes.Add(1)
		if r.FUA {
			t.fuaWrites.Add(1)
		}
		err = r.PrepWriteFrom(t.fd, 0, r.Length, r.Offset, r.FUA, subIO)
	case ublk.OpFlush:
		t.flushes.Add(1)
		err = r.PrepFsync(t.fd, true, subIO)
	case ublk.OpDiscard:
		t.discards.Add(1)
		t.discardedBytes.Add(uint64(r.Length))
		err = t.discard(r)
	case ublk.OpWriteZeroes:
		t.writeZeroes.Add(1)
		err = t.writeZeroesStart(r)
	default:
		err = unix.EOPNOTSUPP
	}
	if err != nil {
		r.Done(err)
	}
}

func (t *Target) discard(r *ublk.Request) error {
	if !t.block {
		// A hole reads back as zeroes and frees the blocks.
		return r.PrepFallocate(t.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subIO)
	}
	if !t.policy.Async() {
		t.slow <- r
		return nil
	}
	return r.PrepBlockDiscard(t.fd, r.Offset, r.Length, subDiscard)
}

func (t *Target) writeZeroesStart(r *ublk.Request) error {
	switch {
	case t.block:
		// On a block device this is blkdev_issue_zeroout with
		// NOUNMAP, exactly what BLKZEROOUT does, but run by io_uring
		// off the queue thread. Keeping blocks mapped is always
		// allowed for WRITE_ZEROES.
		return r.PrepFallocate(t.fd, unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subIO)
	case !r.NoUnmap:
		return r.PrepFallocate(t.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subIO)
	case t.zeroRange.Load():
		return r.PrepFallocate(t.fd, unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subZeroRange)
	}
	return r.PrepFallocate(t.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subZeroPunch)
}

// Reap finishes, or moves on, a request whose ring I/O completed.
func (t *Target) Reap(r *ublk.Request, sub uint32, res int32) {
	var err error
	switch {
	case res >= 0 && (r.Op == ublk.OpRead || r.Op == ublk.OpWrite):
		// A short count is fine: the kernel resends the rest.
		r.Complete(res)
		return
	case sub == subDiscard && blkdiscard.Classify(res) == blkdiscard.Retry:
		err = r.PrepBlockDiscard(t.fd, r.Offset, r.Length, subDiscard)
	case sub == subDiscard && blkdiscard.Classify(res) == blkdiscard.Probe:
		// Maybe no asynchronous discard in this kernel: the worker's
		// BLKDISCARD tells, and answers for this request.
		t.slow <- r
		return
	case sub == subZeroRange && res == -int32(unix.EOPNOTSUPP):
		t.zeroRange.Store(false)
		err = r.PrepFallocate(t.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subZeroPunch)
	case sub == subZeroPunch && res == 0:
		// The range reads as zeroes; allocate it again, as NOUNMAP
		// asks.
		err = r.PrepFallocate(t.fd, unix.FALLOC_FL_KEEP_SIZE, r.Offset, r.Length, subZeroAlloc)
	case res < 0:
		r.Complete(res)
		return
	default:
		r.Complete(0)
		return
	}
	if err != nil {
		r.Done(err)
	}
}

// work runs the blocking fallbacks. One worker is enough: the kernel
// serializes BLKDISCARD on a device anyway.
func (t *Target) work() {
	defer t.worker.Done()
	for r := range t.slow {
		t.slowDiscards.Add(1)
		r.Done(t.policy.Probe(t.fd, r.Offset, r.Length))
	}
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
		if errno != unix.EINTR {
			if errno != 0 {
				return errno
			}
			return nil
		}
	}
}
