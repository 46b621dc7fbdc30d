package discard

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeIssuer records TRIMs and can hold each one until released, so tests
// decide exactly what is in flight.
type fakeIssuer struct {
	mu       sync.Mutex
	calls    [][2]int64
	starts   []time.Time
	cur, max int

	entered chan [2]int64 // if set, each call announces itself here
	hold    chan struct{} // if set, each call waits for a token or close
	err     error
}

func (f *fakeIssuer) Discard(off, n int64) error {
	f.mu.Lock()
	f.calls = append(f.calls, [2]int64{off, n})
	f.starts = append(f.starts, time.Now())
	f.cur++
	f.max = max(f.max, f.cur)
	f.mu.Unlock()
	if f.entered != nil {
		f.entered <- [2]int64{off, n}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	f.cur--
	f.mu.Unlock()
	return f.err
}

func (f *fakeIssuer) Calls() [][2]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]int64(nil), f.calls...)
}

func newEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// result collects a completion callback.
type result chan error

func (r result) done(err error) { r <- err }

func (r result) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("discard never completed")
		return nil
	}
}

func (r result) pending(t *testing.T) {
	t.Helper()
	select {
	case err := <-r:
		t.Fatalf("discard completed early (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestFanOutIsConcurrent(t *testing.T) {
	// Every member's TRIM must be in flight before any may finish: an
	// engine that served members one after another would never get there.
	const n = 4
	entered := make(chan [2]int64, n)
	hold := make(chan struct{})
	var members []Member
	for range n {
		members = append(members, Member{Issuer: &fakeIssuer{entered: entered, hold: hold}})
	}
	e := newEngine(t, Config{Mode: Sync, Members: members})
	res := make(result, 1)
	var ranges []Range
	for i := range n {
		ranges = append(ranges, Range{Member: i, Off: 0, Len: 1 << 20})
	}
	e.Discard(ranges, res.done)
	for range n {
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatal("members are not trimmed concurrently")
		}
	}
	res.pending(t)
	close(hold)
	require.NoError(t, res.wait(t))
}

func TestSyncAndAsyncAcknowledgement(t *testing.T) {
	boom := errors.New("medium error")
	tests := []struct {
		name     string
		mode     Mode
		err      error
		early    bool // acknowledged while the TRIM is held
		wantErr  error
		onErrors int
	}{
		{"sync waits for the TRIM", Sync, nil, false, nil, 0},
		{"sync reports the member error", Sync, boom, false, boom, 1},
		{"async acknowledges when queued", Async, nil, true, nil, 0},
		{"async member error goes to OnError", Async, boom, true, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hold := make(chan struct{})
			f := &fakeIssuer{hold: hold, err: tt.err}
			var mu sync.Mutex
			var onErr []Range
			e := newEngine(t, Config{Mode: tt.mode, Members: []Member{{Issuer: f}, {Issuer: f}},
				OnError: func(r Range, err error) {
					assert.ErrorIs(t, err, boom)
					mu.Lock()
					onErr = append(onErr, r)
					mu.Unlock()
				}})
			res := make(result, 1)
			e.Discard([]Range{{Member: 1, Off: 4096, Len: 8192}}, res.done)
			if tt.early {
				require.NoError(t, res.wait(t))
			} else {
				res.pending(t)
			}
			close(hold)
			if !tt.early {
				err := res.wait(t)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
					assert.Contains(t, err.Error(), "member 1")
				} else {
					require.NoError(t, err)
				}
			}
			e.Drain()
			mu.Lock()
			assert.Len(t, onErr, tt.onErrors)
			mu.Unlock()
			st := e.Stats()[1]
			assert.Equal(t, uint64(1), st.Completed)
			assert.Equal(t, uint64(tt.onErrors), st.Errors)
		})
	}
}

func TestInFlightLimit(t *testing.T) {
	for _, limit := range []int{1, 3} {
		f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
		e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f, InFlight: limit}}})
		for i := range 10 {
			e.Discard([]Range{{Off: int64(i) * 8192, Len: 4096}}, func(error) {})
		}
		for range limit {
			<-f.entered
		}
		select {
		case r := <-f.entered:
			t.Fatalf("TRIM %v started beyond the limit of %d", r, limit)
		case <-time.After(20 * time.Millisecond):
		}
		assert.Equal(t, limit, e.Stats()[0].InFlight)
		close(f.hold)
		go func() {
			for range f.entered {
			}
		}()
		e.Drain()
		assert.Equal(t, limit, f.max, "TRIMs in flight at once")
		assert.Len(t, f.Calls(), 10)
		require.NoError(t, e.Close())
		close(f.entered)
	}
}

