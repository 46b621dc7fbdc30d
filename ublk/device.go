package ublk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/clock"
	"uraid/internal/uapi"
)

// BlockPath is device id's block node, /dev/ublkbN, which devtmpfs creates.
// The daemon's records and the tests name devices through it, so that they
// spell the node as the server waits for it.
func BlockPath(id uint32) string { return "/dev/ublkb" + strconv.FormatUint(uint64(id), 10) }

// CharPath is device id's character node, /dev/ublkcN, which its server
// drives and which outlives a killed server until the device is deleted.
func CharPath(id uint32) string { return "/dev/ublkc" + strconv.FormatUint(uint64(id), 10) }

// nodeTimeout bounds the wait for a device node when ctx has no deadline:
// devtmpfs creates nodes within milliseconds, so a node missing after this
// long is not coming.
const nodeTimeout = 10 * time.Second

// Device is a Target served as /dev/ublkbN.
type Device struct {
	target Target
	params Params
	// kernelSize is the block device's size as the kernel has it, once started: params.Size,
	// except on a device taken over whose array grew meanwhile (until UpdateSize).
	kernelSize int64
	opts       Options
	// recover says Start takes over the existing device opts.ID instead
	// of adding one.
	recover bool

	// mu serializes Start and Stop, and guards the fields below.
	mu       sync.Mutex
	started  bool
	stopped  bool
	stopErr  error
	ctrl     *control
	id       uint32
	flags    uint64 // UBLK_F_* the kernel agreed to
	added    bool   // ADD_DEV succeeded: DEL_DEV is owed
	live     bool   // START_DEV succeeded: STOP_DEV is owed
	char     *os.File
	mode     dataMode // how request data moves; set by start
	zcWhy    string   // why mode copies, when it does
	batch    bool     // the batch I/O commands; set by start
	batchWhy string   // why not, when not
	queues   []*queue

	// failed is closed when a queue stops serving on its own; failErr,
	// written once before the close, says why.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error
}

// New checks t's parameters and the options; nothing is asked of the
// kernel until Start.
func New(t Target, opts Options) (*Device, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := t.Params()
	if err := p.validate(os.Getpagesize()); err != nil {
		return nil, err
	}
	return &Device{target: t, params: p, opts: o, failed: make(chan struct{})}, nil
}

// Failed is closed when a queue stops serving while the device is live,
// which leaves the device unable to complete that queue's I/O: a server
// should then Stop it, or, if it uses user recovery, Settle it and exit
// (the failed queue keeps its ring open until then, see Settle). Err says
// why.
func (d *Device) Failed() <-chan struct{} { return d.failed }

// Err is the error that closed Failed, or nil.
func (d *Device) Err() error {
	select {
	case <-d.failed:
		return d.failErr
	default:
		return nil
	}
}

// queueFailed closes Failed with the first error of a queue that stopped
// serving on its own.
func (d *Device) queueFailed(err error) {
	d.failOnce.Do(func() {
		d.failErr = err
		close(d.failed)
	})
}

// releaseQueues lets every queue that failed (and every one that will)
// close its ring and end instead of parking: the device is being stopped
// or abandoned. Under d.mu.
func (d *Device) releaseQueues() {
	for _, q := range d.queues {
		q.releaseOnce()
	}
}

// closeParked waits for the queues that failed to close their rings,
// releasing them: before a stop, since their requests are the driver's to
// abort and STOP_DEV waits for them. Under d.mu.
func (d *Device) closeParked() {
	for _, q := range d.queues {
		select {
		case <-q.parked:
			q.releaseOnce()
			<-q.gone
		default:
		}
	}
}

// waitQueues returns once the goroutines of every started queue have
// ended; parked ones must have been released. Under d.mu.
func (d *Device) waitQueues() {
	for _, q := range d.queues {
		if q.started {
			<-q.gone
		}
	}
}

// NewRecovery prepares to take over device id, left quiesced by a server
// that died (see Options.UserRecovery). Start then resumes it: the block
// device keeps its number and whatever has it open or mounted carries on.
// The queue layout comes from the kernel; opts supplies nothing else that
// matters yet, but is checked as for New.
func NewRecovery(t Target, id uint32, opts Options) (*Device, error) {
	opts.ID, opts.FixedID = id, true
	d, err := New(t, opts)
	if err != nil {
		return nil, err
	}
	d.recover = true
	return d, nil
}

