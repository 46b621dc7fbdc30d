package tests

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/ublk"
)

// memTarget keeps the device in memory and finishes every request on a
// worker goroutine, so each completion crosses to the queue thread through
// its wakeup: the path a target with its own goroutines takes.
type memTarget struct {
	mu      sync.Mutex
	data    []byte
	reqs    chan *ublk.Request
	flushes int
}

func newMemTarget(size int) *memTarget {
	t := &memTarget{data: make([]byte, size), reqs: make(chan *ublk.Request, 1024)}
	for range 4 {
		go t.work()
	}
	return t
}

func (t *memTarget) Params() ublk.Params {
	return ublk.Params{
		Size: int64(len(t.data)), LogicalBlockSize: 512, PhysicalBlockSize: 4096,
		DiscardGranularity: 4096, MaxWriteZeroesSize: 1 << 30, VolatileCache: true, FUA: true,
	}
}

func (t *memTarget) Serve(r *ublk.Request) { t.reqs <- r }

func (t *memTarget) work() {
	for r := range t.reqs {
		// A little latency so requests overlap and complete out of
		// order.
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		t.mu.Lock()
		switch r.Op {
		case ublk.OpRead:
			copy(r.Buf, t.data[r.Offset:])
		case ublk.OpWrite:
			copy(t.data[r.Offset:], r.Buf)
		case ublk.OpDiscard, ublk.OpWriteZeroes:
			clear(t.data[r.Offset : r.Offset+r.Length])
		case ublk.OpFlush:
			t.flushes++
		}
		t.mu.Unlock()
		r.Done(nil)
	}
}

// The Device API in-process: start, concurrent I/O through several queues
// with completions from other goroutines, kernel's view of the device,
// idempotent stop.
func TestE2EUblkDeviceLifecycle(t *testing.T) {
	needGuest(t)
	feat, err := ublk.KernelFeatures()
	require.NoError(t, err)
	assert.NotZero(t, feat, "GET_FEATURES")

	const size = 64 << 20
	target := newMemTarget(size)
	dev, err := ublk.New(target, ublk.Options{Queues: 2, Depth: 16, MaxIOBytes: 128 << 10})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), slow*10*time.Second)
	defer cancel()
	require.NoError(t, dev.Start(ctx))
	stopped := false
	defer func() {
		if !stopped {
			_ = dev.Stop()
		}
	}()

	info, err := ublk.Info(dev.ID())
	require.NoError(t, err)
	assert.Equal(t, "live", info.State)
	assert.Equal(t, os.Getpid(), info.PID)
	assert.Equal(t, 16, info.Depth)
	assert.LessOrEqual(t, info.Queues, 2)
	sysSize, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev.Path()), "size"))
	require.NoError(t, err)
	assert.Equal(t, itoa(size/512)+"\n", string(sysSize))

	// Writers on disjoint regions, each reading back what it wrote.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.OpenFile(dev.Path(), os.O_RDWR|unix.O_DIRECT, 0)
			if !assert.NoError(t, err) {
				return
			}
			defer f.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			buf, got := alignedBuf(256<<10), alignedBuf(256<<10)
			for i := range 20 {
				n := 4096 * (1 + rng.IntN(64)) // crosses MaxIOBytes: split by the kernel
				off := int64(w)*(size/8) + int64(rng.IntN(64))*65536
				for j := range n {
					buf[j] = byte(w*31 + i + j)
				}
				_, err := f.WriteAt(buf[:n], off)
				if !assert.NoError(t, err) {
					return
				}
				_, err = f.ReadAt(got[:n], off)
				if !assert.NoError(t, err) || !assert.True(t, bytes.Equal(buf[:n], got[:n]), "writer %d round %d", w, i) {
					return
				}
			}
			assert.NoError(t, f.Sync())
		}()
	}
	wg.Wait()
	target.mu.Lock()
	assert.NotZero(t, target.flushes)
	target.mu.Unlock()

	path := dev.Path()
	require.NoError(t, dev.Stop())
	stopped = true
	require.NoError(t, dev.Stop(), "Stop is idempotent")
	require.ErrorIs(t, dev.Start(ctx), ublk.ErrStopped)
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the block device is gone")
	assert.Eventually(t, func() bool {
		_, err := ublk.Info(dev.ID())
		return errors.Is(err, unix.ENODEV)
	}, slow*10*time.Second, 10*time.Millisecond, "the kernel forgets the device")
}

func itoa[T ~int | ~uint32 | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }
