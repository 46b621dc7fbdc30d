package ublk

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
	"uraid/internal/uring"
	"uraid/internal/verify"
)

// seen is what a target observed of a request.
type seen struct {
	Op             Op
	Offset, Length int64
	FUA, NoUnmap   bool
	BufLen         int
}

// inlineTarget finishes every request inside Serve with err.
type inlineTarget struct {
	err  error
	last seen
	n    int
}

func (t *inlineTarget) Params() Params { return Params{Size: 1 << 40} }
func (t *inlineTarget) Serve(r *Request) {
	t.n++
	t.last = seen{r.Op, r.Offset, r.Length, r.FUA, r.NoUnmap, len(r.Buf)}
	r.Done(t.err)
}

// asyncTarget hands requests to the test, which completes them from other
// goroutines.
type asyncTarget struct{ reqs chan *Request }

func (t *asyncTarget) Params() Params   { return Params{Size: 1 << 30} }
func (t *asyncTarget) Serve(r *Request) { t.reqs <- r }

func newTestHarness(t *testing.T, target Target, depth, maxIO int) *Harness {
	t.Helper()
	h, err := NewHarness(target, depth, maxIO)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	return h
}

func TestDispatchDecodesRequests(t *testing.T) {
	tests := []struct {
		name    string
		in      HarnessRequest
		want    seen
		wantRes int32
	}{
		{"read", HarnessRequest{Op: OpRead, Offset: 4096, Length: 8192},
			seen{OpRead, 4096, 8192, false, false, 8192}, 8192},
		{"write", HarnessRequest{Op: OpWrite, Offset: 512, Length: 512},
			seen{OpWrite, 512, 512, false, false, 512}, 512},
		{"fua write", HarnessRequest{Op: OpWrite, Offset: 1 << 20, Length: 65536, FUA: true},
			seen{OpWrite, 1 << 20, 65536, true, false, 65536}, 65536},
		{"flush", HarnessRequest{Op: OpFlush},
			seen{OpFlush, 0, 0, false, false, 0}, 0},
		{"flush ignores its stale sector", HarnessRequest{Op: OpFlush, Offset: 1 << 50, Length: 4096},
			seen{OpFlush, 0, 0, false, false, 0}, 0},
		{"discard beyond the buffer size", HarnessRequest{Op: OpDiscard, Offset: 1 << 30, Length: 1 << 31},
			seen{OpDiscard, 1 << 30, 1 << 31, false, false, 0}, 0},
		{"write zeroes", HarnessRequest{Op: OpWriteZeroes, Offset: 0, Length: 1 << 20},
			seen{OpWriteZeroes, 0, 1 << 20, false, false, 0}, 0},
		{"write zeroes nounmap", HarnessRequest{Op: OpWriteZeroes, Offset: 0, Length: 1 << 20, NoUnmap: true},
			seen{OpWriteZeroes, 0, 1 << 20, false, true, 0}, 0},
	}
	target := &inlineTarget{}
	h := newTestHarness(t, target, 4, 64<<10)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := h.Do(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, target.last)
			assert.Equal(t, tt.wantRes, res)
		})
	}
}

func TestDoneMapsErrors(t *testing.T) {
	tests := []struct {
		err  error
		want int32
	}{
		{nil, 4096},
		{unix.ENOSPC, -int32(unix.ENOSPC)},
		{os.NewSyscallError("pwrite", unix.EROFS), -int32(unix.EROFS)},
		{fmt.Errorf("member 2: %w", unix.EOPNOTSUPP), -int32(unix.EOPNOTSUPP)},
		{errors.New("no errno in here"), -int32(unix.EIO)},
	}
	target := &inlineTarget{}
	h := newTestHarness(t, target, 1, 4096)
	for _, tt := range tests {
		target.err = tt.err
		res, err := h.Do(HarnessRequest{Op: OpWrite, Length: 4096})
		require.NoError(t, err)
		assert.Equal(t, tt.want, res, "%v", tt.err)
	}
}

// The kernel keeps requests within the buffer (max_sectors) and the device,
// but the queue does not trust it with memory or targets with offsets.
func TestImpossibleRequestsFailWithoutReachingTarget(t *testing.T) {
	const size = 1 << 40
	tests := []struct {
		name string
		r    HarnessRequest
	}{
		{"read beyond the buffer", HarnessRequest{Op: OpRead, Length: 8192}},
		{"write beyond the buffer", HarnessRequest{Op: OpWrite, Offset: 4096, Length: 1 << 20}},
		{"read past the end", HarnessRequest{Op: OpRead, Offset: size - 512, Length: 1024}},
		{"discard past the end", HarnessRequest{Op: OpDiscard, Offset: size - 4096, Length: 1 << 20}},
		{"start past the end", HarnessRequest{Op: OpWriteZeroes, Offset: size + 512}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := &inlineTarget{}
			h := newTestHarness(t, target, 1, 4096)
			res, err := h.Do(tt.r)
			require.NoError(t, err)
			assert.Equal(t, -int32(unix.EIO), res)
			assert.Zero(t, target.n)
		})
	}
}

