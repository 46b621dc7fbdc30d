package discard

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/clock"
	"uraid/internal/discardtest"
	"uraid/internal/testutil"
	"uraid/mapping"
)

func TestFanOutIsConcurrent(t *testing.T) {
	// Every member's TRIM must be in flight before any may finish: an
	// engine that served members one after another would never get there.
	const n = 4
	drives := make([]*fakeDrive, n)
	var members []Member
	for i := range drives {
		drives[i] = newDrive(nil, true)
		members = append(members, Member{Issuer: drives[i].issuer()})
	}
	e := newEngine(t, Config{Mode: Sync, Members: members})
	var ranges []mapping.Extent
	for i := range n {
		ranges = append(ranges, mapping.Extent{Member: i, Offset: 0, Length: 1 << 20})
	}
	res := discard(e, ranges...)
	for _, d := range drives {
		d.next(t)
	}
	assert.False(t, res.done(), "a sync discard was acknowledged with its TRIMs held")
	for _, d := range drives {
		d.open()
	}
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
			f := newDrive(nil, true)
			f.err = tt.err
			var mu sync.Mutex
			var onErr []mapping.Extent
			e := newEngine(t, Config{Mode: tt.mode, Members: []Member{{Issuer: newDrive(nil, false).issuer()}, {Issuer: f.issuer()}},
				OnError: func(r mapping.Extent, err error) {
					assert.ErrorIs(t, err, boom)
					mu.Lock()
					onErr = append(onErr, r)
					mu.Unlock()
				}})
			res := discard(e, mapping.Extent{Member: 1, Offset: 4096, Length: 8192})
			f.next(t)
			if tt.early {
				require.True(t, res.done(), "an async discard is acknowledged once queued")
				require.NoError(t, res.wait(t))
			} else {
				require.False(t, res.done(), "a sync discard was acknowledged before its TRIM finished")
			}
			f.open()
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
			// Drain waits for the TRIM, not for OnError, which the lane
			// calls after it lets the TRIM go.
			testutil.WaitFor(t, "OnError to be called", func() bool { mu.Lock(); defer mu.Unlock(); return len(onErr) >= tt.onErrors })
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
		f := newDrive(nil, true)
		e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f.issuer(), InFlight: limit}}})
		for i := range 10 {
			require.NoError(t, discard(e, mapping.Extent{Offset: int64(i) * 8192, Length: 4096}).wait(t))
		}
		for range limit {
			f.next(t)
		}
		// The lane has every slot taken: what is left stays queued until a
		// TRIM finishes, whatever the scheduler does meanwhile.
		st := e.Stats()[0]
		assert.Equal(t, limit, st.InFlight)
		assert.Equal(t, 10-limit, st.Queued)
		f.open()
		e.Drain()
		assert.Equal(t, limit, f.max, "TRIMs in flight at once")
		assert.Len(t, f.Calls(), 10)
		require.NoError(t, e.Close())
	}
}

// An async discard never blocks its caller: a member over its bound holds
// the acknowledgement back instead, and lets it go once the member is
// within the bound again.
func TestAsyncBackpressureHoldsTheAcknowledgement(t *testing.T) {
	f := newDrive(nil, true)
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f.issuer(), MaxQueued: 2}}})
	acks := []completer{discard(e, mapping.Extent{Offset: 0, Length: 4096})}
	f.next(t) // in flight: the queue is empty again
	for i := 1; i <= 8; i++ {
		acks = append(acks, discard(e, mapping.Extent{Offset: int64(i) * 8192, Length: 4096}))
	}
	for i, c := range acks {
		assert.Equal(t, i <= 2, c.done(), "discard %d acknowledged: the queue holds 8, at most 2 are within the bound", i)
	}
	// Each finished TRIM issues the next queued one; the queue shrinks
	// from 8 pieces to 2 after six more TRIMs, and only then are the
	// held discards acknowledged, all at once.
	for i := range 6 {
		f.release(t)
		f.next(t)
		for j := 3; j <= 8; j++ {
			require.Equal(t, i == 5, acks[j].done(), "after %d TRIMs, discard %d", i+1, j)
		}
	}
	f.open()
	e.Drain()
	assert.Len(t, f.Calls(), 9)
}