func TestBackpressure(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f, MaxQueued: 2}}})
	for i := range 3 { // one in flight, two queued
		e.Discard([]Range{{Off: int64(i) * 8192, Len: 4096}}, func(error) {})
	}
	<-f.entered
	res := make(result, 1)
	go e.Discard([]Range{{Off: 100 * 8192, Len: 4096}}, res.done)
	res.pending(t)
	f.hold <- struct{}{} // one TRIM done, the next issued: one slot frees
	require.NoError(t, res.wait(t))
	close(f.hold)
	e.Drain()
	assert.Len(t, f.Calls(), 4)
}

func TestWriteCancelsQueuedAndWaitsForInFlight(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f}}})
	e.Discard([]Range{{Off: 0, Len: 4096}}, func(error) {})
	<-f.entered // [0, 4096) in flight
	e.Discard([]Range{{Off: 8192, Len: 3 * 4096}}, func(error) {})

	// A write in the middle of the queued discard splits it.
	require.NoError(t, e.WaitWrite(0, 12288, 4096))
	st := e.Stats()[0]
	assert.Equal(t, int64(4096), st.CancelledBytes)
	assert.Equal(t, 2, st.Queued)

	// A write over the TRIM in flight waits for it.
	wrote := make(chan struct{})
	go func() {
		assert.NoError(t, e.WaitWrite(0, 1024, 512))
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("a write overlapping an in-flight TRIM did not wait")
	case <-time.After(20 * time.Millisecond):
	}
	f.hold <- struct{}{}
	<-wrote
	close(f.hold)
	e.Drain()
	assert.Equal(t, [][2]int64{{0, 4096}, {8192, 4096}, {16384, 4096}}, f.Calls(), "the written range was never trimmed")
}

func TestSyncDiscardSettledByWrite(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f}}})
	first := make(result, 1)
	e.Discard([]Range{{Off: 0, Len: 4096}}, first.done)
	<-f.entered
	res := make(result, 1)
	e.Discard([]Range{{Off: 8192, Len: 8192}}, res.done)
	require.NoError(t, e.WaitWrite(0, 8192, 4096))
	res.pending(t) // half of it is still queued
	require.NoError(t, e.WaitWrite(0, 12288, 4096))
	require.NoError(t, res.wait(t), "a discard wholly overwritten is done without a TRIM")
	first.pending(t)
	close(f.hold)
	require.NoError(t, first.wait(t))
	assert.Equal(t, [][2]int64{{0, 4096}}, f.Calls())
}

func TestReadWaitsForQueuedAndInFlight(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f, YieldToIO: true, MaxDefer: time.Hour}}})
	// I/O in progress holds TRIMs back, yet a read waiting for one lifts
	// the gate: otherwise it would wait for an hour.
	e.StartIO(0)
	e.Discard([]Range{{Off: 0, Len: 4096}}, func(error) {})
	require.NoError(t, e.WaitRead(0, 8192, 4096), "a read elsewhere does not wait")
	read := make(chan struct{})
	go func() {
		assert.NoError(t, e.WaitRead(0, 0, 512))
		close(read)
	}()
	<-f.entered
	select {
	case <-read:
		t.Fatal("a read of a range being trimmed did not wait")
	case <-time.After(20 * time.Millisecond):
	}
	close(f.hold)
	<-read
	e.EndIO(0)
}

func TestYieldToIO(t *testing.T) {
	f := &fakeIssuer{entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f, YieldToIO: true, MaxDefer: 150 * time.Millisecond}}})
	assert.False(t, e.StartIO(0))
	e.Discard([]Range{{Off: 0, Len: 4096}}, func(error) {})
	select {
	case <-f.entered:
		t.Fatal("a TRIM started while I/O was in progress")
	case <-time.After(30 * time.Millisecond):
	}
	e.EndIO(0)
	<-f.entered // I/O ended: it goes now

	// Under constant I/O a TRIM still goes after MaxDefer.
	e.StartIO(0)
	start := time.Now()
	e.Discard([]Range{{Off: 8192, Len: 4096}}, func(error) {})
	<-f.entered
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	e.EndIO(0)
}

func TestBusySteersReads(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f}, {Issuer: &fakeIssuer{}}}})
	assert.False(t, e.Busy(0))
	assert.False(t, e.Pending(0))
	e.Discard([]Range{{Member: 0, Off: 0, Len: 4096}}, func(error) {})
	assert.True(t, e.Pending(0))
	<-f.entered
	assert.True(t, e.Busy(0))
	assert.True(t, e.Pending(0))
	assert.False(t, e.Busy(1))
	assert.False(t, e.Pending(1))
	assert.True(t, e.StartIO(0), "StartIO reports the TRIM in flight")
	e.EndIO(0)
	close(f.hold)
	e.Drain()
	assert.False(t, e.Busy(0))
	assert.False(t, e.Pending(0))
}

