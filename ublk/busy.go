package ublk

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A block device is "open" when anything would lose its data or its handle if the device went:
// a mounted filesystem, md or dm stacked on it, swap, a loop device over it, or a process with a
// descriptor on it. Drivers with UBLK_F_SAFE_STOP_DEV count openers themselves (TRY_STOP_DEV);
// older ones (6.12) leave the check to the server, which finds the openers in procfs and sysfs and
// holds an exclusive claim on the device while it stops it, so that nothing can mount it in
// between.

// busyError wraps ErrBusy with the openers that were found.
func busyError(path string, who []string) error {
	if len(who) == 0 {
		who = []string{"claimed exclusively by the kernel or another program"}
	}
	return fmt.Errorf("%s %w: %s", path, ErrBusy, strings.Join(who, "; "))
}

// transientWait is how long a stop waits for processes to let go of a device before it refuses:
// udev probes a device (blkid) when a writer closes it, as the unmount of a filesystem does, and
// "umount && uraid stop" must not fail on that.
const transientWait = 2 * time.Second

// claimUnused opens the block device at path exclusively, which fails while it is mounted,
// stacked on, used as swap or claimed by another program, and then checks that no process and no
// loop device has it open either. On success the caller holds the claim: nothing can mount the
// device until it closes the file. On failure the error wraps ErrBusy and names the openers.
// Openers that are only processes get transientWait to go away.
func claimUnused(path string) (*os.File, error) {
	devs, err := blockDevts(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(transientWait)
	for {
		f, who, transient, err := tryClaim(path, devs)
		if err == nil && len(who) == 0 {
			return f, nil
		}
		if err != nil {
			return nil, err
		}
		if !transient || time.Now().After(deadline) {
			return nil, busyError(path, who)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tryClaim is one attempt of claimUnused: the claim, or who holds the device and whether they
// are all processes (which may be about to close it).
func tryClaim(path string, devs []devt) (claim *os.File, who []string, transient bool, err error) {
	// Read-only: closing a descriptor that was never written flushes nothing, so the claim
	// cannot wait on a device whose server is gone.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.EBUSY) {
		// Held exclusively: by a mount, a stacked device, swap or a program's O_EXCL.
		return nil, openers(devs), false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("ublk: claim %s: %w", path, err)
	}
	if who := nonProcessOpeners(devs); len(who) > 0 {
		f.Close()
		return nil, append(who, processOpeners(devs, os.Getpid())...), false, nil
	}
	if who := processOpeners(devs, os.Getpid()); len(who) > 0 {
		f.Close()
		return nil, who, true, nil
	}
	return f, nil, false, nil
}

// Openers names what has the block device at path, or one of its partitions, open: mounts,
// stacked devices, swap, loop devices and processes other than this one. It finds what procfs
// and sysfs show; a kernel user that neither shows is not found.
func Openers(path string) ([]string, error) {
	devs, err := blockDevts(path)
	if err != nil {
		return nil, err
	}
	return openers(devs), nil
}

// devt is a block device number as sysfs writes it, "MAJOR:MINOR".
type devt struct{ major, minor uint32 }

func (d devt) String() string { return fmt.Sprintf("%d:%d", d.major, d.minor) }

// blockDevts returns the device numbers of the block device at path and of its partitions.
func blockDevts(path string) ([]devt, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, fmt.Errorf("ublk: %w", os.NewSyscallError("stat "+path, err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return nil, fmt.Errorf("ublk: %s is not a block device", path)
	}
	disk := devt{unix.Major(st.Rdev), unix.Minor(st.Rdev)}
	devs := []devt{disk}
	dir := "/sys/dev/block/" + disk.String()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "dev"))
		if err != nil {
			continue // not a partition
		}
		if d, ok := parseDevt(strings.TrimSpace(string(b))); ok {
			devs = append(devs, d)
		}
	}
	return devs, nil
}

func parseDevt(s string) (devt, bool) {
	ma, mi, ok := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(ma, 10, 32)
	b, err2 := strconv.ParseUint(mi, 10, 32)
	return devt{uint32(a), uint32(b)}, ok && err1 == nil && err2 == nil
}

// openers looks for every kind of opener of devs that the system shows.
func openers(devs []devt) []string {
	return append(nonProcessOpeners(devs), processOpeners(devs, os.Getpid())...)
}

// nonProcessOpeners finds the openers that stay until an admin acts: mounts, stacked devices,
// swap, loop devices.
func nonProcessOpeners(devs []devt) []string {
	var who []string
	who = append(who, mountOpeners(devs)...)
	who = append(who, holderOpeners(devs)...)
	who = append(who, swapOpeners(devs)...)
	who = append(who, loopOpeners(devs)...)
	return who
}

func mountOpeners(devs []devt) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var who []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt/parent rw ..." : field 3 is the device, 5 the mount point.
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if d, ok := parseDevt(fields[2]); ok && slices.Contains(devs, d) {
			who = append(who, "mounted at "+unescapeMount(fields[4]))
		}
	}
	return who
}

