package ublk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// DeviceInfo is what the kernel reports about a ublk device.
type DeviceInfo struct {
	ID         uint32
	Queues     int
	Depth      int
	MaxIOBytes int
	// State is "dead" (not serving), "live" or "quiesced" (waiting for
	// a new server after user recovery).
	State string
	// PID is the server process that started the device, or 0.
	PID   int
	Flags Flags
}

// Info asks the kernel about device id.
func Info(id uint32) (DeviceInfo, error) {
	c, err := openControl()
	if err != nil {
		return DeviceInfo{}, err
	}
	defer c.close()
	ki, err := c.getDevInfo(id)
	if err != nil {
		return DeviceInfo{}, err
	}
	return deviceInfo(ki), nil
}

func deviceInfo(ki uapi.CtrlDevInfo) DeviceInfo {
	state := "state(" + strconv.Itoa(int(ki.State)) + ")"
	switch ki.State {
	case uapi.UBLK_S_DEV_DEAD:
		state = "dead"
	case uapi.UBLK_S_DEV_LIVE:
		state = "live"
	case uapi.UBLK_S_DEV_QUIESCED:
		state = "quiesced"
	}
	return DeviceInfo{
		ID: ki.DevID, Queues: int(ki.NrHwQueues), Depth: int(ki.QueueDepth),
		MaxIOBytes: int(ki.MaxIOBufBytes), State: state, PID: int(ki.UblksrvPID), Flags: Flags(ki.Flags),
	}
}

// Path is the device's block node, /dev/ublkbN.
func (i DeviceInfo) Path() string { return BlockPath(i.ID) }

// List returns the ids of every ublk device the kernel has.
func List() ([]uint32, error) { return listDevices() }

// RemoveOrphan deletes device id if the server that started it is dead, as
// happens when a server is killed: the kernel keeps /dev/ublkcN and the id
// (and, with user recovery, the quiesced block device) until someone
// deletes them. It returns ErrDaemonAlive, and leaves the device alone,
// while that server runs, and an error wrapping ErrBusy, naming them,
// while anything has the block device open.
func RemoveOrphan(id uint32) error {
	c, err := openControl()
	if err != nil {
		return err
	}
	defer c.close()
	return removeOrphan(c, id)
}

func removeOrphan(c *control, id uint32) error {
	ki, err := c.getDevInfo(id)
	if err != nil {
		return err
	}
	if pid := int(ki.UblksrvPID); pid > 0 && processAlive(pid) {
		return fmt.Errorf("ublk dev %d: %w (pid %d)", id, ErrDaemonAlive, pid)
	}
	if ki.State == uapi.UBLK_S_DEV_LIVE {
		if ki, err = settle(c, id, int(ki.UblksrvPID)); err != nil {
			return err
		}
	}
	if ki.State != uapi.UBLK_S_DEV_DEAD {
		// A quiesced device (user recovery) or one whose stop never
		// ran still has a disk: remove it first, unless it is in use.
		if err := stopUnused(c, id, Flags(ki.Flags)); err != nil {
			return fmt.Errorf("ublk dev %d: %w", id, err)
		}
	}
	return c.delDev(id)
}

// releaseWait bounds how long an orphan cleanup waits for the driver to finish with a dead
// server's device.
const releaseWait = time.Minute

// settle waits while device id is still live after its server died. The driver acts on a dead
// server when the server's character device is released, and later drivers (with zero copy or
// automatic buffer registration) release it from a work item that first waits for io_uring to
// drop the request buffers the server had registered: until then the device is live, and a stop
// of ours would race the driver's own stop (or its quiesce, with user recovery) and can wait on
// it for good, since a stop waits for requests only the driver's release fails. After
// releaseWait it gives up with an error rather than take that chance.
func settle(c *control, id uint32, pid int) (uapi.CtrlDevInfo, error) {
	deadline := time.Now().Add(releaseWait)
	for {
		ki, err := c.getDevInfo(id)
		if err != nil || ki.State != uapi.UBLK_S_DEV_LIVE {
			return ki, err
		}
		if time.Now().After(deadline) {
			return ki, fmt.Errorf("ublk dev %d: its server (pid %d) is dead but the driver has not released the device after %v; try again later, and if it stays live see the kernel log", id, pid, releaseWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemoveOrphans deletes every ublk device whose server is dead and returns
// the ids it removed. Devices with a live server are left alone.
func RemoveOrphans() ([]uint32, error) {
	ids, err := listDevices()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	c, err := openControl()
	if err != nil {
		return nil, err
	}
	defer c.close()
	var removed []uint32
	var errs []error
	for _, id := range ids {
		switch err := removeOrphan(c, id); {
		case err == nil:
			removed = append(removed, id)
		case errors.Is(err, ErrDaemonAlive), errors.Is(err, unix.ENODEV), errors.Is(err, ErrBusy):
			// Served, deleted meanwhile, or in use.
		default:
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// listDevices returns the ids of every ublk device the kernel has, from the
// character devices it registers (class "ublk-char" in sysfs, and their
// nodes in /dev in case sysfs is not mounted).
func listDevices() ([]uint32, error) {
	var names []string
	for _, pattern := range []string{"/sys/class/ublk-char/ublkc*", "/dev/ublkc*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		names = append(names, m...)
	}
	seen := map[uint32]bool{}
	var ids []uint32
	for _, n := range names {
		v, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(n), "ublkc"), 10, 32)
		if err == nil && !seen[uint32(v)] {
			seen[uint32(v)] = true
			ids = append(ids, uint32(v))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// processAlive reports whether pid names a process that is not a zombie.
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	if err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	// A zombie has released its files, and with them the device.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and
	// may itself contain them.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
