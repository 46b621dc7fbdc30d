package discard

import (
	"fmt"
	"slices"
)

// Queue is the pure planning half of one member's discard queue: what is
// queued, what is in flight, what to issue next and what a write takes away.
// It has no goroutines, no clock and no syscalls, so every rule in it is
// tested exhaustively against a byte-level model.
//
// Each queued piece carries a tag of type T saying who waits for it. The zero
// tag means nobody does (asynchronous discards): untagged pieces that touch
// or overlap are merged as they arrive, so a burst of small adjacent
// discards costs one queue slot. Tagged pieces stay separate because their
// owners must learn exactly which of their bytes were settled; they are
// merged only when issued.
//
// Settling is counted in bytes, not pieces: every queued byte of a tagged
// piece is reported exactly once, either in the Parts of the Issue that
// trims it or in the result of Cancel. An owner that waits for N bytes is
// done when N bytes were reported, however the pieces were split on the way.
//
// A Queue is not safe for concurrent use; the engine guards it with its
// member lock.
type Queue[T comparable] struct {
	maxLen int64 // longest single TRIM, a multiple of gran; longer runs are cut
	gran   int64 // discard granularity: TRIMs start and end on multiples of it

	pending  []piece[T] // sorted by off; tagged pieces may overlap anything
	spill    []piece[T] // scratch for carve, kept to avoid allocating
	inflight []flight   // issued and not finished, in issue order

	pendingBytes int64 // sum of pending piece lengths (overlaps counted twice)
	seq          uint64
	nextID       uint64

	merged    uint64 // pieces absorbed into another at push or issue
	cancelled int64  // queued bytes removed by Cancel (union, not per piece)
}

// piece is a queued range [off, end) with the push order of its oldest
// contributor, which Oldest uses for draining and Pop for fairness.
type piece[T comparable] struct {
	off, end int64
	seq      uint64
	tag      T
}

// flight is an issued TRIM the member has not completed yet.
type flight struct {
	off, end int64
	seq      uint64
	id       uint64
}

// Part reports that Bytes queued bytes of the owner Tag are settled.
type Part[T comparable] struct {
	Tag   T
	Bytes int64
}

// Issue is one TRIM chosen by Pop: Len bytes at Off, at most the queue's
// maximum length, covering only queued bytes. Parts lists the tagged bytes it
// settles once it completes. ID names it to Finish.
type Issue[T comparable] struct {
	Off, Len int64
	Parts    []Part[T]
	ID       uint64
	Merged   int // queued pieces beyond the first that this TRIM covers
	// Seqs are the lowest and highest order numbers the pieces it covers
	// can have: the oldest of them, and the last pushed before it.
	Seqs [2]uint64
}

// NewQueue returns an empty queue whose TRIMs are at most maxLen bytes long
// (maxLen <= 0 means no limit) and keep to a discard granularity of gran
// bytes (gran <= 0 means 1), provided the pushed pieces do: maxLen is
// rounded down to whole granules, at least one.
func NewQueue[T comparable](maxLen, gran int64) *Queue[T] {
	gran = max(gran, 1)
	if maxLen <= 0 {
		maxLen = maxOffset
	}
	maxLen = max(maxLen-maxLen%gran, gran)
	return &Queue[T]{maxLen: maxLen, gran: gran}
}

// Len is the number of queued, not issued, pieces: the unit the engine's
// queue bound counts.
func (q *Queue[T]) Len() int { return len(q.pending) }

// PendingBytes is the sum of the queued pieces' lengths.
func (q *Queue[T]) PendingBytes() int64 { return q.pendingBytes }

// InFlight is the number of issued, unfinished TRIMs.
func (q *Queue[T]) InFlight() int { return len(q.inflight) }

// Merged counts queued pieces that were absorbed into another one, at push
// or when issued.
func (q *Queue[T]) Merged() uint64 { return q.merged }