// Flags are the UBLK_F_* bits the kernel gave the device (the asked ones
// it supports, plus those it forces on), valid once Start succeeded. On
// recovery they are the flags the device was created with.
func (d *Device) Flags() Flags {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Flags(d.flags)
}

// ID is the device number N of /dev/ublkbN, valid once Start succeeded.
func (d *Device) ID() uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.id
}

// ZeroCopy says how the started device moves request data.
func (d *Device) ZeroCopy() ZeroCopyStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := ZeroCopyStatus{On: d.mode.zeroCopy(), Mode: d.mode.String(), Reason: d.zcWhy}
	for _, q := range d.queues {
		st.BufferBytes += q.bufferBytes()
	}
	return st
}

// BatchIO says whether the started device uses the batch I/O commands.
func (d *Device) BatchIO() BatchIOStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return BatchIOStatus{On: d.batch, Reason: d.batchWhy}
}

// QueueCounts is what one queue has cost in system calls so far.
type QueueCounts struct {
	// Queue is the hardware queue's number; TID the thread its goroutine
	// is locked to (0 before it started), whose /proc/self/task entry
	// holds that thread's CPU time and context switches.
	Queue int
	TID   int
	// Enters counts the io_uring_enter calls of the queue's ring: each
	// submit of commits and member I/O, and each sleep for completions.
	Enters uint64
}

// QueueCounts returns each queue's counts. Safe while the device serves;
// it reads atomics the queues keep, so it costs them nothing.
func (d *Device) QueueCounts() []QueueCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]QueueCounts, len(d.queues))
	for i, q := range d.queues {
		out[i] = QueueCounts{Queue: int(q.id), TID: int(q.tid.Load()), Enters: q.enters.Load()}
	}
	return out
}

// Path is the block device node, valid once Start succeeded.
func (d *Device) Path() string { return BlockPath(d.ID()) }

// Start creates the device and returns once its block device node exists
// and every queue is serving. On failure everything created is removed.
func (d *Device) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.stopped {
		return fmt.Errorf("ublk start: %w", ErrStopped)
	}
	d.started = true
	if err := d.start(ctx); err != nil {
		d.stopErr = d.teardown()
		d.stopped = true
		return errors.Join(err, d.stopErr)
	}
	return nil
}

func (d *Device) start(ctx context.Context) error {
	ctrl, err := openControl()
	if err != nil {
		return err
	}
	d.ctrl = ctrl
	ctx, cancel := withDefaultTimeout(ctx, nodeTimeout)
	defer cancel()
	if d.recover {
		return d.startRecovery(ctx)
	}

	info := &uapi.CtrlDevInfo{
		NrHwQueues:    uint16(d.opts.Queues),
		QueueDepth:    uint16(d.opts.Depth),
		MaxIOBufBytes: uint32(d.opts.MaxIOBytes),
		DevID:         autoID,
	}
	if d.opts.FixedID {
		info.DevID = d.opts.ID
	}
	if d.opts.UserRecovery {
		info.Flags |= uapi.UBLK_F_USER_RECOVERY
	}
	if d.opts.ReissueOnRecovery {
		info.Flags |= uapi.UBLK_F_USER_RECOVERY_REISSUE
	}
	// A kernel without GET_FEATURES (before 6.5) has no zero copy either.
	features, _ := ctrl.getFeatures()
	d.mode, d.zcWhy = chooseMode(d.opts.ZeroCopy, d.target, features, kernelRelease())
	info.Flags |= uint64(modeFlags(d.mode, features))
	d.batch, d.batchWhy = chooseBatch(d.opts.BatchIO, features, kernelRelease())
	if d.batch {
		info.Flags |= uapi.UBLK_F_BATCH_IO
	}
	if err := ctrl.addDev(info); err != nil {
		return err
	}
	d.id, d.flags, d.added = info.DevID, info.Flags, true
	// The kernel clears the flags it does not support in its answer.
	if got := flagsMode(info.Flags); got != d.mode {
		d.mode, d.zcWhy = got, fmt.Sprintf("kernel %s accepted flags %#x but not the zero-copy flags asked", kernelRelease(), info.Flags)
	}
	if d.batch && info.Flags&uapi.UBLK_F_BATCH_IO == 0 {
		d.batch, d.batchWhy = false, fmt.Sprintf("kernel %s accepted flags %#x but not UBLK_F_BATCH_IO", kernelRelease(), info.Flags)
	}
	// The kernel may clamp queues to the CPUs and the buffer size to its
	// limit: serve what it agreed to.
	if int(info.NrHwQueues) < 1 || int(info.QueueDepth) != d.opts.Depth || int(info.MaxIOBufBytes) > d.opts.MaxIOBytes {
		return fmt.Errorf("ublk add dev %d: kernel answered %d queues of depth %d with %d-byte buffers, asked %d of %d with %d",
			d.id, info.NrHwQueues, info.QueueDepth, info.MaxIOBufBytes, d.opts.Queues, d.opts.Depth, d.opts.MaxIOBytes)
	}
	maxIO := int(info.MaxIOBufBytes) &^ (os.Getpagesize() - 1)

	kp := d.params.encode(uint32(maxIO))
	if err := ctrl.setParams(d.id, &kp); err != nil {
		return err
	}
	if err := d.makeQueues(int(info.NrHwQueues), int(info.QueueDepth), maxIO); err != nil {
		return err
	}
	if err := d.startQueues(ctx); err != nil {
		return err
	}
	// START_DEV waits, in the kernel, for every fetch to be outstanding.
	if err := ctrl.startDev(d.id, os.Getpid()); err != nil {
		return err
	}
	d.live = true
	return waitBlockNode(ctx, BlockPath(d.id))
}

