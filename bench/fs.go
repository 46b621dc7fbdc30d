package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	ublkdiscard "uraid/internal/blkdiscard"
)

const mountPoint = "/tmp/bench-mnt"

// fitrimIoctl is FITRIM, _IOWR('X', 121, struct fstrim_range) from
// <linux/fs.h>, which golang.org/x/sys does not define.
const fitrimIoctl = 0xc0185879

// mkfs makes an ext4 without discarding at mkfs time: the members start
// empty, and the mkfs discard is not what is measured. extra are further
// mkfs.ext4 options.
func mkfs(dev string, extra ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"-q", "-F", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1"}, extra...)
	_, err := run(ctx, "mkfs.ext4", append(args, dev)...)
	return err
}

func mount(dev string, discard bool) error {
	if err := os.MkdirAll(mountPoint, 0o755); err != nil {
		return err
	}
	opt := "nodiscard"
	if discard {
		opt = "discard"
	}
	if err := unix.Mount(dev, mountPoint, "ext4", 0, opt); err != nil {
		return fmt.Errorf("mount %s -o %s: %w", dev, opt, os.NewSyscallError("mount", err))
	}
	return nil
}

func umount() error {
	if err := unix.Unmount(mountPoint, 0); err != nil {
		return fmt.Errorf("umount %s: %w", mountPoint, os.NewSyscallError("umount", err))
	}
	return nil
}

// fitrim runs FITRIM over the whole mounted filesystem, as fstrim does,
// and returns how long it took. ext4 skips block groups it trimmed since
// the mount, so a remount before makes repetitions comparable.
func fitrim() (time.Duration, error) {
	f, err := os.Open(mountPoint)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := struct{ start, len, minlen uint64 }{0, ^uint64(0), 0}
	start := time.Now()
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fitrimIoctl, uintptr(unsafe.Pointer(&r)))
	took := time.Since(start)
	if errno != 0 {
		return 0, fmt.Errorf("fstrim %s: %w", mountPoint, os.NewSyscallError("ioctl FITRIM", errno))
	}
	return took, nil
}

// blkdiscard discards the whole device, as blkdiscard does, and returns how
// long it took.
func blkdiscard(dev string) (time.Duration, error) {
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_EXCL, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		return 0, os.NewSyscallError("ioctl BLKGETSIZE64", err)
	}
	start := time.Now()
	err = ublkdiscard.Ioctl(int(f.Fd()), 0, int64(size))
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("blkdiscard %s: %w", dev, err)
	}
	return took, nil
}

// writeFiles creates n files of size bytes named prefix<i> in dir.
func writeFiles(dir, prefix string, n, size int) error {
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%d", prefix, i)), buf, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func removeFiles(dir, prefix string, n, step int) error {
	for i := 0; i < n; i += step {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%s%d", prefix, i))); err != nil {
			return err
		}
	}
	return nil
}

// fragment fills the filesystem with n files of size bytes and deletes
// every other one, leaving n/2 free extents between live files.
func fragment(name string, n, size int) error {
	dir := filepath.Join(mountPoint, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFiles(dir, "f", n, size); err != nil {
		return err
	}
	unix.Sync()
	if err := removeFiles(dir, "f", n, 2); err != nil {
		return err
	}
	unix.Sync()
	return nil
}
