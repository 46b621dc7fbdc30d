package filetarget

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil/ublktest"
	"uraid/ublk"
)

// The block-device discard path, driven over a regular file so that it runs
// without root: the asynchronous command is refused (a regular file has no
// uring_cmd), the target probes with BLKDISCARD on its worker goroutine, and
// the worker's answer (ENOTTY: not a block device) comes back from that
// goroutine as the request's result. A probe that fails proves nothing
// about the kernel, so the next discard tries io_uring again (the policy of
// internal/blkdiscard, shared with array members).
func TestBlockDiscardFallsBackToWorker(t *testing.T) {
	tg, h := open(t, backing(t, t.TempDir()))
	tg.block = true

	res := ublktest.Do(t, h, ublk.HarnessRequest{Op: ublk.OpDiscard, Offset: 0, Length: 1 << 20})
	assert.Equal(t, -int32(unix.ENOTTY), res)
	assert.True(t, tg.policy.Async(), "a failed probe keeps the asynchronous command")
	assert.Equal(t, uint64(1), tg.Stats().SlowDiscards)

	res = ublktest.Do(t, h, ublk.HarnessRequest{Op: ublk.OpDiscard, Offset: 1 << 20, Length: 1 << 20})
	assert.Equal(t, -int32(unix.ENOTTY), res)
	assert.Equal(t, uint64(2), tg.Stats().SlowDiscards, "the second discard was refused by io_uring and probed again")
}