func TestMinGapPacesAndCoalesces(t *testing.T) {
	const gap = 200 * time.Millisecond
	f := &fakeIssuer{}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f, MinGap: gap}}})
	e.Discard([]Range{{Off: 0, Len: 4096}}, func(error) {})
	for len(f.Calls()) == 0 {
		time.Sleep(time.Millisecond)
	}
	// Within the gap these pile up and leave as one TRIM.
	for i := 1; i <= 8; i++ {
		e.Discard([]Range{{Off: int64(i) * 4096, Len: 4096}}, func(error) {})
	}
	e.Drain()
	calls := f.Calls()
	assert.Equal(t, [][2]int64{{0, 4096}, {4096, 8 * 4096}}, calls)
	f.mu.Lock()
	assert.GreaterOrEqual(t, f.starts[1].Sub(f.starts[0]), gap)
	f.mu.Unlock()
	assert.Equal(t, uint64(7), e.Stats()[0].Merged)
}

func TestMaxLenCutsTrims(t *testing.T) {
	f := &fakeIssuer{}
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f, MaxLen: 1 << 20}}})
	res := make(result, 1)
	e.Discard([]Range{{Off: 0, Len: 5<<20 + 4096}}, res.done)
	require.NoError(t, res.wait(t))
	var total int64
	for _, c := range f.Calls() {
		assert.LessOrEqual(t, c[1], int64(1<<20))
		total += c[1]
	}
	assert.Equal(t, int64(5<<20+4096), total)
}

func TestClose(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e, err := New(Config{Mode: Sync, Members: []Member{{Issuer: f, MaxQueued: 1}}})
	require.NoError(t, err)
	inflight, queued, blocked := make(result, 1), make(result, 1), make(result, 1)
	e.Discard([]Range{{Off: 0, Len: 4096}}, inflight.done)
	<-f.entered
	e.Discard([]Range{{Off: 8192, Len: 4096}}, queued.done)
	go e.Discard([]Range{{Off: 16384, Len: 4096}}, blocked.done)
	blocked.pending(t)

	closed := make(chan struct{})
	go func() {
		assert.NoError(t, e.Close())
		close(closed)
	}()
	require.ErrorIs(t, queued.wait(t), ErrClosed)
	require.ErrorIs(t, blocked.wait(t), ErrClosed)
	select {
	case <-closed:
		t.Fatal("Close returned with a TRIM in flight")
	case <-time.After(20 * time.Millisecond):
	}
	close(f.hold)
	<-closed
	require.NoError(t, inflight.wait(t), "the TRIM in flight finishes")
	after := make(result, 1)
	e.Discard([]Range{{Off: 0, Len: 4096}}, after.done)
	require.ErrorIs(t, after.wait(t), ErrClosed)
	assert.NoError(t, e.Close(), "Close twice")
}

func TestInvalidInput(t *testing.T) {
	_, err := New(Config{})
	assert.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Members: []Member{{InFlight: -1}}})
	assert.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Mode: 7, Members: []Member{{}}})
	assert.ErrorIs(t, err, ErrConfig)

	f := &fakeIssuer{}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f}, {}}})
	for _, r := range []Range{{Member: 2, Len: 1}, {Member: -1, Len: 1}, {Off: -1, Len: 1}, {Off: 1, Len: -1}, {Off: 1 << 62, Len: 1 << 62}} {
		res := make(result, 1)
		e.Discard([]Range{{Off: 0, Len: 4096}, r}, res.done)
		assert.ErrorIs(t, res.wait(t), ErrRange, "%v", r)
	}
	res := make(result, 1)
	e.Discard([]Range{{Member: 1, Len: 4096}, {Len: 0}}, res.done)
	require.NoError(t, res.wait(t), "a member without an issuer and empty ranges are no-ops")
	assert.ErrorIs(t, e.WaitWrite(5, 0, 1), ErrRange)
	assert.ErrorIs(t, e.WaitRead(-1, 0, 1), ErrRange)
	e.Drain()
	assert.Empty(t, f.Calls(), "nothing of a rejected discard was queued")
}

func TestHotPathAllocations(t *testing.T) {
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: &fakeIssuer{}}, {Issuer: &fakeIssuer{}}}})
	ranges := []Range{{Member: 0, Off: 0, Len: 4096}, {Member: 1, Off: 0, Len: 4096}}
	done := func(error) {}
	// Warm up the queues' slices.
	for range 100 {
		e.Discard(ranges, done)
	}
	e.Drain()
	assert.Zero(t, testing.AllocsPerRun(200, func() {
		e.Discard(ranges, done)
		_ = e.WaitWrite(0, 0, 4096)
		busy := e.StartIO(1)
		_ = busy
		e.EndIO(1)
		_ = e.WaitRead(1, 0, 4096)
	}))

	s := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: &fakeIssuer{}}, {Issuer: &fakeIssuer{}}}})
	var wg sync.WaitGroup
	sdone := func(error) { wg.Done() }
	for range 100 {
		wg.Add(1)
		s.Discard(ranges, sdone)
	}
	wg.Wait()
	allocs := testing.AllocsPerRun(200, func() {
		wg.Add(1)
		s.Discard(ranges, sdone)
		wg.Wait()
	})
	assert.LessOrEqual(t, allocs, 0.1, "the join comes from a pool")
}

