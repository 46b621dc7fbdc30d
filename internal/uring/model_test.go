package uring

import (
	"runtime"
	"testing"

	"pgregory.net/rapid"

	"uraid/internal/uapi"
)

// TestRingModel drives rings of random geometry and setup flags with
// random interleavings of queueing, submitting, waiting and reaping NOPs,
// and checks them against a model: every request queued completes exactly
// once, no slot is handed out beyond the SQ's room, and Queued tracks what
// the kernel has not consumed. Small CQs make completions overflow
// routinely, so the overflow flush is exercised on most runs.
func TestRingModel(t *testing.T) {
	overflows, steps := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		sq := uint32(1) << rapid.IntRange(0, 4).Draw(rt, "sqShift")
		cq := sq << rapid.IntRange(0, 2).Draw(rt, "cqShift")
		flags := rapid.SampledFrom([]uint32{
			0,
			uapi.IORING_SETUP_COOP_TASKRUN | uapi.IORING_SETUP_TASKRUN_FLAG,
			uapi.IORING_SETUP_SINGLE_ISSUER | uapi.IORING_SETUP_DEFER_TASKRUN,
			uapi.IORING_SETUP_SINGLE_ISSUER | uapi.IORING_SETUP_DEFER_TASKRUN | uapi.IORING_SETUP_TASKRUN_FLAG,
		}).Draw(rt, "flags")
		sqe128 := rapid.Bool().Draw(rt, "sqe128")

		// SINGLE_ISSUER binds the ring to this thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		opts := []Option{WithCQSize(cq), WithFlags(flags)}
		if sqe128 {
			opts = append(opts, WithSQE128())
		}
		r, err := New(sq, opts...)
		if err != nil {
			rt.Fatalf("New(%d, cq %d, flags %#x): %v", sq, cq, flags, err)
		}
		defer r.Close()

		var (
			next      uint64 // user data of the next request
			queued    uint32 // handed out, not yet submitted
			submitted = map[uint64]bool{}
			reaped    = map[uint64]bool{}
		)
		reap := func(c *uapi.CQE) {
			if c.Res != 0 {
				rt.Fatalf("NOP %d failed: %d", c.UserData, c.Res)
			}
			if !submitted[c.UserData] && c.UserData >= next {
				rt.Fatalf("completion %d for a request never queued", c.UserData)
			}
			if reaped[c.UserData] {
				rt.Fatalf("completion %d seen twice", c.UserData)
			}
			reaped[c.UserData] = true
		}
		submitAll := func() {
			for ud := next - uint64(queued); ud < next; ud++ {
				submitted[ud] = true
			}
			queued = 0
		}

		rt.Repeat(map[string]func(*rapid.T){
			"queue": func(rt *rapid.T) {
				k := rapid.IntRange(1, int(sq)+1).Draw(rt, "k")
				for range k {
					var sqe *uapi.SQE
					if sqe128 && rapid.Bool().Draw(rt, "as128") {
						if s := r.NextSQE128(); s != nil {
							sqe = &s.SQE
						}
					} else {
						sqe = r.NextSQE()
					}
					if sqe == nil {
						if queued < sq {
							rt.Fatalf("NextSQE nil with %d of %d slots queued", queued, sq)
						}
						return
					}
					if queued >= sq {
						rt.Fatalf("slot handed out beyond the SQ's %d entries", sq)
					}
					PrepNop(sqe)
					sqe.UserData = next
					next++
					queued++
				}
			},
			"submit": func(rt *rapid.T) {
				n, err := r.Submit()
				if err != nil {
					rt.Fatalf("Submit: %v", err)
				}
				if uint32(n) != queued {
					rt.Fatalf("Submit consumed %d of %d", n, queued)
				}
				submitAll()
			},
			"submitAndWait": func(rt *rapid.T) {
				outstanding := uint64(len(submitted)) + uint64(queued) - uint64(len(reaped))
				if outstanding == 0 {
					return
				}
				w := rapid.Uint64Range(1, outstanding).Draw(rt, "wait")
				if _, err := r.SubmitAndWait(uint32(w)); err != nil {
					rt.Fatalf("SubmitAndWait(%d): %v", w, err)
				}
				submitAll()
				if ready := r.cqReady(); uint64(ready) < min(w, uint64(cq)) {
					rt.Fatalf("SubmitAndWait(%d) returned with %d ready", w, ready)
				}
			},
			"forEach": func(rt *rapid.T) {
				r.ForEachCQE(reap)
			},
			"peek": func(rt *rapid.T) {
				for range rapid.IntRange(1, 4).Draw(rt, "m") {
					c, ok := r.PeekCQE()
					if !ok {
						return
					}
					reap(c)
					r.CQESeen()
				}
			},
			"": func(rt *rapid.T) {
				steps++
				if r.cqNeedsEnter() {
					overflows++
				}
				if got := r.Queued(); got != queued {
					rt.Fatalf("Queued() = %d, model %d", got, queued)
				}
			},
		})

		// Drain: everything queued must complete exactly once.
		if _, err := r.SubmitAndWait(0); err != nil {
			rt.Fatalf("final submit: %v", err)
		}
		submitAll()
		for len(reaped) < len(submitted) {
			if _, err := r.SubmitAndWait(1); err != nil {
				rt.Fatalf("final wait: %v", err)
			}
			r.ForEachCQE(reap)
		}
		if len(reaped) != int(next) {
			rt.Fatalf("%d requests, %d completions", next, len(reaped))
		}
		if r.Dropped() != 0 {
			rt.Fatalf("kernel dropped %d completions", r.Dropped())
		}
	})
	t.Logf("%d steps, %d with completions parked in the kernel", steps, overflows)
	if !t.Failed() && overflows == 0 {
		t.Error("no run overflowed the CQ: the model no longer exercises the overflow flush")
	}
}
