package filetarget

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/testutil"
	"uraid/ublk"
)

// preadTarget serves reads with pread on a worker goroutine and completes
// them from there: the design the queue-ring path is measured against.
type preadTarget struct {
	fd   int
	reqs chan *ublk.Request
}

func (t *preadTarget) Params() ublk.Params   { return ublk.Params{Size: testSize} }
func (t *preadTarget) Serve(r *ublk.Request) { t.reqs <- r }
func (t *preadTarget) work() {
	for r := range t.reqs {
		n, err := unix.Pread(t.fd, r.Buf, r.Offset)
		if err != nil {
			r.Done(err)
			continue
		}
		r.Complete(int32(n))
	}
}

// benchFile makes a filled file on tmpfs when there is one, so that the
// benchmarks measure the request path rather than a disk.
func benchFile(b *testing.B) string {
	dir := testutil.TmpfsDir(b)
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "backing")
	require.NoError(b, os.WriteFile(path, random(testSize, 9), 0o600))
	return path
}

func benchReads(b *testing.B, target ublk.Target) {
	h, err := ublk.NewHarness(target, 8, testMaxIO)
	require.NoError(b, err)
	defer h.Close()
	b.ReportAllocs()
	b.SetBytes(4096)
	for i := 0; b.Loop(); i++ {
		off := int64(i%(testSize/4096)) * 4096
		if res, err := h.Do(ublk.HarnessRequest{Op: ublk.OpRead, Offset: off, Length: 4096}); err != nil || res != 4096 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkRead4KQueueRing: the file target, reads on the queue's ring.
func BenchmarkRead4KQueueRing(b *testing.B) {
	tg, err := Open(benchFile(b), Options{})
	require.NoError(b, err)
	defer tg.Close()
	benchReads(b, tg)
}

// BenchmarkRead4KWorkerGoroutine: pread on another goroutine, completion
// through the queue's eventfd.
func BenchmarkRead4KWorkerGoroutine(b *testing.B) {
	f, err := os.OpenFile(benchFile(b), os.O_RDONLY|unix.O_DIRECT, 0)
	require.NoError(b, err)
	defer f.Close()
	tg := &preadTarget{fd: int(f.Fd()), reqs: make(chan *ublk.Request, 8)}
	go tg.work()
	defer close(tg.reqs)
	benchReads(b, tg)
}