// Cancelled counts queued bytes that writes removed before they were issued.
func (q *Queue[T]) Cancelled() int64 { return q.cancelled }

// LastSeq is the order number of the most recent PushAt; a drain waits until
// Oldest is past it.
func (q *Queue[T]) LastSeq() uint64 { return q.seq }

// PushAt queues [off, off+n) for tag with order number seq; nothing happens
// for n <= 0. The caller numbers, because queues may share one numbering
// (the engine's members do, so that one number says how far a discard over
// several members has got). seq must be above LastSeq; a lower one is taken
// as LastSeq+1, so order numbers only ever grow.
func (q *Queue[T]) PushAt(off, n int64, tag T, seq uint64) {
	if n <= 0 {
		return
	}
	q.seq = max(seq, q.seq+1)
	p := piece[T]{off: off, end: off + n, seq: q.seq, tag: tag}
	var zero T
	if tag == zero {
		p = q.absorb(p)
	}
	q.insert(p)
}

// absorb removes the untagged pieces that touch or overlap p and returns p
// grown over them. Untagged pieces never touch one another (this is what
// keeps it so), and they are sorted by offset, so the ones touching p form
// one run that a single pass in offset order finds even as p grows.
func (q *Queue[T]) absorb(p piece[T]) piece[T] {
	var zero T
	w := 0
	for _, o := range q.pending {
		if o.tag == zero && o.off <= p.end && o.end >= p.off {
			p.off, p.end = min(p.off, o.off), max(p.end, o.end)
			p.seq = min(p.seq, o.seq)
			q.pendingBytes -= o.end - o.off
			q.merged++
			continue
		}
		q.pending[w] = o
		w++
	}
	clear(q.pending[w:])
	q.pending = q.pending[:w]
	return p
}

// insert adds p keeping pending sorted by offset.
func (q *Queue[T]) insert(p piece[T]) {
	i, _ := slices.BinarySearchFunc(q.pending, p.off, func(o piece[T], off int64) int {
		if o.off <= off {
			return -1 // equal offsets keep push order
		}
		return 1
	})
	q.pending = slices.Insert(q.pending, i, p)
	q.pendingBytes += p.end - p.off
}

// Cancel removes [off, off+n) from every queued piece, because a write is
// about to land there and a TRIM issued after it would destroy it. The
// range is widened to whole granules first: the partial granules a write
// would leave at the edges of a piece could not be trimmed anyway. It
// appends the tagged bytes this settles to parts and returns the number of
// distinct queued bytes removed. In-flight TRIMs are not touched: the write
// must wait for them (see OverlapsInFlight).
func (q *Queue[T]) Cancel(off, n int64, parts []Part[T]) ([]Part[T], int64) {
	if n <= 0 {
		return parts, 0
	}
	lo, hi := off-off%q.gran, off+n
	if r := hi % q.gran; r != 0 && hi <= maxOffset-(q.gran-r) {
		hi += q.gran - r
	}
	parts, bytes, _, _ := q.carve(lo, hi, parts)
	q.cancelled += bytes
	return parts, bytes
}