// startRecovery resumes a quiesced device: the kernel reinitializes its
// queues, the new queues fetch, and END_USER_RECOVERY makes it live again.
//
// Everything that can be prepared is prepared before START_USER_RECOVERY:
// from that command until every queue has fetched all its tags, a server
// that dies leaves a 6.12 driver unable to recover the device (its cancel
// and reinit paths assume each queue either fully fetched or belongs to
// the dead server), so that window is kept to opening the character
// device, mapping the descriptors and one submission per queue.
func (d *Device) startRecovery(ctx context.Context) error {
	id := d.opts.ID
	ki, err := d.ctrl.getDevInfo(id)
	if err != nil {
		return err
	}
	if ki.Flags&uapi.UBLK_F_USER_RECOVERY == 0 {
		return fmt.Errorf("ublk recover dev %d: it was created without user recovery, so it cannot be taken over (remove it and create it again)", id)
	}
	var kp uapi.Params
	kp.Len = uint32(sizeofParams)
	if err := d.ctrl.getParams(id, &kp); err != nil {
		return err
	}
	// A device smaller than the target is one whose array grew while the kernel kept the old size
	// (a kernel without UPDATE_SIZE, or a server that died before it could tell it): the target
	// serves every byte of it.
	if kp.Basic.DevSectors > uint64(d.params.Size)>>9 || kp.Basic.LogicalBsShift != log2(d.params.logical()) {
		return fmt.Errorf("ublk recover dev %d: it has %d sectors of %d bytes, the target %d bytes in blocks of %d: not the same device",
			id, kp.Basic.DevSectors, 1<<kp.Basic.LogicalBsShift, d.params.Size, d.params.logical())
	}
	d.id, d.flags = id, ki.Flags
	d.kernelSize = int64(kp.Basic.DevSectors) << 9
	// The device keeps the data mode it was created with; this server
	// must be able to serve it so.
	d.mode = flagsMode(ki.Flags)
	if d.mode.zeroCopy() {
		// The option does not matter here, only whether the target can.
		if m, why := chooseMode(ZeroCopyAuto, d.target, Features(ki.Flags), kernelRelease()); m == modeCopy {
			return fmt.Errorf("ublk recover dev %d: it was created for zero copy (%s), which this server cannot serve: %s", id, d.mode, why)
		}
	} else {
		d.zcWhy = "the device was created without zero copy"
	}
	// So does it keep its commands.
	d.batch = ki.Flags&uapi.UBLK_F_BATCH_IO != 0
	if !d.batch {
		d.batchWhy = "the device was created without batch I/O"
	}
	maxIO := int(ki.MaxIOBufBytes) &^ (os.Getpagesize() - 1)
	if err := d.makeQueues(int(ki.NrHwQueues), int(ki.QueueDepth), maxIO); err != nil {
		return err
	}
	// The kernel answers EBUSY until it has finished with the dead
	// server (its queues cancelled, its /dev/ublkcN closed).
	for {
		err := d.ctrl.startUserRecovery(id)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		if err := clock.SleepCtx(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("ublk recover dev %d: device stays busy (is its old server still running?): %w", id, err)
		}
	}
	if err := d.startQueues(ctx); err != nil {
		return err
	}
	if d.opts.BeforeEndRecovery != nil {
		d.opts.BeforeEndRecovery()
	}
	if err := d.ctrl.endUserRecovery(id, os.Getpid()); err != nil {
		return err
	}
	d.live, d.added = true, true
	return waitBlockNode(ctx, BlockPath(id))
}