// unescapeMount undoes the octal escapes mountinfo writes for spaces, tabs, newlines and
// backslashes in paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func holderOpeners(devs []devt) []string {
	var who []string
	for _, d := range devs {
		entries, _ := os.ReadDir("/sys/dev/block/" + d.String() + "/holders")
		for _, e := range entries {
			who = append(who, "held by "+e.Name())
		}
	}
	return who
}

func swapOpeners(devs []devt) []string {
	b, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return nil
	}
	var who []string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fields[0], &st) == nil && slices.Contains(devs, devt{unix.Major(st.Rdev), unix.Minor(st.Rdev)}) {
			who = append(who, "used as swap")
		}
	}
	return who
}

// loopOpeners finds loop devices backed by one of devs: the loop driver holds its backing file
// open without showing it as a holder.
func loopOpeners(devs []devt) []string {
	paths, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var who []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(strings.TrimSpace(string(b)), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK &&
			slices.Contains(devs, devt{unix.Major(st.Rdev), unix.Minor(st.Rdev)}) {
			who = append(who, "backing "+filepath.Base(filepath.Dir(filepath.Dir(p))))
		}
	}
	return who
}

// processOpeners finds processes other than self with a descriptor on one of devs.
func processOpeners(devs []devt, self int) []string {
	procs, _ := os.ReadDir("/proc")
	var who []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, fd := range fds {
			var st unix.Stat_t
			if unix.Stat("/proc/"+p.Name()+"/fd/"+fd.Name(), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
				continue
			}
			if slices.Contains(devs, devt{unix.Major(st.Rdev), unix.Minor(st.Rdev)}) {
				who = append(who, fmt.Sprintf("open by %s (pid %d)", processName(pid), pid))
				break
			}
		}
	}
	return who
}

func processName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "a process"
	}
	return strings.TrimSpace(string(b))
}

// stopUnused stops device id (STOP_DEV: the disk goes) only if nothing has it open. The caller's
// queues, if any, must still be serving.
func stopUnused(c *control, id uint32, flags Flags) error {
	path := BlockPath(id)
	claim, err := claimUnused(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENXIO) {
		// The disk is gone already, or going (the kernel removes it on its own when a server
		// without user recovery dies; later kernels then refuse opens with ENXIO): nothing can
		// have it open. STOP_DEV finishes the job.
		return c.stopDev(id)
	}
	if err != nil {
		return err
	}
	if flags.SafeStop() {
		// The kernel counts openers under the disk's open mutex, which closes the window
		// between our look and the stop. Our own claim would count: let it go first.
		claim.Close()
		err := c.tryStopDev(id)
		if errors.Is(err, unix.EBUSY) {
			who, _ := Openers(path)
			return busyError(path, who)
		}
		return err
	}
	// Holding the claim across STOP_DEV keeps anything from mounting the device meanwhile; a
	// plain open in that window is not prevented on this kernel.
	err = c.stopDev(id)
	claim.Close()
	return err
}