// A request the target holds does not keep other tags from completing, and
// a completion from another goroutine wakes the queue out of the kernel.
func TestSlowRequestDoesNotBlockOthers(t *testing.T) {
	target := &asyncTarget{reqs: make(chan *Request, 4)}
	h := newTestHarness(t, target, 4, 4096)

	require.NoError(t, h.Start(0, HarnessRequest{Op: OpRead, Length: 4096}))
	slow := <-target.reqs
	require.NoError(t, h.Start(1, HarnessRequest{Op: OpFlush}))
	fast := <-target.reqs
	assert.Equal(t, uint16(1), fast.Tag)

	// Complete only after Wait is asleep in io_uring_enter.
	go func() {
		time.Sleep(50 * time.Millisecond)
		fast.Done(nil)
	}()
	start := time.Now()
	tag, res, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(1), tag)
	assert.Equal(t, int32(0), res)
	assert.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond, "Wait returned before the completion")

	go slow.Complete(-int32(unix.EIO))
	tag, res, err = h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(0), tag)
	assert.Equal(t, -int32(unix.EIO), res)
}

// Many goroutines completing many tags while the queue keeps restarting
// them: every completion is seen exactly once, none is lost to a missed
// wakeup.
func TestConcurrentCompletionsAreNeverLost(t *testing.T) {
	const depth, rounds = 32, 2000
	target := &asyncTarget{reqs: make(chan *Request, depth)}
	h := newTestHarness(t, target, depth, 4096)
	go func() {
		for r := range target.reqs {
			go r.Complete(int32(r.Tag))
		}
	}()
	defer close(target.reqs)
	started := 0
	for tag := range depth {
		require.NoError(t, h.Start(uint16(tag), HarnessRequest{Op: OpFlush}))
		started++
	}
	for finished := 0; finished < rounds; finished++ {
		tag, res, err := h.Wait()
		require.NoError(t, err)
		require.Equal(t, int32(tag), res)
		if started < rounds {
			require.NoError(t, h.Start(tag, HarnessRequest{Op: OpFlush}))
			started++
		}
	}
}

// fanoutTarget reads each request from two halves of a file on the queue
// ring and completes it when both halves are in.
type fanoutTarget struct {
	fd      int
	pending [8]int
	subs    []uint32
}

func (t *fanoutTarget) Params() Params { return Params{Size: 1 << 20} }
func (t *fanoutTarget) Serve(r *Request) {
	half := len(r.Buf) / 2
	t.pending[r.Tag] = 2
	if err := r.PrepRead(t.fd, r.Buf[:half], r.Offset, 10); err != nil {
		r.Done(err)
		return
	}
	if err := r.PrepRead(t.fd, r.Buf[half:], r.Offset+int64(half), 11); err != nil {
		r.Done(err)
	}
}
func (t *fanoutTarget) Reap(r *Request, sub uint32, res int32) {
	t.subs = append(t.subs, sub)
	if res < 0 {
		r.Complete(res)
		return
	}
	if t.pending[r.Tag]--; t.pending[r.Tag] == 0 {
		r.Done(nil)
	}
}

func TestRingTargetFanOut(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7 / 512)
	}
	path := t.TempDir() + "/backing"
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()

	target := &fanoutTarget{fd: int(f.Fd())}
	h := newTestHarness(t, target, 2, 64<<10)
	res, err := h.Do(HarnessRequest{Op: OpRead, Offset: 12288, Length: 32768})
	require.NoError(t, err)
	assert.Equal(t, int32(32768), res)
	assert.Equal(t, data[12288:12288+32768], h.Buf(0)[:32768])
	assert.ElementsMatch(t, []uint32{10, 11}, target.subs)
}

// twiceTarget completes every request twice, the second time from another
// goroutine, as a buggy target might.
type twiceTarget struct{ second chan *Request }

func (t *twiceTarget) Params() Params { return Params{Size: 1 << 20} }
func (t *twiceTarget) Serve(r *Request) {
	r.Done(nil)
	t.second <- r
}