func TestStatsJSON(t *testing.T) {
	f := &fakeIssuer{}
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f}}})
	res := make(result, 1)
	e.Discard([]Range{{Off: 0, Len: 4096}, {Off: 4096, Len: 4096}}, res.done)
	require.NoError(t, res.wait(t))
	st := e.Stats()[0]
	assert.Equal(t, uint64(2), st.Requests)
	assert.Equal(t, int64(8192), st.Bytes)
	assert.Equal(t, st.Issued, st.Completed)
	assert.Equal(t, int64(8192), st.IssuedBytes)
	assert.Equal(t, uint64(2), st.Issued+st.Merged, "each piece is a TRIM of its own or merged into one")
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"requests", "bytes", "inflight", "queued", "errors", "merged", "cancelled_bytes", "latency_us"} {
		assert.Contains(t, m, k)
	}
	assert.Contains(t, m["latency_us"], "p99")
}

func TestReadJumpsTheQueue(t *testing.T) {
	f := &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)}
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f}}})
	for i := range 4 {
		e.Discard([]Range{{Off: int64(i) * 8192, Len: 4096}}, func(error) {})
	}
	assert.Equal(t, [2]int64{0, 4096}, <-f.entered)
	read := make(chan struct{})
	go func() {
		assert.NoError(t, e.WaitRead(0, 3*8192, 512))
		close(read)
	}()
	waiting := func() bool {
		m := e.members[0]
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.readers) > 0
	}
	for !waiting() {
		time.Sleep(time.Millisecond)
	}
	f.hold <- struct{}{}
	assert.Equal(t, [2]int64{3 * 8192, 4096}, <-f.entered, "the TRIM a reader waits for goes next")
	f.hold <- struct{}{}
	<-read
	close(f.hold)
	e.Drain()
}

func TestSteer(t *testing.T) {
	held := func() *fakeIssuer { return &fakeIssuer{hold: make(chan struct{}), entered: make(chan [2]int64, 16)} }
	f0, f1, f2 := held(), held(), held()
	e := newEngine(t, Config{Mode: Async, Members: []Member{
		{Issuer: f0, YieldToIO: true},                      // TRIM in flight, stalls reads
		{Issuer: f1, YieldToIO: true, MaxDefer: time.Hour}, // TRIM queued, held back by I/O
		{Issuer: f2},                                     // TRIM in flight, does not stall reads
		{Issuer: &fakeIssuer{}}, {Issuer: &fakeIssuer{}}, // idle
		{Issuer: &fakeIssuer{}, MinGap: 2 * time.Second}, // TRIM queued behind the gap, does not stall reads
	}})
	e.StartIO(1)
	for _, m := range []int{0, 1, 2, 5} {
		e.Discard([]Range{{Member: m, Off: 0, Len: 4096}}, func(error) {})
	}
	<-f0.entered
	<-f2.entered
	e.Discard([]Range{{Member: 5, Off: 1 << 20, Len: 4096}}, func(error) {})
	require.Eventually(t, func() bool { return e.Stall(5) == 1 }, 5*time.Second, time.Millisecond,
		"member 5's second TRIM waits for the gap")
	assert.Equal(t, []int{4, 3, 2, 0, 0, 1, MaxStall}, []int{e.Stall(0), e.Stall(1), e.Stall(2), e.Stall(3), e.Stall(4), e.Stall(5), e.Stall(6)})
	tests := []struct {
		copies []int
		first  int
		want   int
	}{
		{[]int{0, 1}, 0, 1},
		{[]int{0, 1, 2}, 0, 2},
		{[]int{0, 1, 2, 3}, 0, 3},
		{[]int{3, 4}, 0, 3},
		{[]int{3, 4}, 1, 4},
		{[]int{2, 5}, 0, 5}, // queued beats in flight
		{[]int{0, 2}, 0, 2}, // a TRIM that stalls reads is the worst
		{[]int{0}, 0, 0},
		{nil, 0, -1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, e.Steer(tt.copies, tt.first), "Steer(%v, %d)", tt.copies, tt.first)
	}
	copies := []int{0, 1, 2, 3}
	assert.Zero(t, testing.AllocsPerRun(100, func() { e.Steer(copies, 1) }))
	e.EndIO(1)
	close(f0.hold)
	close(f1.hold)
	close(f2.hold)
	e.Drain()
}