// A write that cuts the queue back within its bound releases held discards.
func TestWriteCancellationReleasesHeldDiscards(t *testing.T) {
	f := newDrive(nil, true)
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f.issuer(), MaxQueued: 1}}})
	discard(e, mapping.Extent{Offset: 0, Length: 4096})
	f.next(t)
	first := discard(e, mapping.Extent{Offset: 8192, Length: 4096})
	second := discard(e, mapping.Extent{Offset: 16384, Length: 4096})
	assert.True(t, first.done())
	assert.False(t, second.done())
	w, wk := newWrite(mapping.Extent{Offset: 16384, Length: 4096})
	write(t, e, w, wk)
	assert.True(t, second.done(), "the write removed the piece that kept the member over its bound")
	f.open()
}

func TestWriteCancelsQueuedAndWaitsForInFlight(t *testing.T) {
	f := newDrive(nil, true)
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f.issuer()}}})
	discard(e, mapping.Extent{Offset: 0, Length: 4096})
	f.next(t) // [0, 4096) in flight
	discard(e, mapping.Extent{Offset: 8192, Length: 3 * 4096})

	// A write in the middle of the queued discard splits it.
	w, wk := newWrite(mapping.Extent{Offset: 12288, Length: 4096})
	require.True(t, e.BeginWrite(w))
	e.EndWrite(w, 0)
	st := e.Stats()[0]
	assert.Equal(t, int64(4096), st.CancelledBytes)
	assert.Equal(t, 2, st.Queued)

	// A write over the TRIM in flight is parked until it finishes.
	w2, wk2 := newWrite(mapping.Extent{Offset: 1024, Length: 512})
	require.False(t, e.BeginWrite(w2), "a write overlapping an in-flight TRIM went ahead")
	assert.False(t, wk2.resumed())
	f.release(t)
	wk2.wait(t)
	require.True(t, e.BeginWrite(w2))
	e.EndWrite(w2, 0)
	f.open()
	e.Drain()
	assert.Equal(t, [][2]int64{{0, 4096}, {8192, 4096}, {16384, 4096}}, f.Calls(), "the written range was never trimmed")
	_ = wk
}

func TestSyncDiscardSettledByWrite(t *testing.T) {
	f := newDrive(nil, true)
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f.issuer()}}})
	first := discard(e, mapping.Extent{Offset: 0, Length: 4096})
	f.next(t)
	res := discard(e, mapping.Extent{Offset: 8192, Length: 8192})
	w, wk := newWrite(mapping.Extent{Offset: 8192, Length: 4096})
	write(t, e, w, wk)
	assert.False(t, res.done(), "half of it is still queued")
	w, wk = newWrite(mapping.Extent{Offset: 12288, Length: 4096})
	write(t, e, w, wk)
	require.True(t, res.done(), "a discard wholly overwritten is done without a TRIM")
	require.NoError(t, res.wait(t))
	assert.False(t, first.done())
	f.open()
	require.NoError(t, first.wait(t))
	assert.Equal(t, [][2]int64{{0, 4096}}, f.Calls())
}

func TestReadWaitsForQueuedAndInFlight(t *testing.T) {
	f := newDrive(nil, true)
	clk := clock.NewManual(time.Unix(0, 0))
	e := newEngine(t, Config{Mode: Async, Clock: clk, Members: []Member{
		{Issuer: discardtest.Blocking(f.trim, clk), YieldToIO: true, MaxDefer: time.Hour},
		{Issuer: newDrive(clk, false).issuer()},
	}})
	// A write in progress holds TRIMs back, yet a read waiting for one
	// lifts the gate: otherwise it would wait for an hour.
	w, _ := newWrite(mapping.Extent{Offset: 1 << 20, Length: 4096})
	require.True(t, e.BeginWrite(w))
	discard(e, mapping.Extent{Offset: 0, Length: 4096})
	other, owk := newRead(mapping.Extent{Offset: 8192, Length: 4096})
	assert.Equal(t, 0, read(t, e, other, owk, 0), "a read elsewhere does not wait")
	e.EndRead(other, 0)
	r, wk := newRead(mapping.Extent{Member: 0, Offset: 0, Length: 512}, mapping.Extent{Member: 1, Offset: 0, Length: 512})
	require.False(t, e.BeginRead(r, 0), "a read of a range with a discard queued on one copy went ahead")
	f.next(t)
	assert.False(t, wk.resumed(), "resumed while the TRIM is still in flight")
	f.release(t)
	wk.wait(t)
	read(t, e, r, wk, 0)
	e.EndRead(r, 0)
	e.EndWrite(w, 0)
	f.open()
}

func TestReadJumpsTheQueue(t *testing.T) {
	f := newDrive(nil, true)
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f.issuer()}}})
	for i := range 4 {
		discard(e, mapping.Extent{Offset: int64(i) * 8192, Length: 4096})
	}
	assert.Equal(t, [2]int64{0, 4096}, f.next(t))
	r, wk := newRead(mapping.Extent{Offset: 3 * 8192, Length: 512})
	require.False(t, e.BeginRead(r, 0))
	f.release(t)
	assert.Equal(t, [2]int64{3 * 8192, 4096}, f.next(t), "the TRIM a reader waits for goes next")
	f.release(t)
	wk.wait(t)
	read(t, e, r, wk, 0)
	e.EndRead(r, 0)
	f.open()
	e.Drain()
}

func TestYieldToIO(t *testing.T) {
	const maxDefer = 150 * time.Millisecond
	clk := clock.NewManual(time.Unix(0, 0))
	f := newDrive(clk, true)
	e := newEngine(t, Config{Mode: Async, Clock: clk, Members: []Member{
		{Issuer: discardtest.Blocking(f.trim, clk), YieldToIO: true, MaxDefer: maxDefer}}})
	r, wk := newRead(mapping.Extent{Offset: 1 << 20, Length: 4096})
	read(t, e, r, wk, 0)
	discard(e, mapping.Extent{Offset: 0, Length: 4096})
	clk.WaitFor(1) // the lane waits for the I/O, at most MaxDefer
	assert.Zero(t, e.Stats()[0].Issued, "a TRIM started while I/O was in progress")
	e.EndRead(r, 0)
	f.next(t) // I/O ended: it goes now
	f.release(t)

	// Under constant I/O a TRIM still goes after MaxDefer, and not before.
	read(t, e, r, wk, 0)
	start := clk.Now()
	discard(e, mapping.Extent{Offset: 8192, Length: 4096})
	clk.WaitFor(1)
	d, _ := clk.Next()
	assert.Equal(t, maxDefer, d)
	clk.Advance(d - time.Nanosecond)
	assert.Equal(t, uint64(1), e.Stats()[0].Issued, "the TRIM went before MaxDefer")
	clk.Advance(time.Nanosecond)
	f.next(t)
	assert.GreaterOrEqual(t, f.starts[1].Sub(start), maxDefer)
	e.EndRead(r, 0)
	f.open()
}

func TestMinGapPacesAndCoalesces(t *testing.T) {
	const gap = 200 * time.Millisecond
	clk := clock.NewManual(time.Unix(0, 0))
	f := newDrive(clk, true)
	e := newEngine(t, Config{Mode: Async, Clock: clk, Members: []Member{{Issuer: discardtest.Blocking(f.trim, clk), MinGap: gap}}})
	discard(e, mapping.Extent{Offset: 0, Length: 4096})
	f.next(t)
	f.release(t)
	// Within the gap these pile up and leave as one TRIM.
	for i := 1; i <= 8; i++ {
		discard(e, mapping.Extent{Offset: int64(i) * 4096, Length: 4096})
	}
	clk.WaitFor(1)
	assert.Equal(t, uint64(1), e.Stats()[0].Issued, "a TRIM went within the gap")
	clk.Advance(gap)
	assert.Equal(t, [2]int64{4096, 8 * 4096}, f.next(t))
	f.open()
	e.Drain()
	f.mu.Lock()
	assert.GreaterOrEqual(t, f.starts[1].Sub(f.starts[0]), gap)
	f.mu.Unlock()
	assert.Equal(t, uint64(7), e.Stats()[0].Merged)
}

