package ublk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingDevice is a live Device of one queue that fails as soon as it serves, run without the
// driver: its commands go to /dev/null, where they fail, which no test here waits for. It
// returns the device and the queue's ring descriptor and thread.
func failingDevice(t *testing.T) (d *Device, ringFd, tid int) {
	t.Helper()
	d, err := New(&paramsTarget{Params{Size: 1 << 20}}, Options{Queues: 1, Depth: 4})
	require.NoError(t, err)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { null.Close() })
	q := newQueue(0, 4, d.target, d.params.Size)
	require.NoError(t, q.openBuffers(d.opts.MaxIOBytes, false))
	q.charFd = int32(null.Fd())
	injected := errors.New("queue 0: failure injected")
	q.fault.Store(&injected)
	d.queues, d.live = []*queue{q}, true
	ready := make(chan error, 1)
	q.started = true
	go q.run(ready, d.queueFailed)
	require.NoError(t, <-ready)
	select {
	case <-d.Failed():
	case <-time.After(time.Minute):
		t.Fatal("the queue did not fail")
	}
	require.Equal(t, injected, d.Err())
	return d, q.ring.Fd(), int(q.tid.Load())
}

func isRing(fd int) bool {
	l, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil && l == "anon_inode:[io_uring]"
}

func threadAlive(tid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
	return err == nil
}

// A queue that fails keeps its ring open and its thread until the device lets it go: either
// going would tell the driver the queue's server left alone while the device is live, which a
// 6.12 driver does not always recover from (see park). Abandon then closes it.
func TestFailedQueueKeepsRingAndThread(t *testing.T) {
	d, ringFd, tid := failingDevice(t)
	assert.True(t, isRing(ringFd), "the failed queue's ring is still open")
	assert.True(t, threadAlive(tid), "the failed queue's thread still runs")

	require.ErrorContains(t, d.Abandon(), "failure injected")
	assert.False(t, isRing(ringFd), "Abandon closed the ring")
	// The runtime ends the thread of a locked goroutine that returns, except the process's
	// main thread, which it keeps parked (one run in some hundreds lands there).
	if tid != os.Getpid() {
		require.Eventually(t, func() bool { return !threadAlive(tid) }, time.Minute, time.Millisecond,
			"the thread ends with the queue goroutine")
	}
}

// Settle after a failure answers for the failed queue at once (it holds what it held for good)
// and closes nothing; the queue is closed when the device is abandoned or stopped.
func TestSettleLeavesFailedQueueOpen(t *testing.T) {
	d, ringFd, tid := failingDevice(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, d.Settle(ctx))
	assert.True(t, isRing(ringFd), "Settle closes no ring")
	assert.True(t, threadAlive(tid))

	require.ErrorContains(t, d.Abandon(), "failure injected")
	assert.False(t, isRing(ringFd))
	assert.ErrorIs(t, d.Settle(ctx), ErrStopped)
}
