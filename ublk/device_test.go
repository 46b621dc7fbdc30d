package ublk

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name   string
		params Params
		opts   Options
	}{
		{"bad params", Params{Size: 1000}, Options{}},
		{"depth too large", Params{Size: 1 << 20}, Options{Depth: 4097}},
		{"negative queues", Params{Size: 1 << 20}, Options{Queues: -1}},
		{"buffer not whole pages", Params{Size: 1 << 20}, Options{MaxIOBytes: 6000}},
		{"buffer beyond 32 MiB", Params{Size: 1 << 20}, Options{MaxIOBytes: 64 << 20}},
		{"reissue without recovery", Params{Size: 1 << 20}, Options{ReissueOnRecovery: true}},
		{"id beyond minors", Params{Size: 1 << 20}, Options{FixedID: true, ID: 1 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&paramsTarget{tt.params}, tt.opts)
			assert.Error(t, err)
		})
	}
}

type paramsTarget struct{ p Params }

func (t *paramsTarget) Params() Params   { return t.p }
func (t *paramsTarget) Serve(r *Request) { r.Done(nil) }

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultDepth, o.Depth)
	assert.Equal(t, DefaultMaxIOBytes, o.MaxIOBytes)
	assert.Positive(t, o.Queues)
}

func TestStopBeforeStart(t *testing.T) {
	d, err := New(&paramsTarget{Params{Size: 1 << 20}}, Options{})
	require.NoError(t, err)
	require.NoError(t, d.Stop())
	require.NoError(t, d.Stop())
	assert.ErrorIs(t, d.Start(context.Background()), ErrStopped)
}

// Without the driver, Start fails with a reason and leaves nothing behind.
func TestStartWithoutUblk(t *testing.T) {
	if _, err := os.Stat(controlPath); err == nil {
		t.Skip("this kernel has ublk; the guest tests cover starting")
	}
	d, err := New(&paramsTarget{Params{Size: 1 << 20}}, Options{Queues: 1})
	require.NoError(t, err)
	err = d.Start(context.Background())
	require.ErrorIs(t, err, ErrNoUblk)
	assert.Regexp(t, "modprobe ublk_drv|CONFIG_BLK_DEV_UBLK|devtmpfs", err.Error())
	assert.NoError(t, d.Stop(), "a failed start is already cleaned up")
}

func TestControlOpenError(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{&os.PathError{Op: "open", Path: controlPath, Err: unix.ENOENT}, ErrNoUblk},
		{&os.PathError{Op: "open", Path: controlPath, Err: unix.EPERM}, ErrPermission},
		{&os.PathError{Op: "open", Path: controlPath, Err: unix.EACCES}, ErrPermission},
	}
	for _, tt := range tests {
		err := controlOpenError(tt.err)
		assert.ErrorIs(t, err, tt.want)
		assert.ErrorIs(t, err, tt.err.(*os.PathError).Err, "the errno stays testable")
	}
}

func TestNoDriverNamesTheKernelThatHasIt(t *testing.T) {
	dir := t.TempDir()
	debian12 := dir + "/debian12"
	require.NoError(t, os.WriteFile(debian12, []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n# a comment\n"), 0o644))
	msg := noDriver("6.1", osRelease(debian12))
	assert.Contains(t, msg, "Linux 6.1")
	assert.Contains(t, msg, "CONFIG_BLK_DEV_UBLK")
	assert.Contains(t, msg, "6.12 or later")
	assert.Contains(t, msg, "apt install -t bookworm-backports linux-image-amd64")

	msg = noDriver("6.1", osRelease(dir+"/none"))
	assert.Contains(t, msg, "6.12 or later")
	assert.NotContains(t, msg, "bookworm", "no Debian hint where the system is not Debian 12")
}

func TestContainsModule(t *testing.T) {
	dep := []byte("kernel/drivers/block/loop.ko.xz:\nkernel/drivers/block/ublk_drv.ko.xz:\n")
	assert.True(t, containsModule(dep, "ublk_drv"))
	assert.True(t, containsModule(dep, "loop"))
	assert.False(t, containsModule(dep, "ublk"))
	assert.False(t, containsModule(dep, "nbd"))
}

func TestFailedReportsFirstQueueError(t *testing.T) {
	d, err := New(&paramsTarget{Params{Size: 1 << 20}}, Options{})
	require.NoError(t, err)
	assert.NoError(t, d.Err())
	select {
	case <-d.Failed():
		t.Fatal("Failed closed before any queue failed")
	default:
	}
	first := errors.New("queue 1: io_uring_enter: bad address")
	d.queueFailed(first)
	d.queueFailed(errors.New("queue 0: later"))
	<-d.Failed()
	assert.Equal(t, first, d.Err())
}
