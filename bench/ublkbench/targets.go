package ublkbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"uraid/ublk"
	"uraid/ublk/filetarget"
)

// attached is a block device serving the backing file until detach.
type attached struct {
	path   string
	detach func() error
	// failed is closed if the server stops on its own; nil for loop.
	failed <-chan struct{}
}

// attachUblk serves file with the file target in this process, so that a
// CPU profile of this process is a profile of the server.
func attachUblk(ctx context.Context, file string, opts ublk.Options) (attached, error) {
	tg, err := filetarget.Open(file, filetarget.Options{})
	if err != nil {
		return attached{}, err
	}
	if !tg.Direct() {
		tg.Close()
		return attached{}, fmt.Errorf("file target opened %s without O_DIRECT: the comparison with a direct-I/O loop device would be unfair (put the file on a filesystem with O_DIRECT)", file)
	}
	dev, err := ublk.New(tg, opts)
	if err != nil {
		tg.Close()
		return attached{}, fmt.Errorf("ublk: %w (is ublk_drv loaded? try: modprobe ublk_drv)", err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := dev.Start(sctx); err != nil {
		return attached{}, errors.Join(fmt.Errorf("ublk start: %w", err), dev.Stop(), tg.Close())
	}
	return attached{
		path:   dev.Path(),
		failed: dev.Failed(),
		detach: func() error { return errors.Join(dev.Stop(), tg.Close()) },
	}, nil
}

// attachLoop makes a loop device over file with direct I/O and reports
// whether the kernel really uses it: loop silently falls back to buffered
// I/O when the backing filesystem cannot do direct I/O at the loop's
// block size.
func attachLoop(ctx context.Context, file string) (attached, bool, error) {
	out, err := exec.CommandContext(ctx, "losetup", "--find", "--show", "--direct-io=on", file).CombinedOutput()
	if err != nil {
		return attached{}, false, fmt.Errorf("losetup: %w: %s (is loop loaded? try: modprobe loop)", err, strings.TrimSpace(string(out)))
	}
	dev := strings.TrimSpace(string(out))
	detach := func() error {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			return fmt.Errorf("losetup -d %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	dio, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop/dio"))
	if err != nil {
		return attached{}, false, errors.Join(fmt.Errorf("loop direct I/O state: %w", err), detach())
	}
	return attached{path: dev, detach: detach}, strings.TrimSpace(string(dio)) == "1", nil
}
