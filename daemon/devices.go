package daemon

// devices.go owns the kernel's ublk devices as the start of a new device sees them: the number
// it takes, whether the kernel still has one, and the refusal to start over a device that an
// earlier daemon left.

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"uraid/ublk"
)

// freeDeviceID is the lowest device number that neither the kernel nor another array's record
// has, nor taken.
func freeDeviceID(name string, taken map[uint32]bool) (uint32, error) {
	ids, err := ublk.List()
	if err != nil {
		return 0, err
	}
	used := map[uint32]bool{}
	for _, id := range ids {
		used[id] = true
	}
	recs, _ := Records()
	for _, r := range recs {
		if r.Name != name {
			used[r.DeviceID] = true
		}
	}
	for id := uint32(0); id < 1<<20; id++ {
		if !used[id] && !taken[id] {
			return id, nil
		}
	}
	return 0, errors.New("no free ublk device number")
}

// deviceGone reports whether the kernel has no device id.
func deviceGone(id uint32) bool {
	_, err := ublk.Info(id)
	return errors.Is(err, unix.ENODEV)
}

// checkNoDevice refuses to start a new device for an array whose record names a device that
// still exists (its daemon died: the device waits for uraid recover), and drops a record whose
// device and daemon are gone.
func checkNoDevice(name string) error {
	rec, err := ReadRecord(name)
	if errors.Is(err, ErrNoRecord) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.running() && rec.PID != os.Getpid() {
		return fmt.Errorf("array %s is already running (pid %d); stop it first: uraid stop %s", name, rec.PID, name)
	}
	info, err := ublk.Info(rec.DeviceID)
	if errors.Is(err, unix.ENODEV) {
		return removeRecord(name)
	}
	if err != nil {
		return err
	}
	return leftDeviceError(name, &rec, info)
}