// In production a second completion of one request is dropped; in verify
// mode (URAID_VERIFY=1) it panics where the bug is.
func TestSecondCompletionIsIgnored(t *testing.T) {
	defer func(on bool) { verify.On = on }(verify.On)
	verify.On = true
	{
		target := &twiceTarget{second: make(chan *Request, 1)}
		h := newTestHarness(t, target, 2, 4096)
		_, err := h.Do(HarnessRequest{Op: OpRead, Length: 4096})
		require.NoError(t, err)
		assert.PanicsWithValue(t, "ublk queue 0 tag 0: request completed twice", func() {
			(<-target.second).Complete(-int32(unix.EIO))
		})
	}
	verify.On = false
	target := &twiceTarget{second: make(chan *Request, 1)}
	h := newTestHarness(t, target, 2, 4096)
	for range 3 {
		res, err := h.Do(HarnessRequest{Op: OpRead, Length: 4096})
		require.NoError(t, err)
		assert.Equal(t, int32(4096), res)
		(<-target.second).Complete(-int32(unix.EIO))
	}
	// Had the late completions been taken, tag 0 would be finished
	// again, or the stack would loop; instead tag 1 is what finishes.
	require.NoError(t, h.Start(1, HarnessRequest{Op: OpRead, Length: 512}))
	tag, res, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(1), tag)
	assert.Equal(t, int32(512), res)
	<-target.second
}

type plainPrepTarget struct{ err error }

func (t *plainPrepTarget) Params() Params { return Params{Size: 1 << 20} }
func (t *plainPrepTarget) Serve(r *Request) {
	t.err = r.PrepFsync(0, true, 0)
	r.Done(nil)
}

func TestPrepWithoutReapIsRefused(t *testing.T) {
	target := &plainPrepTarget{}
	h := newTestHarness(t, target, 1, 4096)
	_, err := h.Do(HarnessRequest{Op: OpFlush})
	require.NoError(t, err)
	assert.ErrorContains(t, target.err, "no Reap method")
}

// The per-request path allocates nothing: decode and dispatch, an inline
// completion, and the commit.
func TestHotPathDoesNotAllocate(t *testing.T) {
	t.Run("harness inline", func(t *testing.T) {
		h := newTestHarness(t, &inlineTarget{}, 4, 4096)
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := h.Do(HarnessRequest{Op: OpWrite, Offset: 4096, Length: 4096, FUA: true}); err != nil {
				panic(err)
			}
		})
		assert.Zero(t, allocs)
	})

	t.Run("completion from another goroutine", func(t *testing.T) {
		target := &asyncTarget{reqs: make(chan *Request, 1)}
		h := newTestHarness(t, target, 4, 4096)
		go func() {
			for r := range target.reqs {
				r.Done(nil)
			}
		}()
		defer close(target.reqs)
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := h.Do(HarnessRequest{Op: OpRead, Length: 4096}); err != nil {
				panic(err)
			}
		})
		assert.Zero(t, allocs)
	})

	t.Run("commit and fetch on a ring", func(t *testing.T) {
		// The commit goes to /dev/null, which fails it; what is
		// measured is the decode, dispatch, completion and SQE path.
		devnull, err := os.Open(os.DevNull)
		require.NoError(t, err)
		defer devnull.Close()
		q := newQueue(0, 4, &inlineTarget{}, 1<<40)
		q.iods = make([]uapi.IODesc, 4)
		require.NoError(t, q.openBuffers(4096, false))
		defer q.close()
		q.charFd = int32(devnull.Fd())
		q.ring, err = uring.New(ringEntries(4))
		require.NoError(t, err)
		defer q.ring.Close()

		q.iods[2] = uapi.IODesc{OpFlags: uapi.UBLK_IO_OP_WRITE, NrSectors: 8, StartSector: 64}
		var cqes int
		allocs := testing.AllocsPerRun(1000, func() {
			q.onIO(2, uapi.UBLK_IO_RES_OK)
			if err := q.commitDone(); err != nil {
				panic(err)
			}
			if _, err := q.ring.SubmitAndWait(1); err != nil {
				panic(err)
			}
			for {
				cqe, ok := q.ring.PeekCQE()
				if !ok {
					break
				}
				if cqe.UserData != udIO|2 {
					panic(fmt.Sprintf("unexpected user_data %#x", cqe.UserData))
				}
				q.ring.AdvanceCQ(1)
				cqes++
			}
		})
		assert.Zero(t, allocs)
		assert.Positive(t, cqes)
		assert.Zero(t, q.serving)
	})
}