// UpdateSize changes the size of the live device to size bytes (a multiple of its logical block)
// without stopping it: its target must already serve every byte of the new size. Kernels before
// 6.16 lack the command: the error then wraps ErrNotSupported, and the device keeps its size
// until it is made again.
func (d *Device) UpdateSize(size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live || d.stopped {
		return fmt.Errorf("ublk update size of dev %d: the device does not serve", d.id)
	}
	if size <= 0 || size%int64(d.params.logical()) != 0 {
		return fmt.Errorf("ublk update size of dev %d: %d bytes is not a positive multiple of its %d-byte blocks", d.id, size, d.params.logical())
	}
	// The queues take requests up to the larger size from before the kernel may send them until
	// after it no longer does.
	if size > d.params.Size {
		d.setQueueSize(size)
	}
	err := d.ctrl.updateSize(d.id, uint64(size)>>9)
	if err != nil {
		d.setQueueSize(d.params.Size)
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
		return fmt.Errorf("ublk update size of dev %d: %w: kernel %s cannot resize a live ublk device (UPDATE_SIZE is Linux 6.16's): %v",
			d.id, ErrNotSupported, kernelRelease(), err)
	}
	if err != nil {
		return fmt.Errorf("ublk update size of dev %d: %w", d.id, err)
	}
	d.params.Size, d.kernelSize = size, size
	d.setQueueSize(size)
	return nil
}

// KernelSize is the size of the started block device as the kernel has it: the target's, except
// on a device taken over (NewRecovery) from a server whose array was smaller, which keeps that
// size until UpdateSize.
func (d *Device) KernelSize() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.kernelSize == 0 {
		return d.params.Size
	}
	return d.kernelSize
}

func (d *Device) setQueueSize(size int64) {
	for _, q := range d.queues {
		q.size.Store(size)
	}
}

// makeQueues makes n queues of depth tags with maxIO-byte buffers: all
// they need short of the character device.
func (d *Device) makeQueues(n, depth, maxIO int) error {
	for i := range n {
		q := newQueue(uint16(i), depth, d.target, d.params.Size)
		q.mode, q.canRegister = d.mode, d.flags&uapi.UBLK_F_SUPPORT_ZERO_COPY != 0
		d.queues = append(d.queues, q)
		if err := q.openBuffers(maxIO, false); err != nil {
			return err
		}
		if d.batch {
			if err := q.openBatch(); err != nil {
				return err
			}
		}
	}
	return nil
}

// startQueues opens /dev/ublkcN, maps each queue's descriptors and starts
// the queue goroutines, returning once every tag of every queue has its
// fetch submitted.
func (d *Device) startQueues(ctx context.Context) error {
	char, err := openNode(ctx, CharPath(d.id))
	if err != nil {
		return err
	}
	d.char = char
	for _, q := range d.queues {
		if err := q.mapDescriptors(int(char.Fd())); err != nil {
			return err
		}
	}
	ready := make(chan error, len(d.queues))
	for _, q := range d.queues {
		q.started = true
		go q.run(ready, d.queueFailed)
	}
	var errs []error
	for range d.queues {
		errs = append(errs, <-ready)
	}
	return errors.Join(errs...)
}