// A gap keeps a member to one TRIM at a time whatever its in-flight limit: the gap runs from
// the end of the last TRIM, and a TRIM started beside another would reach a drive that runs one
// at a time back to back with it, paying the very penalty the gap is there to avoid (found by
// bench scenario h: every hand-set --trim-gap ran its TRIMs four at a time).
func TestMinGapKeepsOneInFlight(t *testing.T) {
	const gap = 200 * time.Millisecond
	clk := clock.NewManual(time.Unix(0, 0))
	f := newDrive(clk, true)
	e := newEngine(t, Config{Mode: Async, Clock: clk, Members: []Member{
		{Issuer: discardtest.Blocking(f.trim, clk), MinGap: gap, InFlight: 4}}})
	for i := range 4 {
		discard(e, mapping.Extent{Offset: int64(i) << 20, Length: 4096}) // apart: no merging
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.open() // TRIMs left held would keep Close waiting
		}
	})
	for i := range 4 {
		f.next(t)
		f.release(t)
		if i == 3 {
			break
		}
		// The lane rests out the gap after the TRIM's end, unless it started
		// the next TRIMs beside this one.
		testutil.WaitFor(t, "the lane resting or a TRIM beside the last", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return clk.Waiting() > 0 || len(f.calls) > i+1
		})
		f.mu.Lock()
		n := len(f.calls)
		f.mu.Unlock()
		require.Equal(t, i+1, n, "TRIMs started before the gap after TRIM %d", i+1)
		clk.Advance(gap)
	}
	e.Drain()
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Len(t, f.calls, 4)
	assert.Equal(t, 1, f.max, "TRIMs in flight at once on a member with a gap")
	for i := 1; i < len(f.starts); i++ {
		assert.GreaterOrEqual(t, f.starts[i].Sub(f.starts[i-1]), gap)
	}
}

func TestMaxLenCutsTrims(t *testing.T) {
	f := newDrive(nil, false)
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f.issuer(), MaxLen: 1 << 20}}})
	require.NoError(t, discard(e, mapping.Extent{Offset: 0, Length: 5<<20 + 4096}).wait(t))
	var total int64
	for _, c := range f.Calls() {
		assert.LessOrEqual(t, c[1], int64(1<<20))
		total += c[1]
	}
	assert.Equal(t, int64(5<<20+4096), total)
}

func TestFailDropsQueueAndSteersAway(t *testing.T) {
	f := newDrive(nil, true)
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f.issuer()}, {Issuer: newDrive(nil, false).issuer()}}})
	inflight := discard(e, mapping.Extent{Offset: 0, Length: 4096})
	f.next(t)
	queued := discard(e, mapping.Extent{Offset: 8192, Length: 4096})
	r, wk := newRead(mapping.Extent{Member: 0, Offset: 8192, Length: 512}, mapping.Extent{Member: 1, Offset: 8192, Length: 512})
	require.False(t, e.BeginRead(r, 0))
	e.Fail(0)
	require.NoError(t, queued.wait(t), "a failed member's queued share is moot")
	wk.wait(t)
	assert.Equal(t, 1, read(t, e, r, wk, 0), "reads leave a failed member")
	e.EndRead(r, 0)
	after := discard(e, mapping.Extent{Member: 0, Offset: 16384, Length: 4096})
	require.NoError(t, after.wait(t))
	assert.False(t, inflight.done(), "the TRIM in flight still finishes first")
	f.open()
	require.NoError(t, inflight.wait(t))
	assert.Len(t, f.Calls(), 1, "nothing more was sent to the failed member")
}

// TestTrimFailingAfterFailIsMoot: a TRIM in flight when its member fails, which then errs (the
// member's device was let go meanwhile: its descriptor now refuses every command), does not fail
// its discard: the failed member's contents no longer matter, as for the TRIMs Fail dropped. The
// discard still does not count as trimmed.
func TestTrimFailingAfterFailIsMoot(t *testing.T) {
	f := newDrive(nil, true)
	f.err = errors.New("bad file descriptor")
	w := newWatcher()
	e := newEngine(t, Config{Mode: Sync, OnTrimmed: w.tell, MaxWatched: 8,
		Members: []Member{{Issuer: f.issuer()}, {Issuer: newDrive(nil, false).issuer()}}})
	done := make(completer, 1)
	e.Discard(&Discard{Extents: []mapping.Extent{{Member: 0, Offset: 0, Length: 4096}, {Member: 1, Offset: 0, Length: 4096}}, Done: done, Watch: 7})
	f.next(t)
	e.Fail(0)
	f.open()
	require.NoError(t, done.wait(t), "member 0 was out of service when its TRIM failed")
	assert.False(t, w.wait(t, 7), "a discard with a failed piece is not trimmed")
}

