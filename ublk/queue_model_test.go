package ublk

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// modelTarget completes a request inside Serve when told to, else parks it
// for the test to complete later from another goroutine.
type modelTarget struct {
	inline bool
	res    int32
	parked chan *Request
}

func (t *modelTarget) Params() Params { return Params{Size: 1 << 30} }
func (t *modelTarget) Serve(r *Request) {
	if t.inline {
		r.Complete(t.res)
		return
	}
	t.parked <- r
}

// Random interleavings of dispatches, inline and cross-goroutine
// completions and waits: every finished request is reported exactly once,
// with its own result, and no tag is reported before it finished.
func TestQueueCompletionModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		depth := rapid.IntRange(1, 16).Draw(rt, "depth")
		target := &modelTarget{parked: make(chan *Request, 1)}
		h, err := NewHarness(target, depth, 4096)
		require.NoError(rt, err)
		defer h.Close()

		free := make([]bool, depth)
		for i := range free {
			free[i] = true
		}
		parked := map[uint16]*Request{} // held by the target
		finished := map[uint16]int32{}  // completed, not yet returned by Wait
		for range rapid.IntRange(1, 100).Draw(rt, "steps") {
			switch rapid.IntRange(0, 2).Draw(rt, "action") {
			case 0: // dispatch on a free tag
				tag := uint16(rapid.IntRange(0, depth-1).Draw(rt, "tag"))
				if !free[tag] {
					continue
				}
				free[tag] = false
				target.inline = rapid.Bool().Draw(rt, "inline")
				target.res = -rapid.Int32Range(0, 200).Draw(rt, "res")
				require.NoError(rt, h.Start(tag, HarnessRequest{Op: OpFlush}))
				if target.inline {
					finished[tag] = target.res
				} else {
					parked[tag] = <-target.parked
				}
			case 1: // the target completes a parked request elsewhere
				for tag, r := range parked {
					res := -rapid.Int32Range(0, 200).Draw(rt, "async res")
					done := make(chan struct{})
					go func() { r.Complete(res); close(done) }()
					<-done
					delete(parked, tag)
					finished[tag] = res
					break
				}
			case 2: // the queue reports what finished
				if len(finished) == 0 {
					continue
				}
				tag, res, err := h.Wait()
				require.NoError(rt, err)
				want, ok := finished[tag]
				require.True(rt, ok, "tag %d reported but not finished", tag)
				require.Equal(rt, want, res)
				delete(finished, tag)
				free[tag] = true
			}
		}
		for range finished {
			tag, res, err := h.Wait()
			require.NoError(rt, err)
			require.Equal(rt, finished[tag], res)
			free[tag] = true
		}
		for _, r := range parked {
			r.Complete(0)
			_, _, err := h.Wait()
			require.NoError(rt, err)
		}
	})
}

// A busy queue goroutine passes through the scheduler once per yieldEvery, never more: each
// pass costs two context switches, and what it buys (the runtime's preemption slice kept fresh,
// so that its monitor leaves the queue's P alone) lasts 10 ms.
func TestQueueYieldsOncePerPeriod(t *testing.T) {
	start := time.Unix(1000, 0)
	now := start
	queueClock = func() time.Time { return now }
	defer func() { queueClock = time.Now }()
	q := newQueue(0, 4, &inlineTarget{}, 1<<20)
	q.yielded = queueClock()
	for _, step := range []struct {
		at   time.Duration
		want int
	}{
		{time.Millisecond, 0},
		{yieldEvery - time.Microsecond, 0},
		{yieldEvery, 1},
		{yieldEvery + time.Millisecond, 1},
		{2*yieldEvery - time.Microsecond, 1},
		{2 * yieldEvery, 2},
		{10 * yieldEvery, 3}, // after a long wait: once, not once per period missed
		{10*yieldEvery + time.Millisecond, 3},
	} {
		now = start.Add(step.at)
		q.maybeYield()
		assert.Equal(t, step.want, q.yields, "at %v", step.at)
	}
}
