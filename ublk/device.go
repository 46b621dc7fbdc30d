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

	"uraid/internal/uapi"
)

// Paths of a device's nodes; devtmpfs creates them.
func charPath(id uint32) string  { return "/dev/ublkc" + strconv.FormatUint(uint64(id), 10) }
func blockPath(id uint32) string { return "/dev/ublkb" + strconv.FormatUint(uint64(id), 10) }

// nodeTimeout bounds the wait for a device node when ctx has no deadline:
// devtmpfs creates nodes within milliseconds, so a node missing after this
// long is not coming.
const nodeTimeout = 10 * time.Second

// Device is a Target served as /dev/ublkbN.
type Device struct {
	target Target
	params Params
	opts   Options
	// recover says Start takes over the existing device opts.ID instead
	// of adding one.
	recover bool

	// mu serializes Start and Stop, and guards the fields below.
	mu      sync.Mutex
	started bool
	stopped bool
	stopErr error
	ctrl    *control
	id      uint32
	added   bool // ADD_DEV succeeded: DEL_DEV is owed
	live    bool // START_DEV succeeded: STOP_DEV is owed
	char    *os.File
	flags   uint64   // the device's UBLK_F_* flags as the kernel has them
	mode    dataMode // how request data moves; set by start
	zcWhy   string   // why mode copies, when it does
	queues  []*queue
	running sync.WaitGroup // queue goroutines

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
// should then Stop it (or exit, if it uses user recovery). Err says why.
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

func (d *Device) queueExited(err error) {
	if err != nil {
		d.failOnce.Do(func() {
			d.failErr = err
			close(d.failed)
		})
	}
	d.running.Done()
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

// Path is the block device node, valid once Start succeeded.
func (d *Device) Path() string { return blockPath(d.ID()) }

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
	info.Flags |= modeFlags(d.mode, features)
	if err := ctrl.addDev(info); err != nil {
		return err
	}
	d.id, d.added = info.DevID, true
	d.flags = info.Flags
	// The kernel clears the flags it does not support in its answer.
	if got := flagsMode(info.Flags); got != d.mode {
		d.mode, d.zcWhy = got, fmt.Sprintf("kernel %s accepted flags %#x but not the zero-copy flags asked", kernelRelease(), info.Flags)
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
	if err := d.startQueues(ctx, int(info.NrHwQueues), int(info.QueueDepth), maxIO); err != nil {
		return err
	}
	// START_DEV waits, in the kernel, for every fetch to be outstanding.
	if err := ctrl.startDev(d.id, os.Getpid()); err != nil {
		return err
	}
	d.live = true
	return waitBlockNode(ctx, blockPath(d.id))
}

// startRecovery resumes a quiesced device: the kernel reinitializes its
// queues, the new queues fetch, and END_USER_RECOVERY makes it live again.
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
	if kp.Basic.DevSectors != uint64(d.params.Size)>>9 || kp.Basic.LogicalBsShift != log2(d.params.logical()) {
		return fmt.Errorf("ublk recover dev %d: it has %d sectors of %d bytes, the target %d bytes in blocks of %d: not the same device",
			id, kp.Basic.DevSectors, 1<<kp.Basic.LogicalBsShift, d.params.Size, d.params.logical())
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
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("ublk recover dev %d: device stays busy (is its old server still running?): %w", id, err)
		}
	}
	d.id = id
	// The device keeps the data mode it was created with; this server
	// must be able to serve it so.
	d.flags = ki.Flags
	d.mode = flagsMode(ki.Flags)
	if d.mode.zeroCopy() {
		// The option does not matter here, only whether the target can.
		if m, why := chooseMode(ZeroCopyAuto, d.target, ki.Flags, kernelRelease()); m == modeCopy {
			return fmt.Errorf("ublk recover dev %d: it was created for zero copy (%s), which this server cannot serve: %s", id, d.mode, why)
		}
	} else {
		d.zcWhy = "the device was created without zero copy"
	}
	maxIO := int(ki.MaxIOBufBytes) &^ (os.Getpagesize() - 1)
	if err := d.startQueues(ctx, int(ki.NrHwQueues), int(ki.QueueDepth), maxIO); err != nil {
		return err
	}
	if err := d.ctrl.endUserRecovery(id, os.Getpid()); err != nil {
		return err
	}
	d.live, d.added = true, true
	return waitBlockNode(ctx, blockPath(id))
}

// startQueues opens /dev/ublkcN and starts the queue goroutines, returning
// once every tag of every queue has its fetch submitted.
func (d *Device) startQueues(ctx context.Context, n, depth, maxIO int) error {
	char, err := openNode(ctx, charPath(d.id))
	if err != nil {
		return err
	}
	d.char = char
	for i := range n {
		q := newQueue(uint16(i), depth, d.target, d.params.Size)
		q.mode, q.canRegister = d.mode, d.flags&uapi.UBLK_F_SUPPORT_ZERO_COPY != 0
		if err := q.open(int(char.Fd()), maxIO); err != nil {
			return err
		}
		d.queues = append(d.queues, q)
	}
	ready := make(chan error, len(d.queues))
	for _, q := range d.queues {
		d.running.Add(1)
		go q.run(ready, d.queueExited)
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

// teardown undoes whatever start got to.
func (d *Device) teardown() error {
	var errs []error
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
	d.running.Wait()
	for _, q := range d.queues {
		if q.err != nil {
			errs = append(errs, q.err)
		}
		errs = append(errs, q.close())
	}
	d.queues = nil
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
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
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
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
			return fmt.Errorf("ublk: %s did not appear (is devtmpfs mounted on /dev?): %w", path, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