func TestClose(t *testing.T) {
	f := newDrive(nil, true)
	e, err := New(Config{Mode: Sync, Members: []Member{{Issuer: f.issuer(), MaxQueued: 1}}})
	require.NoError(t, err)
	inflight := discard(e, mapping.Extent{Offset: 0, Length: 4096})
	f.next(t)
	queued := discard(e, mapping.Extent{Offset: 8192, Length: 4096})
	w, wk := newWrite(mapping.Extent{Offset: 0, Length: 512})
	require.False(t, e.BeginWrite(w))

	closed := make(chan struct{})
	go func() {
		assert.NoError(t, e.Close())
		close(closed)
	}()
	require.ErrorIs(t, queued.wait(t), ErrClosed)
	wk.wait(t)
	require.True(t, e.BeginWrite(w), "a closing engine admits everything")
	e.EndWrite(w, 0)
	select {
	case <-closed:
		t.Fatal("Close returned with a TRIM in flight")
	default:
	}
	f.open()
	<-closed
	require.NoError(t, inflight.wait(t), "the TRIM in flight finishes")
	require.NoError(t, discard(e, mapping.Extent{Offset: 0, Length: 4096}).wait(t), "a discard after Close is a no-op")
	assert.NoError(t, e.Close(), "Close twice")
}

func TestInvalidInput(t *testing.T) {
	_, err := New(Config{})
	assert.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Members: []Member{{InFlight: -1}}})
	assert.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Mode: 7, Members: []Member{{}}})
	assert.ErrorIs(t, err, ErrConfig)

	f := newDrive(nil, false)
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f.issuer()}, {}}})
	for _, r := range []mapping.Extent{{Member: 2, Length: 1}, {Member: -1, Length: 1}, {Offset: -1, Length: 1}, {Offset: 1, Length: -1}, {Offset: 1 << 62, Length: 1 << 62}} {
		assert.ErrorIs(t, discard(e, mapping.Extent{Offset: 0, Length: 4096}, r).wait(t), ErrRange, "%v", r)
	}
	require.NoError(t, discard(e, mapping.Extent{Member: 1, Length: 4096}, mapping.Extent{Length: 0}).wait(t),
		"a member without an issuer and empty ranges are no-ops")
	e.Drain()
	assert.Empty(t, f.Calls(), "nothing of a rejected discard was queued")
}

func TestHotPathAllocations(t *testing.T) {
	for _, tc := range []struct {
		mode    Mode
		watched bool // with a watcher told of each discard
	}{{Async, false}, {Sync, false}, {Async, true}, {Sync, true}} {
		mode := tc.mode
		cfg := Config{Mode: mode, Members: []Member{{Issuer: newInstant()}, {Issuer: newInstant()}}}
		var told atomic.Int64
		if tc.watched {
			cfg.OnTrimmed = func(uint64, bool) { told.Add(1) }
		}
		e := newEngine(t, cfg)
		c := make(completer, 1)
		d := &Discard{Extents: []mapping.Extent{{Member: 0, Offset: 0, Length: 4096}, {Member: 1, Offset: 0, Length: 4096}}, Done: c}
		if tc.watched {
			d.Watch = 1
		}
		w, ww := newWrite(mapping.Extent{Member: 0, Offset: 0, Length: 4096}, mapping.Extent{Member: 1, Offset: 0, Length: 4096})
		r, rw := newRead(mapping.Extent{Member: 0, Offset: 0, Length: 4096}, mapping.Extent{Member: 1, Offset: 0, Length: 4096})
		op := func() {
			e.Discard(d)
			<-c
			// An async discard is acknowledged before its TRIM ends: the
			// write and the read may park behind it, and each park is
			// resumed once, before the request is admitted again.
			for !e.BeginWrite(w) {
				<-ww
			}
			e.EndWrite(w, 0)
			e.EndWrite(w, 1)
			for !e.BeginRead(r, 1) {
				<-rw
			}
			e.EndRead(r, 0)
		}
		for range 100 { // warm up the queues' slices
			op()
		}
		e.Drain()
		assert.Zero(t, testing.AllocsPerRun(200, op), "%v watched %v", mode, tc.watched)
		if tc.watched {
			e.Drain()
			assert.Equal(t, int64(301), told.Load(), "every watched discard told once")
		}
	}
}

func TestStatsAndSettings(t *testing.T) {
	f := newDrive(nil, false)
	e := newEngine(t, Config{Mode: Sync, Members: []Member{
		{Issuer: f.issuer(), InFlight: 3, YieldToIO: true, MaxLen: 1 << 20, MinGap: time.Millisecond}, {}}})
	require.NoError(t, discard(e, mapping.Extent{Offset: 0, Length: 4096}, mapping.Extent{Offset: 4096, Length: 4096}).wait(t))
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

	assert.Equal(t, MemberSettings{Discards: true, InFlight: 3, Exclusive: true, MaxLen: 1 << 20,
		MinGap: time.Millisecond, MaxDefer: DefaultMaxDefer, Async: true}, e.Settings(0))
	assert.Equal(t, MemberSettings{MaxDefer: DefaultMaxDefer}, e.Settings(1), "a member that cannot discard")
}