// carve cuts [lo, hi) out of the queued pieces, keeping what lies outside.
// It returns the tagged bytes removed, the union length removed, how many
// pieces it touched and the oldest seq among them.
//
// Pieces left of hi keep their offsets and so their places; right-hand
// remainders all start at hi, so they go back in as one block at hi's place.
func (q *Queue[T]) carve(lo, hi int64, parts []Part[T]) ([]Part[T], int64, int, uint64) {
	var zero T
	var (
		union   int64
		covered = lo // union so far reaches here
		touched int
		oldest  uint64
	)
	q.spill = q.spill[:0]
	w := 0
	for _, p := range q.pending {
		if p.off >= hi || p.end <= lo {
			q.pending[w] = p
			w++
			continue
		}
		a, b := max(p.off, lo), min(p.end, hi)
		if p.tag != zero {
			parts = addPart(parts, p.tag, b-a)
		}
		// Intersections start in offset order, so the union is one sweep.
		if b > covered {
			union += b - max(a, covered)
			covered = b
		}
		if touched == 0 || p.seq < oldest {
			oldest = p.seq
		}
		touched++
		q.pendingBytes -= b - a
		if p.off < lo {
			left := p
			left.end = lo
			q.pending[w] = left
			w++
		}
		if p.end > hi {
			right := p
			right.off = hi
			q.spill = append(q.spill, right)
		}
	}
	clear(q.pending[w:])
	q.pending = q.pending[:w]
	if len(q.spill) > 0 {
		i, _ := slices.BinarySearchFunc(q.pending, hi, func(o piece[T], off int64) int {
			if o.off < off {
				return -1
			}
			return 1
		})
		q.pending = slices.Insert(q.pending, i, q.spill...)
		clear(q.spill)
	}
	return parts, union, touched, oldest
}

// addPart adds n bytes for tag, folding into the last part when it has the
// same owner (the common case: one request's pieces lie side by side).
func addPart[T comparable](parts []Part[T], tag T, n int64) []Part[T] {
	for i := range parts {
		if parts[i].Tag == tag {
			parts[i].Bytes += n
			return parts
		}
	}
	return append(parts, Part[T]{Tag: tag, Bytes: n})
}

// Pop chooses the next TRIM, records it as in flight and reports it in dst
// (whose Parts are reused). It returns false when nothing is queued.
//
// The oldest queued piece goes first, so no piece starves however busy the
// rest of the member is. Around it, the queued bytes that connect to it
// without a gap are trimmed in the same command, up to the maximum length:
// the window starts where the connected run starts unless that would leave
// the oldest piece's first byte outside it, in which case it starts there.
func (q *Queue[T]) Pop(dst *Issue[T]) bool {
	if len(q.pending) == 0 {
		return false
	}
	oi := 0
	for i, p := range q.pending {
		if p.seq < q.pending[oi].seq {
			oi = i
		}
	}
	q.popAround(oi, q.pending[oi].off, dst)
	return true
}

// PopOverlapping is Pop for a reader waiting on [off, off+n): the TRIM is
// chosen around the oldest queued piece that touches the range, so the
// reader waits for its own bytes rather than for the whole queue. It
// returns false when no queued piece touches the range.
func (q *Queue[T]) PopOverlapping(off, n int64, dst *Issue[T]) bool {
	end := off + n
	oi := -1
	for i, p := range q.pending {
		if p.off >= end {
			break
		}
		if p.end > off && (oi < 0 || p.seq < q.pending[oi].seq) {
			oi = i
		}
	}
	if oi < 0 {
		return false
	}
	q.popAround(oi, max(off, q.pending[oi].off), dst)
	return true
}

// popAround issues the window described at Pop around pending[oi], which
// must include offset focus, a byte of that piece. The window starts on a
// granule boundary when the run does, and maxLen is whole granules, so the
// TRIM keeps to the granularity.
func (q *Queue[T]) popAround(oi int, focus int64, dst *Issue[T]) {
	runStart, runEnd := q.run(oi)
	lo := runStart
	if focus-lo >= q.maxLen {
		lo = max(focus-focus%q.gran, runStart)
	}
	hi := runEnd
	if hi-lo > q.maxLen {
		hi = lo + q.maxLen
	}
	var touched int
	var oldest uint64
	dst.Parts, _, touched, oldest = q.carve(lo, hi, dst.Parts[:0])
	q.merged += uint64(touched - 1)
	q.nextID++
	q.inflight = append(q.inflight, flight{off: lo, end: hi, seq: oldest, id: q.nextID})
	dst.Off, dst.Len, dst.ID, dst.Merged = lo, hi-lo, q.nextID, touched-1
	dst.Seqs = [2]uint64{oldest, q.seq}
}

