package ublk

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
	"uraid/internal/uring"
)

const controlPath = "/dev/ublk-control"

// anyQueue is the queue_id of control commands that concern no one queue.
const anyQueue = 0xFFFF

// autoID asks ADD_DEV to choose the device id.
const autoID = 0xFFFFFFFF

var (
	sizeofDevInfo = unsafe.Sizeof(uapi.CtrlDevInfo{})
	sizeofParams  = unsafe.Sizeof(uapi.Params{})
)

// control is an open /dev/ublk-control with the io_uring its commands go
// through. Commands are serialized by mu; each waits for its own result, so
// control is safe for concurrent use.
type control struct {
	mu   sync.Mutex // guards ring: one command in flight at a time
	f    *os.File
	ring *uring.Ring
}

// openControl opens the ublk control device, explaining the usual reasons
// it cannot be.
func openControl() (*control, error) {
	f, err := os.OpenFile(controlPath, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, controlOpenError(err)
	}
	// The driver rejects every command unless the ring carries 128-byte
	// SQEs.
	ring, err := uring.New(4, uring.WithSQE128())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ublk control ring: %w", err)
	}
	return &control{f: f, ring: ring}, nil
}

func controlOpenError(err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		if _, serr := os.Stat("/sys/module/ublk_drv"); serr == nil {
			return fmt.Errorf("%w: %s is missing although ublk_drv is loaded (is devtmpfs mounted on /dev?): %w", ErrNoUblk, controlPath, err)
		}
		if kernelHasUblkModule() {
			return fmt.Errorf("%w: %s is missing: the ublk_drv module is not loaded (try: modprobe ublk_drv): %w", ErrNoUblk, controlPath, err)
		}
		return fmt.Errorf("%w: %s: %w", ErrNoUblk, noDriver(kernelRelease(), osRelease("/etc/os-release")), err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: run as root: %w", ErrPermission, err)
	}
	return fmt.Errorf("ublk: %w", err)
}

// noDriver says what to do on a kernel built without ublk: most distribution kernels since 6.x
// have it, but Debian 12's own (6.1) does not, and its backports kernel does.
func noDriver(release string, osr map[string]string) string {
	msg := fmt.Sprintf("this kernel (Linux %s) was built without ublk (CONFIG_BLK_DEV_UBLK); uraid needs Linux 6.12 or later with ublk_drv", release)
	if osr["ID"] == "debian" && osr["VERSION_ID"] == "12" {
		msg += "; on Debian 12, boot the bookworm-backports kernel: apt install -t bookworm-backports linux-image-amd64"
	}
	return msg
}

// osRelease reads os-release(5)'s KEY=value lines; nil when there is none.
func osRelease(path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && k != "" && !strings.HasPrefix(k, "#") {
			m[k] = strings.Trim(v, `"'`)
		}
	}
	return m
}

// kernelHasUblkModule reports whether the running kernel ships ublk_drv as a
// module that modprobe could load.
func kernelHasUblkModule() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	dir := "/lib/modules/" + unix.ByteSliceToString(u.Release[:])
	b, err := os.ReadFile(dir + "/modules.dep")
	if err != nil {
		return false
	}
	return containsModule(b, "ublk_drv")
}

func containsModule(dep []byte, name string) bool {
	// Lines look like "kernel/drivers/block/ublk_drv.ko.xz: ...".
	needle := "/" + name + ".ko"
	for i := 0; i+len(needle) <= len(dep); i++ {
		if string(dep[i:i+len(needle)]) == needle {
			return true
		}
	}
	return false
}

func (c *control) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if c.ring != nil {
		errs = append(errs, c.ring.Close())
		c.ring = nil
	}
	if c.f != nil {
		errs = append(errs, c.f.Close())
		c.f = nil
	}
	return errors.Join(errs...)
}

// cmdNames label control commands in errors.
var cmdNames = map[uint32]string{
	uapi.UBLK_U_CMD_GET_DEV_INFO:        "GET_DEV_INFO",
	uapi.UBLK_U_CMD_ADD_DEV:             "ADD_DEV",
	uapi.UBLK_U_CMD_DEL_DEV:             "DEL_DEV",
	uapi.UBLK_U_CMD_DEL_DEV_ASYNC:       "DEL_DEV_ASYNC",
	uapi.UBLK_U_CMD_START_DEV:           "START_DEV",
	uapi.UBLK_U_CMD_STOP_DEV:            "STOP_DEV",
	uapi.UBLK_U_CMD_SET_PARAMS:          "SET_PARAMS",
	uapi.UBLK_U_CMD_GET_PARAMS:          "GET_PARAMS",
	uapi.UBLK_U_CMD_START_USER_RECOVERY: "START_USER_RECOVERY",
	uapi.UBLK_U_CMD_END_USER_RECOVERY:   "END_USER_RECOVERY",
	uapi.UBLK_U_CMD_GET_FEATURES:        "GET_FEATURES",
	uapi.UBLK_U_CMD_TRY_STOP_DEV:        "TRY_STOP_DEV",
}