// Reads go to the copy whose TRIMs would delay them least, round robin
// among equals, and move off a member whose TRIM started under them.
func TestBeginReadSteers(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	held := func() *fakeDrive { return newDrive(clk, true) }
	f0, f1, f2 := held(), held(), held()
	idle := func() Issuer { return newDrive(clk, false).issuer() }
	e := newEngine(t, Config{Mode: Async, Clock: clk, Members: []Member{
		{Issuer: discardtest.Blocking(f0.trim, clk), YieldToIO: true},                      // TRIM in flight, stalls reads
		{Issuer: discardtest.Blocking(f1.trim, clk), YieldToIO: true, MaxDefer: time.Hour}, // TRIM queued, held back by I/O
		{Issuer: discardtest.Blocking(f2.trim, clk)},                                       // TRIM in flight, does not stall reads
		{Issuer: idle()}, {Issuer: idle()}, // idle
		{Issuer: idle(), MinGap: 2 * time.Second}, // TRIM queued behind the gap, does not stall reads
		{Issuer: idle()}, // failed
	}})
	e.Fail(6)
	w, _ := newWrite(mapping.Extent{Member: 1, Offset: 1 << 30, Length: 4096})
	require.True(t, e.BeginWrite(w))
	for _, m := range []int{0, 1, 2, 5} {
		discard(e, mapping.Extent{Member: m, Offset: 0, Length: 4096})
	}
	f0.next(t)
	f2.next(t)
	testutil.WaitFor(t, "member 5's TRIM done", func() bool { return e.Stats()[5].Completed == 1 })
	discard(e, mapping.Extent{Member: 5, Offset: 1 << 20, Length: 4096})
	clk.WaitFor(2) // member 1 waits for the I/O to end, member 5 for its gap
	got := []int{}
	for m := range 7 {
		got = append(got, e.members[m].stall())
	}
	assert.Equal(t, []int{4, 3, 2, 0, 0, 1, 0}, got)
	tests := []struct {
		copies []int
		turn   uint32
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
		{[]int{6, 3}, 0, 3}, // never a failed member
		{[]int{6}, 0, -1},
	}
	for _, tt := range tests {
		var copies []mapping.Extent
		for _, m := range tt.copies {
			copies = append(copies, mapping.Extent{Member: m, Offset: 1 << 30, Length: 4096})
		}
		r, wk := newRead(copies...)
		for !e.BeginRead(r, tt.turn) {
			wk.wait(t)
		}
		got := -1
		if r.HasPick(0) {
			got = r.Pick(0).Member
		}
		assert.Equal(t, tt.want, got, "copies %v, turn %d", tt.copies, tt.turn)
		e.EndRead(r, 0)
	}
	e.EndWrite(w, 0)
	f0.open()
	f1.open()
	f2.open()
}

// After a failed read, Reread moves to the next working copy and reports
// when none is left.
func TestReread(t *testing.T) {
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: newInstant()}, {Issuer: newInstant()}, {Issuer: newInstant()}}})
	r, wk := newRead(mapping.Extent{Member: 0, Length: 512}, mapping.Extent{Member: 1, Length: 512}, mapping.Extent{Member: 2, Length: 512})
	first := read(t, e, r, wk, 0)
	e.Fail(first)
	require.True(t, e.Reread(r, 0))
	second := r.Pick(0).Member
	assert.NotEqual(t, first, second)
	e.Fail(second)
	require.True(t, e.Reread(r, 0))
	third := r.Pick(0).Member
	assert.NotContains(t, []int{first, second}, third)
	e.Fail(third)
	assert.False(t, e.Reread(r, 0), "no copy left")
	e.EndRead(r, 0) // a piece without a pick ends nothing
	for m := range 3 {
		assert.Zero(t, e.members[m].io.Load(), "member %d gate left open", m)
	}
}

