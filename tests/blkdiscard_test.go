package tests

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/discard"
	"uraid/internal/testutil"
	"uraid/mapping"
)

// doneFunc is a discard.Completer made of a function.
type doneFunc func(error)

func (f doneFunc) Done(err error) { f(err) }

// TestE2EBlockDiscardURing discards ranges of a loop device through a member lane's io_uring
// (BLOCK_URING_CMD_DISCARD), several at once, and checks the backing file lost exactly those
// blocks.
func TestE2EBlockDiscardURing(t *testing.T) {
	needGuest(t)
	members, backing := memberSet(t, "loop", 1, 64<<20)
	f, err := os.OpenFile(members[0], os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	block := []byte(strings.Repeat("x", 1<<20))
	for off := int64(0); off < 64<<20; off += 1 << 20 {
		_, err := f.WriteAt(block, off)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	before := testutil.Allocated(t, backing[0])

	is, err := discard.NewRingIssuer(int(f.Fd()), true, 0, 4)
	require.NoError(t, err)
	e, err := discard.New(discard.Config{Mode: discard.Sync, Members: []discard.Member{{Issuer: is, InFlight: 4}}})
	require.NoError(t, err)
	defer e.Close()
	var wg sync.WaitGroup
	for i := range 8 { // every other MiB of the first 16
		wg.Add(1)
		d := &discard.Discard{Extents: []mapping.Extent{{Offset: int64(2*i) << 20, Length: 1 << 20}}, Done: doneFunc(func(err error) {
			assert.NoError(t, err)
			wg.Done()
		})}
		e.Discard(d)
	}
	wg.Wait()
	assert.True(t, e.Settings(0).Async, "Linux 6.12 has BLOCK_URING_CMD_DISCARD; the issuer fell back to the ioctl")
	after := testutil.Allocated(t, backing[0])
	assert.Equal(t, int64(8<<20), before-after, "the backing file should lose exactly the 8 discarded MiB")

	buf := make([]byte, 1<<20)
	for i := range 4 {
		_, err := f.ReadAt(buf, int64(i)<<20)
		require.NoError(t, err)
		if i%2 == 0 {
			assert.Equal(t, make([]byte, 1<<20), buf, "MiB %d was discarded", i)
		} else {
			assert.Equal(t, block, buf, "MiB %d was not discarded", i)
		}
	}
}