// do sends one control command and waits for its result. buf, when not nil,
// is the command's in/out buffer; it is pinned for the duration because the
// kernel reads and writes it from an io-wq worker.
func (c *control) do(op uint32, cmd uapi.CtrlCmd, buf unsafe.Pointer) error {
	var pin runtime.Pinner
	if buf != nil {
		pin.Pin(buf)
		cmd.Addr = uint64(uintptr(buf))
	}
	defer pin.Unpin()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ring == nil {
		return fmt.Errorf("ublk %s: %w", cmdNames[op], ErrStopped)
	}
	sqe := c.ring.NextSQE128()
	if sqe == nil {
		// One command at a time on a ring of four: cannot happen
		// unless a previous command's CQE was lost.
		return fmt.Errorf("ublk %s: control ring full", cmdNames[op])
	}
	*sqe = uapi.SQE128{}
	sqe.Opcode = uapi.IORING_OP_URING_CMD
	sqe.Fd = int32(c.f.Fd())
	sqe.SetCmdOp(op)
	*sqe.CtrlCmd() = cmd
	sqe.UserData = uint64(op)

	res, err := c.ring.SubmitAndWaitOne()
	if err != nil {
		return fmt.Errorf("ublk %s: %w", cmdNames[op], err)
	}
	if res < 0 {
		return fmt.Errorf("ublk %s dev %d: %w", cmdNames[op], cmd.DevID, os.NewSyscallError("io_uring_cmd", unix.Errno(-res)))
	}
	return nil
}

func (c *control) addDev(info *uapi.CtrlDevInfo) error {
	err := c.do(uapi.UBLK_U_CMD_ADD_DEV, uapi.CtrlCmd{
		DevID: info.DevID, QueueID: anyQueue, Len: uint16(sizeofDevInfo),
	}, unsafe.Pointer(info))
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%w (device id %d is taken: pick another or remove it)", err, info.DevID)
	}
	return err
}

func (c *control) setParams(id uint32, p *uapi.Params) error {
	err := c.do(uapi.UBLK_U_CMD_SET_PARAMS, uapi.CtrlCmd{
		DevID: id, QueueID: anyQueue, Len: uint16(sizeofParams),
	}, unsafe.Pointer(p))
	if errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w (the driver refused the parameters: %+v)", err, *p)
	}
	return err
}

func (c *control) startDev(id uint32, pid int) error {
	return c.do(uapi.UBLK_U_CMD_START_DEV, uapi.CtrlCmd{DevID: id, QueueID: anyQueue, Data: uint64(pid)}, nil)
}

func (c *control) stopDev(id uint32) error {
	return c.do(uapi.UBLK_U_CMD_STOP_DEV, uapi.CtrlCmd{DevID: id, QueueID: anyQueue}, nil)
}

// tryStopDev is STOP_DEV that the kernel refuses with EBUSY while the block
// device has openers, checked under the disk's open mutex so that no open
// can slip in between (drivers with UBLK_F_SAFE_STOP_DEV only).
func (c *control) tryStopDev(id uint32) error {
	return c.do(uapi.UBLK_U_CMD_TRY_STOP_DEV, uapi.CtrlCmd{DevID: id, QueueID: anyQueue}, nil)
}

// delDev deletes the device. The synchronous DEL_DEV waits until every
// descriptor of /dev/ublkbN is closed, which would hang a server whose
// device someone still has open (mounted, or a process that ignored the
// removal); DEL_DEV_ASYNC removes /dev/ublkcN at once and lets the kernel
// free the id when the last user goes. The synchronous form is the fallback
// for drivers without the asynchronous one.
func (c *control) delDev(id uint32) error {
	err := c.do(uapi.UBLK_U_CMD_DEL_DEV_ASYNC, uapi.CtrlCmd{DevID: id, QueueID: anyQueue}, nil)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
		err = c.do(uapi.UBLK_U_CMD_DEL_DEV, uapi.CtrlCmd{DevID: id, QueueID: anyQueue}, nil)
	}
	return err
}

func (c *control) getParams(id uint32, p *uapi.Params) error {
	return c.do(uapi.UBLK_U_CMD_GET_PARAMS, uapi.CtrlCmd{
		DevID: id, QueueID: anyQueue, Len: uint16(sizeofParams),
	}, unsafe.Pointer(p))
}

func (c *control) getDevInfo(id uint32) (uapi.CtrlDevInfo, error) {
	info := new(uapi.CtrlDevInfo)
	err := c.do(uapi.UBLK_U_CMD_GET_DEV_INFO, uapi.CtrlCmd{
		DevID: id, QueueID: anyQueue, Len: uint16(sizeofDevInfo),
	}, unsafe.Pointer(info))
	return *info, err
}

func (c *control) getFeatures() (Features, error) {
	feat := new(uint64)
	err := c.do(uapi.UBLK_U_CMD_GET_FEATURES, uapi.CtrlCmd{
		DevID: autoID, QueueID: anyQueue, Len: uapi.UBLK_FEATURES_LEN,
	}, unsafe.Pointer(feat))
	return Features(*feat), err
}

func (c *control) startUserRecovery(id uint32) error {
	return c.do(uapi.UBLK_U_CMD_START_USER_RECOVERY, uapi.CtrlCmd{DevID: id, QueueID: anyQueue}, nil)
}

func (c *control) endUserRecovery(id uint32, pid int) error {
	return c.do(uapi.UBLK_U_CMD_END_USER_RECOVERY, uapi.CtrlCmd{DevID: id, QueueID: anyQueue, Data: uint64(pid)}, nil)
}

// updateSize sets the live device's size to sectors (Linux 6.16, UBLK_F_UPDATE_SIZE): the kernel
// sets the disk's capacity and tells its users (a uevent, resize2fs sees the new size).
func (c *control) updateSize(id uint32, sectors uint64) error {
	return c.do(uapi.UBLK_U_CMD_UPDATE_SIZE, uapi.CtrlCmd{DevID: id, QueueID: anyQueue, Data: sectors}, nil)
}