// With no TRIM pending anywhere, a read goes to the copy with fewer reads and
// writes in progress, whatever the turn: a member that runs one command at a
// time is not sent as many reads as its idle mirror.
func TestBeginReadBalancesByQueueDepth(t *testing.T) {
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: newInstant()}, {Issuer: newInstant()}}})
	busy, bwk := newRead(mapping.Extent{Member: 0, Offset: 0, Length: 4096})
	require.Equal(t, 0, read(t, e, busy, bwk, 0))
	for turn := range uint32(4) {
		r, wk := newRead(mapping.Extent{Member: 0, Offset: 8192, Length: 4096}, mapping.Extent{Member: 1, Offset: 8192, Length: 4096})
		assert.Equal(t, 1, read(t, e, r, wk, turn), "turn %d: member 0 has a read in progress", turn)
		e.EndRead(r, 0)
	}
	e.EndRead(busy, 0)
	picks := map[int]int{}
	for turn := range uint32(4) {
		r, wk := newRead(mapping.Extent{Member: 0, Offset: 8192, Length: 4096}, mapping.Extent{Member: 1, Offset: 8192, Length: 4096})
		picks[read(t, e, r, wk, turn)]++
		e.EndRead(r, 0)
	}
	assert.Equal(t, map[int]int{0: 2, 1: 2}, picks, "idle copies take turns")
}

// A watched discard is told trimmed once all its pieces were trimmed, long
// after an async acknowledgement; a failed TRIM makes every discard queued
// before it untrimmed, never the reverse. Each is told once.
func TestTrimmed(t *testing.T) {
	f0, f1 := newDrive(nil, true), newDrive(nil, true)
	w := newWatcher()
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f0.issuer()}, {Issuer: f1.issuer()}}, OnTrimmed: w.tell})
	key := uint64(0)
	watched := func(extents ...mapping.Extent) uint64 {
		key++
		c := make(completer, 1)
		e.Discard(&Discard{Extents: extents, Done: c, Watch: key})
		require.NoError(t, c.wait(t))
		return key
	}
	a := watched(mapping.Extent{Member: 0, Offset: 0, Length: 4096}, mapping.Extent{Member: 1, Offset: 0, Length: 4096})
	assert.False(t, w.heard(a), "acknowledged, not trimmed")
	f0.next(t)
	f1.next(t)
	f0.release(t)
	testutil.WaitFor(t, "member 0's first TRIM done", func() bool { return e.Stats()[0].Completed == 1 })
	assert.False(t, w.heard(a), "trimmed on one member only")
	b := watched(mapping.Extent{Member: 0, Offset: 8192, Length: 4096})
	f1.release(t)
	assert.True(t, w.wait(t, a))
	assert.False(t, w.heard(b), "a later discard is not done because an earlier one is")

	f0.err = errors.New("medium error")
	f0.next(t)
	f0.release(t)
	assert.False(t, w.wait(t, b), "its TRIM failed")
	assert.True(t, w.wait(t, a), "it was trimmed before the failure")
	f0.err = nil
	c := watched(mapping.Extent{Member: 0, Offset: 1 << 20, Length: 4096})
	f0.next(t)
	f0.release(t)
	assert.True(t, w.wait(t, c), "a discard queued after the failure")
	assert.True(t, w.wait(t, watched(mapping.Extent{Member: 1})), "a discard that queued nothing has nothing left to trim")
	f0.open()
	f1.open()
	e.Drain()
	assert.Equal(t, 4, w.count(), "each watched discard is told once")
}