// Stop removes the device: the block device goes first while the queues
// still serve (so in-flight I/O completes), then the queues, then the
// kernel's device. It is idempotent, safe from any goroutine, and returns
// the same result every time. It waits for the target to finish every
// request it holds: a target that never completes one makes Stop hang in
// the kernel's del_gendisk. Whoever still has /dev/ublkbN open sees it go
// away (I/O fails); the device number is freed once they close it.
// Requests withheld by Drain are served first.
func (d *Device) Stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return d.stopErr
	}
	d.stopped = true
	d.stopErr = d.teardown()
	return d.stopErr
}

// StopUnused is Stop for a device that nothing uses: if /dev/ublkbN (or a
// partition of it) is mounted, stacked on, used as swap or open in another
// process, it returns an error wrapping ErrBusy that names them, and the
// device goes on serving. Drivers with UBLK_F_SAFE_STOP_DEV check in the
// kernel, atomically with the stop; on older ones the check is procfs and
// sysfs, and an exclusive claim on the device keeps filesystems from
// mounting it while it stops.
func (d *Device) StopUnused() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return d.stopErr
	}
	if d.live {
		d.endDrainLocked()
		d.closeParked()
		if err := stopUnused(d.ctrl, d.id, Flags(d.flags)); err != nil {
			if errors.Is(err, ErrBusy) {
				return fmt.Errorf("ublk dev %d: %w", d.id, err)
			}
			// A stop that failed otherwise leaves the device as it was;
			// the teardown below tries the plain stop once more.
		} else {
			d.live = false
		}
	}
	d.stopped = true
	d.stopErr = d.teardown()
	return d.stopErr
}

// Drain stops handing requests to the target and returns once it holds
// none: everything started before has finished and its commit reached the
// kernel. Requests the kernel sends meanwhile wait in their tags. The
// server then either leaves the device to a successor with Abandon (with
// UBLK_F_USER_RECOVERY_REISSUE the kernel hands the waiting requests to
// the successor; without it they fail with EIO) or serves on with EndDrain,
// which it must also do if Drain fails (ctx ended, or the device failed).
func (d *Device) Drain(ctx context.Context) error {
	d.mu.Lock()
	if !d.live || d.stopped {
		d.mu.Unlock()
		return fmt.Errorf("ublk drain: %w", ErrStopped)
	}
	p := &drainRequest{done: make(chan uint16, len(d.queues))}
	n := len(d.queues)
	for _, q := range d.queues {
		q.draining.Store(p)
		_ = q.waker.Wake()
	}
	d.mu.Unlock()
	for range n {
		select {
		case <-p.done:
		case <-d.failed:
			return fmt.Errorf("ublk drain: %w", d.Err())
		case <-ctx.Done():
			return fmt.Errorf("ublk drain: the target still holds requests: %w", ctx.Err())
		}
	}
	return nil
}

// EndDrain undoes Drain: the requests withheld are served, and new ones too.
func (d *Device) EndDrain() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.endDrainLocked()
}

func (d *Device) endDrainLocked() {
	for _, q := range d.queues {
		if q.draining.Swap(nil) != nil && q.waker != nil {
			_ = q.waker.Wake()
		}
	}
}

// Abandon leaves the device to a successor without stopping it: each
// queue closes its ring once the target holds none of its requests (Drain
// first, so that it holds none), and /dev/ublkcN is closed. The kernel,
// finding the server gone, quiesces a device that has user recovery: the
// block device stays, its I/O waits, and NewRecovery in another process
// takes it over. A device without user recovery is removed by the kernel.
// After Abandon the Device is stopped; Stop returns Abandon's result.
func (d *Device) Abandon() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return d.stopErr
	}
	d.stopped = true
	d.releaseQueues()
	for _, q := range d.queues {
		q.abandon.Store(true)
		if q.waker != nil {
			_ = q.waker.Wake()
		}
	}
	d.waitQueues()
	errs := d.closeQueues()
	if d.char != nil {
		errs = append(errs, d.char.Close())
		d.char = nil
	}
	if d.ctrl != nil {
		errs = append(errs, d.ctrl.close())
		d.ctrl = nil
	}
	d.live, d.added = false, false
	d.stopErr = errors.Join(errs...)
	return d.stopErr
}