func BenchmarkHarnessInline(b *testing.B) {
	h, err := NewHarness(&inlineTarget{}, 4, 4096)
	require.NoError(b, err)
	defer h.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Do(HarnessRequest{Op: OpWrite, Length: 4096}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHarnessCrossGoroutine(b *testing.B) {
	target := &asyncTarget{reqs: make(chan *Request, 1)}
	h, err := NewHarness(target, 4, 4096)
	require.NoError(b, err)
	defer h.Close()
	go func() {
		for r := range target.reqs {
			r.Done(nil)
		}
	}()
	defer close(target.reqs)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Do(HarnessRequest{Op: OpWrite, Length: 4096}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitLoop is the product's path for a full queue of finished requests: decode,
// inline serve, and the commit loop's COMMIT_AND_FETCH SQEs, submitted (to /dev/null, which
// fails them) once per round. Reported per request.
func BenchmarkCommitLoop(b *testing.B) {
	const depth = 64
	devnull, err := os.Open(os.DevNull)
	require.NoError(b, err)
	defer devnull.Close()
	q := newQueue(0, depth, &inlineTarget{}, 1<<40)
	q.iods = make([]uapi.IODesc, depth)
	require.NoError(b, q.openBuffers(4096, false))
	defer q.close()
	q.charFd = int32(devnull.Fd())
	q.ring, err = uring.New(ringEntries(depth))
	require.NoError(b, err)
	defer q.ring.Close()
	for tag := range depth {
		q.iods[tag] = uapi.IODesc{OpFlags: uapi.UBLK_IO_OP_WRITE, NrSectors: 8, StartSector: uint64(tag) * 8}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for tag := range uint16(depth) {
			q.onIO(tag, uapi.UBLK_IO_RES_OK)
		}
		if err := q.commitDone(); err != nil {
			b.Fatal(err)
		}
		if _, err := q.ring.SubmitAndWait(depth); err != nil {
			b.Fatal(err)
		}
		for {
			if _, ok := q.ring.PeekCQE(); !ok {
				break
			}
			q.ring.AdvanceCQ(1)
		}
		n += depth
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/request")
}

// splitTarget reads or writes each request in two pieces split at cut,
// with PrepReadInto and PrepWriteFrom, on a file at the request's offset.
type splitTarget struct {
	fd      int
	cut     int64
	pending [8]int
}

func (t *splitTarget) Params() Params { return Params{Size: 1 << 20} }
func (t *splitTarget) Serve(r *Request) {
	pieces := [][2]int64{{0, min(t.cut, r.Length)}, {t.cut, r.Length - t.cut}}
	t.pending[r.Tag] = 0
	for i, p := range pieces {
		if p[1] <= 0 {
			continue
		}
		var err error
		if r.Op == OpRead {
			err = r.PrepReadInto(t.fd, p[0], p[1], r.Offset+p[0], uint32(i))
		} else {
			err = r.PrepWriteFrom(t.fd, p[0], p[1], r.Offset+p[0], false, uint32(i))
		}
		if err != nil {
			r.Done(err)
			return
		}
		t.pending[r.Tag]++
	}
}
func (t *splitTarget) Reap(r *Request, sub uint32, res int32) {
	if res < 0 {
		r.Complete(res)
		return
	}
	if t.pending[r.Tag]--; t.pending[r.Tag] == 0 {
		r.Done(nil)
	}
}

// In copy mode the head of each tag's buffer is a fixed buffer: member I/O
// that lies in it is fixed I/O, and I/O past it (or straddling its end)
// takes the plain buffer; both move the same bytes.
func TestCopyModeFixedHead(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*13/4096 + i)
	}
	path := t.TempDir() + "/backing"
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()

	target := &splitTarget{fd: int(f.Fd())}
	h := newTestHarness(t, target, 2, 256<<10)
	if os.Geteuid() == 0 {
		require.Equal(t, int64(copyFixedBytes), h.q.copyFixed, "the buffers' heads are registered")
	} else if h.q.copyFixed == 0 {
		t.Log("not root: the memlock limit may refuse the registration; checking the plain path only")
	}
	for _, c := range []struct{ off, n, cut int64 }{
		{4096, 4096, 4096},          // fixed
		{65536, 65536, 65536},       // the whole head, fixed
		{8192, 196608, 32768},       // fixed, then plain past the head
		{131072, 131072, 65536 / 2}, // fixed, then straddling the head's end: plain
	} {
		target.cut = c.cut
		res, err := h.Do(HarnessRequest{Op: OpRead, Offset: c.off, Length: c.n})
		require.NoError(t, err)
		require.Equal(t, int32(c.n), res)
		require.Equal(t, data[c.off:c.off+c.n], h.Buf(0)[:c.n], "read %+v", c)

		want := make([]byte, c.n)
		for i := range want {
			want[i] = byte(i*31 + int(c.off))
		}
		copy(h.Buf(0), want)
		res, err = h.Do(HarnessRequest{Op: OpWrite, Offset: c.off, Length: c.n})
		require.NoError(t, err)
		require.Equal(t, int32(c.n), res)
		got := make([]byte, c.n)
		_, err = f.ReadAt(got, c.off)
		require.NoError(t, err)
		require.Equal(t, want, got, "write %+v", c)
		copy(data[c.off:], want)
	}
}