// A watched discard's pieces dropped by Fail or Close are not trimmed, nor
// is a piece a member out of service never took; a TRIM in flight still
// counts; a full list tells at once.
func TestTrimmedDropped(t *testing.T) {
	f0, f1 := newDrive(nil, true), newDrive(nil, true)
	w := newWatcher()
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: f0.issuer()}, {Issuer: f1.issuer()}}, OnTrimmed: w.tell, MaxWatched: 2})
	both := func(off int64) []mapping.Extent {
		return []mapping.Extent{{Member: 0, Offset: off, Length: 4096}, {Member: 1, Offset: off, Length: 4096}}
	}
	w.discard(t, e, 1, both(0)...) // in flight on both
	f0.next(t)
	f1.next(t)
	w.discard(t, e, 2, both(8192)...) // queued behind it
	w.discard(t, e, 3, both(16384)...)
	assert.False(t, w.wait(t, 3), "the list holds two: the third is told at once")
	e.Fail(1)
	assert.False(t, w.wait(t, 2), "its piece on member 1 was dropped")
	assert.False(t, w.heard(1), "in flight: a Fail lets it finish")
	f1.release(t)
	f0.release(t)
	assert.True(t, w.wait(t, 1), "both its TRIMs finished")
	w.discard(t, e, 4, both(32768)...)
	assert.False(t, w.wait(t, 4), "member 1 was out of service: it did not trim its piece")
	f0.open()
	w.discard(t, e, 5, mapping.Extent{Member: 0, Offset: 1 << 20, Length: 4096})
	e.Drain()
	assert.True(t, w.heard(5), "told before Drain returned")
	assert.True(t, w.wait(t, 5))
	assert.Equal(t, 5, w.count())

	f := newDrive(nil, true)
	e = newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: f.issuer()}}, OnTrimmed: w.tell})
	inflight, queued := make(completer, 1), make(completer, 1)
	e.Discard(&Discard{Extents: []mapping.Extent{{Offset: 0, Length: 4096}}, Done: inflight, Watch: 6})
	f.next(t)
	e.Discard(&Discard{Extents: []mapping.Extent{{Offset: 8192, Length: 4096}}, Done: queued, Watch: 7})
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	require.ErrorIs(t, queued.wait(t), ErrClosed)
	f.open()
	require.NoError(t, <-closed)
	require.NoError(t, inflight.wait(t))
	assert.True(t, w.wait(t, 6), "in flight at Close: it finished")
	assert.False(t, w.wait(t, 7), "queued at Close: dropped")
	w.discard(t, e, 8, mapping.Extent{Offset: 16384, Length: 4096})
	assert.False(t, w.wait(t, 8), "after Close nothing is trimmed")
	assert.Equal(t, 8, w.count(), "each watched discard is told once")
}

// Beyond maxFailed intervals the closest are merged: every interval stays
// covered.
func TestFailedTrimsMerge(t *testing.T) {
	e := newEngine(t, Config{Mode: Async, Members: []Member{{Issuer: newInstant()}}})
	var want [][2]uint64
	for i := range uint64(3 * maxFailed) {
		f := [2]uint64{10 * i, 10*i + 3}
		want = append(want, f)
		e.failedTrim(f)
	}
	assert.LessOrEqual(t, len(e.failed), maxFailed)
	for _, f := range want {
		covered := false
		for _, g := range e.failed {
			covered = covered || (g[0] <= f[0] && f[1] <= g[1])
		}
		assert.True(t, covered, "%v lost", f)
	}
	assert.False(t, e.trimmed(trimMark{first: 21, last: 22}), "inside a failed TRIM")
	assert.True(t, e.trimmed(trimMark{first: 30 * maxFailed, last: 30*maxFailed + 1}), "after every failure")
}

// A failed member revived with a new device: its old lane finishes the TRIM
// it had in flight and closes, discards go to the new one, reads come back.
func TestRevive(t *testing.T) {
	old, fresh := newDrive(nil, true), newDrive(nil, false)
	e := newEngine(t, Config{Mode: Sync, Members: []Member{{Issuer: old.issuer()}, {Issuer: newInstant()}}})
	inflight := discard(e, mapping.Extent{Offset: 0, Length: 4096})
	old.next(t)
	require.Error(t, e.Revive(0, Member{Issuer: fresh.issuer()}), "a member in service is not revived")
	e.Fail(0)
	revived := make(chan error, 1)
	go func() { revived <- e.Revive(0, Member{Issuer: fresh.issuer(), InFlight: 2}) }()
	select {
	case err := <-revived:
		t.Fatalf("revived (%v) while the old lane had a TRIM in flight", err)
	default:
	}
	old.open()
	require.NoError(t, <-revived)
	require.NoError(t, inflight.wait(t))
	require.NoError(t, discard(e, mapping.Extent{Offset: 8192, Length: 4096}).wait(t))
	assert.Equal(t, [][2]int64{{8192, 4096}}, fresh.Calls())
	assert.Len(t, old.Calls(), 1)
	assert.Equal(t, 2, e.Settings(0).InFlight)
	r, wk := newRead(mapping.Extent{Member: 0, Offset: 0, Length: 512}, mapping.Extent{Member: 1, Offset: 0, Length: 512})
	picks := map[int]bool{}
	for turn := range uint32(4) {
		picks[read(t, e, r, wk, turn)] = true
		e.EndRead(r, 0)
	}
	assert.True(t, picks[0], "reads go to the revived member again")
}