// run returns the extent of the gap-free union of queued bytes that contains
// pending[i]. Pieces are sorted by offset, so one sweep builds the runs.
func (q *Queue[T]) run(i int) (int64, int64) {
	start, end := q.pending[0].off, q.pending[0].end
	found := i == 0
	for j := 1; j < len(q.pending); j++ {
		p := q.pending[j]
		if p.off > end {
			if found {
				return start, end
			}
			start, end = p.off, p.end
		} else {
			end = max(end, p.end)
		}
		found = found || j == i
	}
	return start, end
}

// Finish forgets the in-flight TRIM id; it reports false for an unknown id.
func (q *Queue[T]) Finish(id uint64) bool {
	i := slices.IndexFunc(q.inflight, func(f flight) bool { return f.id == id })
	if i < 0 {
		return false
	}
	q.inflight = slices.Delete(q.inflight, i, i+1)
	return true
}

// OverlapsInFlight reports whether an issued, unfinished TRIM touches any
// byte of [off, off+n): a write there must wait, since the device may apply
// the TRIM after the write.
func (q *Queue[T]) OverlapsInFlight(off, n int64) bool {
	end := off + n
	for _, f := range q.inflight {
		if f.off < end && f.end > off {
			return true
		}
	}
	return false
}

// Overlaps reports whether a queued or in-flight TRIM touches any byte of
// [off, off+n).
func (q *Queue[T]) Overlaps(off, n int64) bool {
	end := off + n
	for _, p := range q.pending {
		if p.off >= end {
			break
		}
		if p.end > off {
			return true
		}
	}
	return q.OverlapsInFlight(off, n)
}

// Oldest returns the smallest push order still queued or in flight, and
// false when there is none. Merging only lowers a piece's order, so a drain
// that waits until Oldest passes its mark never stops early.
func (q *Queue[T]) Oldest() (uint64, bool) {
	var s uint64
	ok := false
	for _, p := range q.pending {
		if !ok || p.seq < s {
			s, ok = p.seq, true
		}
	}
	for _, f := range q.inflight {
		if !ok || f.seq < s {
			s, ok = f.seq, true
		}
	}
	return s, ok
}

// QueuedSeqs returns the order numbers the bytes of the queued pieces can
// have: from the oldest piece's up to LastSeq (a piece merged into another
// carries the older number), and false when nothing is queued.
func (q *Queue[T]) QueuedSeqs() (lo, hi uint64, ok bool) {
	for _, p := range q.pending {
		if !ok || p.seq < lo {
			lo, ok = p.seq, true
		}
	}
	return lo, q.seq, ok
}

// Drop removes every queued piece, appending the tagged bytes it settles to
// parts; in-flight TRIMs stay until finished.
func (q *Queue[T]) Drop(parts []Part[T]) []Part[T] {
	var zero T
	for _, p := range q.pending {
		if p.tag != zero {
			parts = addPart(parts, p.tag, p.end-p.off)
		}
	}
	clear(q.pending)
	q.pending = q.pending[:0]
	q.pendingBytes = 0
	return parts
}

// check verifies the structural invariants; tests call it after every step.
func (q *Queue[T]) check() error {
	var zero T
	var sum int64
	lastUntagged := int64(-1)
	for i, p := range q.pending {
		if p.off >= p.end {
			return fmt.Errorf("piece %d is empty: [%d, %d)", i, p.off, p.end)
		}
		if i > 0 && p.off < q.pending[i-1].off {
			return fmt.Errorf("pieces %d and %d out of order", i-1, i)
		}
		if p.tag == zero {
			if lastUntagged >= 0 && p.off <= lastUntagged {
				return fmt.Errorf("untagged piece %d touches an earlier one", i)
			}
			lastUntagged = p.end
		}
		sum += p.end - p.off
	}
	if sum != q.pendingBytes {
		return fmt.Errorf("pending bytes %d, pieces sum to %d", q.pendingBytes, sum)
	}
	return nil
}