// Settle is what a server whose device failed (Failed is closed) does
// before it exits, so that a successor takes the device over (user
// recovery): it stops handing requests to the target and returns once the
// target holds none of those of the queues still serving, their last
// commits with the kernel, or ctx ends. Unlike Abandon it closes nothing:
// every queue, the failed ones too, keeps its ring and thread until the
// process exits, and the driver then finds the whole server gone at once,
// as for one that was killed; the requests that arrive meanwhile wait in
// their tags, and the kernel reissues them to the successor (or fails
// them, without UBLK_F_USER_RECOVERY_REISSUE). The Device is stopped
// afterwards in all but name: only Stop or Abandon (which close the
// queues while the device is live) may follow.
func (d *Device) Settle(ctx context.Context) error {
	d.mu.Lock()
	if !d.live || d.stopped {
		d.mu.Unlock()
		return fmt.Errorf("ublk settle: %w", ErrStopped)
	}
	p := &drainRequest{done: make(chan uint16, len(d.queues))}
	qs := append([]*queue(nil), d.queues...)
	for _, q := range qs {
		q.draining.Store(p)
		_ = q.waker.Wake()
	}
	d.mu.Unlock()
	reported := make(map[uint16]bool, len(qs))
	for _, q := range qs {
		for !reported[q.id] {
			select {
			case id := <-p.done:
				reported[id] = true
			case <-q.parked:
				// A failed queue answers no drain; what its target
				// still holds is the kernel's to abort.
				reported[q.id] = true
			case <-q.gone:
				// Ended (every fetch aborted): it has nothing to finish.
				reported[q.id] = true
			case <-ctx.Done():
				return fmt.Errorf("ublk settle: the target still holds requests of queue %d: %w", q.id, ctx.Err())
			}
		}
	}
	return nil
}

// FailQueue ends queue q with err, as a queue ends when its ring fails:
// fault injection, for testing what a server does when its device fails
// (Failed closes with err). The queue parks as a failed one does (Settle).
func (d *Device) FailQueue(q int, err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live || q < 0 || q >= len(d.queues) {
		return fmt.Errorf("ublk: no live queue %d", q)
	}
	d.queues[q].fault.Store(&err)
	_ = d.queues[q].waker.Wake()
	return nil
}

// teardown undoes whatever start got to.
func (d *Device) teardown() error {
	var errs []error
	d.endDrainLocked()
	d.releaseQueues()
	d.closeParked()
	if d.live {
		// del_gendisk waits for in-flight I/O, which the queues must
		// still be serving.
		errs = append(errs, d.ctrl.stopDev(d.id))
		d.live = false
	}
	for _, q := range d.queues {
		q.stopping.Store(true)
		if q.waker != nil {
			_ = q.waker.Wake()
		}
	}
	d.waitQueues()
	errs = append(errs, d.closeQueues()...)
	if d.char != nil {
		errs = append(errs, d.char.Close())
		d.char = nil
	}
	if d.added {
		// DEL_DEV waits until every fd on the device nodes is closed.
		errs = append(errs, d.ctrl.delDev(d.id))
		d.added = false
	}
	if d.ctrl != nil {
		errs = append(errs, d.ctrl.close())
		d.ctrl = nil
	}
	return errors.Join(errs...)
}

// closeQueues releases the queues once their goroutines are gone and
// returns their errors. A queue that failed while the target still held
// some of its requests keeps its memory: the target may yet write into
// those buffers, so they stay mapped until the process ends.
func (d *Device) closeQueues() []error {
	var errs []error
	for _, q := range d.queues {
		if q.err != nil {
			errs = append(errs, q.err)
		}
		if q.serving > 0 {
			continue
		}
		errs = append(errs, q.close())
	}
	d.queues = nil
	return errs
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// openNode opens a device node that devtmpfs is about to create.
func openNode(ctx context.Context, path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("ublk: %w", err)
		}
		if err := clock.SleepCtx(ctx, 2*time.Millisecond); err != nil {
			return nil, fmt.Errorf("ublk: %s did not appear (is devtmpfs mounted on /dev?): %w", path, err)
		}
	}
}

// waitBlockNode waits until path is a block device node.
func waitBlockNode(ctx context.Context, path string) error {
	for {
		var st unix.Stat_t
		err := unix.Stat(path, &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			return nil
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("ublk: %w", os.NewSyscallError("stat", err))
		}
		if err := clock.SleepCtx(ctx, 2*time.Millisecond); err != nil {
			return fmt.Errorf("ublk: %s did not appear (is devtmpfs mounted on /dev?): %w", path, err)
		}
	}
}
