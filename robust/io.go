package robust

import (
	"slices"
	"time"

	"uraid/array"
	"uraid/ublk"
)

// A request in flight on a tag.
type inflight struct {
	op         ublk.Op
	fua        bool
	first, n   int64 // blocks
	id         uint64
	call       int64
	busy       bool
	crashedOut bool
	aim        *aimAt // the span it was sent into, if any
	cutting    bool   // sent while a power loss waited at a failpoint
}

// io runs n requests (fewer if the disks are cut) at a random queue depth; one time in two (and
// when sweep says so) it begins, as a system's fstrim at boot does, with a sweep of every free
// region.
func (w *world) io(n int, sweep bool) {
	w.fstrim = nil
	if w.rng.IntN(2) == 0 || sweep {
		w.fstrim = slices.Clone(w.free)
	}
	if w.tags == nil {
		w.tags = make([]inflight, w.cfg.Depth)
	}
	tags := w.tags
	qd := 1 + w.rng.IntN(w.cfg.Depth)
	w.serving.Store(true)
	defer w.serving.Store(false)
	for i := 0; i < n && !w.done(); {
		if w.crashedNow() {
			return
		}
		quiet := w.quiet.Load()
		for tag := range tags {
			if w.inflight >= qd || i >= n || quiet {
				break
			}
			if tags[tag].busy {
				continue
			}
			w.startRequest(uint16(tag), &tags[tag])
			i++
		}
		if quiet && w.inflight == 0 {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		w.reap(tags)
	}
	for w.inflight > 0 && !w.crashedNow() {
		w.reap(tags)
	}
}

// start starts a random request on tag.
func (w *world) startRequest(tag uint16, t *inflight) {
	var first int64
	aim := w.aim.Load()
	if aim != nil && w.rng.IntN(3) == 0 {
		aim = nil // not every request: the rest of the workload goes on meanwhile
	}
	switch {
	case aim != nil:
		first = aim.Off/Block + w.rng.Int64N(aim.Len/Block)
	default:
		switch p := w.rng.IntN(100); {
		case p < 65:
			first = w.hot[w.rng.IntN(len(w.hot))]
		case p < 97:
			first = w.blockIn(w.liveRegions)
		default:
			first = w.rng.Int64N(w.blocks.Load()) // free space taken into use
		}
	}
	nb := min(int64(1+w.rng.IntN(8)), w.blocks.Load()-first)
	*t = inflight{first: first, n: nb, busy: true}
	p := w.rng.IntN(100)
	if aim != nil {
		// What races a healing step is mostly a write: 60 writes, 20 discards (half of them of
		// the whole span), 20 reads in a hundred.
		p = []int{0, 85, 10, 30, 50, 55, 60, 65, 70, 75}[w.rng.IntN(10)]
	}
	cutting := w.cutting.Load()
	if cutting {
		p = []int{50, 60, 70, 95}[w.rng.IntN(4)] // writes made durable, and flushes
	}
	if len(w.fstrim) > 0 {
		p = 0
	}
	if w.flushless && p >= 92 || w.readOnly && len(w.fstrim) == 0 {
		p = 10 // a read
	}
	switch {
	case p < 2:
		// A sweep, as fstrim sends: whole regions (the one a held step is about to work on,
		// when there is one), which the region map may then count trimmed.
		t.op = ublk.OpDiscard
		rb := w.regionBytes / Block
		if n := len(w.fstrim); n > 0 {
			t.first, w.fstrim = int64(w.fstrim[n-1])*rb, w.fstrim[:n-1]
			t.n = min(rb, w.blocks.Load()-t.first)
		} else if aim != nil {
			t.first, t.n = aim.Off/Block, aim.Len/Block
		} else {
			regions := w.free
			if w.rng.IntN(4) == 0 {
				regions = w.liveRegions
			}
			t.first = w.blockIn(regions) / rb * rb
			t.n = min(rb*int64(1+w.rng.IntN(2)), w.blocks.Load()-t.first)
		}
		w.stats.Discards++
		w.stats.Sweeps++
	case p < 40:
		t.op = ublk.OpRead
		w.stats.Reads++
	case p < 82:
		t.op = ublk.OpWrite
		t.fua = w.rng.IntN(8) == 0 || cutting && w.rng.IntN(2) == 0
		w.lastID++
		t.id = w.lastID
		buf := w.h.Buf(tag)
		for b := range nb {
			fillBlock(buf[b*Block:(b+1)*Block], t.id, first+b)
		}
		w.stats.Writes++
	case p < 92:
		t.op = ublk.OpDiscard
		w.stats.Discards++
	default:
		t.op = ublk.OpFlush
		t.first, t.n = 0, 0
		w.stats.Flushes++
	}
	w.stats.Requests++
	w.requests.Add(1)
	w.hmu.Lock()
	t.call = w.hist.now()
	w.hmu.Unlock()
	req := ublk.HarnessRequest{Op: t.op, Offset: t.first * Block, Length: t.n * Block, FUA: t.fua}
	if err := w.h.Start(tag, req); err != nil {
		w.fail("start %v: %v", t.op, err)
		t.busy = false
		return
	}
	w.inflight++
	t.aim, t.cutting = aim, cutting
}

// reap waits for one request to finish and records it.
func (w *world) reap(tags []inflight) {
	if w.inflight == 0 {
		return
	}
	tag, res, err := w.h.Wait()
	if err != nil {
		w.fail("harness wait: %v", err)
		w.inflight = 0
		return
	}
	w.inflight--
	t := &tags[tag]
	t.busy = false
	if t.cutting {
		w.cutReaped.Add(1)
	}
	if t.aim != nil {
		t.aim.ended()
	}
	w.finished(tag, t, res)
}

// record adds a finished request to the history.
func (w *world) finished(tag uint16, t *inflight, res int32) {
	w.hmu.Lock()
	ret := w.hist.now()
	unknown := w.crashed && ret > w.crashAt // finished after the cut: its outcome is anyone's guess
	w.hmu.Unlock()
	ok := res >= 0
	// A rule on the disks may have cut them before the harness heard of it: an error the cut
	// explains is no finding. (Asked only for errors: it is a call to the disks' process.)
	if !ok && !unknown && !w.crashedNow() {
		// An error is allowed only when some data has no working copy left.
		if st := w.a.Status("", 0); st.State != array.StateNameFailed {
			w.fail("%v of blocks [%d, +%d) failed (%d) while the array is %s: a working copy of every block exists",
				t.op, t.first, t.n, res, st.State)
		}
	}
	client := int(tag)
	switch t.op {
	case ublk.OpRead:
		if !ok || unknown {
			return
		}
		buf := w.h.Buf(tag)
		w.hmu.Lock()
		for b := range t.n {
			v := valueOf(buf[b*Block:(b+1)*Block], t.first+b)
			w.hist.add(client, blockIn{kind: kRead, block: t.first + b}, v, t.call, ret)
		}
		w.hmu.Unlock()
	case ublk.OpWrite, ublk.OpDiscard:
		// A write or discard that failed or was cut off may or may not have happened.
		kind, maybe := kWrite, kWriteMaybe
		if t.op == ublk.OpDiscard {
			kind, maybe = kDiscard, kDiscardMaybe
		}
		if !ok || unknown {
			kind = maybe
		}
		w.hmu.Lock()
		for b := range t.n {
			w.hist.add(client, blockIn{kind: kind, block: t.first + b, val: t.id, fua: t.fua && kind == kWrite}, 0, t.call, ret)
		}
		w.hmu.Unlock()
	case ublk.OpFlush:
		if ok && !unknown {
			w.hmu.Lock()
			w.hist.addGlobal(client, blockIn{kind: kFlush}, t.call, ret)
			w.hmu.Unlock()
		}
	}
}

// drain waits for the requests in flight, bounded: a request that never finishes is a finding
// (a hang the kernel would show as a stuck process).
func (w *world) drain() {
	if w.inflight == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for w.inflight > 0 {
			w.reap(w.tags)
		}
	}()
	select {
	case <-done:
	case <-time.After(drainLimit):
		w.fail("%d requests never finished (waited %v after the epoch ended)", w.inflight, drainLimit)
		// Whatever waits on the disks fails from here on; what waits in the array stays. The
		// run ends without closing either.
		w.abandoned = true
		w.fs.Abort()
	}
}

// drainLimit turns a hang into a failure; far above any request's time on a busy machine.
const drainLimit = 60 * time.Second
