package discard

import (
	"maps"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Push queues [off, off+n) for tag with the next order number, as a queue
// that numbers on its own would.
func (q *Queue[T]) Push(off, n int64, tag T) { q.PushAt(off, n, tag, q.seq+1) }

// The planner model works on a 64-byte member so that any set of bytes is one
// uint64 and every answer of the queue can be recomputed bit by bit.

func span(off, n int64) uint64 {
	if n >= 64 {
		return ^uint64(0) << off
	}
	return ((uint64(1) << n) - 1) << off
}

// modelPush is one Push as the model remembers it: which of its bytes are
// still queued, for whom, and in what order it came.
type modelPush struct {
	tag  int
	seq  uint64
	left uint64
}

type modelFlight struct {
	id   uint64
	mask uint64
	seq  uint64 // oldest push it settled bytes of
}

type planModel struct {
	q        *Queue[int]
	maxLen   int64
	gran     int64
	pushes   []modelPush
	flights  []modelFlight
	seq      uint64
	tagged   bool // every push so far was tagged
	settled  map[int]int64
	expected map[int]int64
}

func (m *planModel) pendingUnion() uint64 {
	var u uint64
	for _, p := range m.pushes {
		u |= p.left
	}
	return u
}

func (m *planModel) flightUnion() uint64 {
	var u uint64
	for _, f := range m.flights {
		u |= f.mask
	}
	return u
}

// settle removes mask from every push and returns the tagged bytes per tag
// and the oldest push touched.
func (m *planModel) settle(mask uint64) (map[int]int64, uint64) {
	parts := map[int]int64{}
	var oldest uint64
	for i := range m.pushes {
		p := &m.pushes[i]
		hit := p.left & mask
		if hit == 0 {
			continue
		}
		if p.tag != 0 {
			parts[p.tag] += int64(bits.OnesCount64(hit))
		}
		if oldest == 0 || p.seq < oldest {
			oldest = p.seq
		}
		p.left &^= mask
	}
	return parts, oldest
}

func partsMap(parts []Part[int]) map[int]int64 {
	got := map[int]int64{}
	for _, p := range parts {
		got[p.Tag] += p.Bytes
	}
	return got
}

func (m *planModel) checkInvariants(t *rapid.T) {
	if err := m.q.check(); err != nil {
		t.Fatal(err)
	}
	var union uint64
	perTag := map[int]int64{}
	// Plain comparisons in the loop: this runs after every step, and require's caller lookup
	// was half the package's test time.
	for _, p := range m.q.pending {
		if p.off%m.gran != 0 || p.end%m.gran != 0 {
			t.Fatalf("queued piece [%d, %d) off the granularity %d", p.off, p.end, m.gran)
		}
		union |= span(p.off, p.end-p.off)
		if p.tag != 0 {
			perTag[p.tag] += p.end - p.off
		}
	}
	if want := m.pendingUnion(); union != want {
		t.Fatalf("queued bytes %064b differ from the model's %064b", union, want)
	}
	want := map[int]int64{}
	for _, p := range m.pushes {
		if p.tag != 0 && p.left != 0 {
			want[p.tag] += int64(bits.OnesCount64(p.left))
		}
	}
	if !maps.Equal(want, perTag) {
		t.Fatalf("tagged queued bytes %v differ from the model's %v", perTag, want)
	}
	if got := m.q.InFlight(); got != len(m.flights) {
		t.Fatalf("%d pieces in flight, the model has %d", got, len(m.flights))
	}
}

// fast hides rapid.T's Helper from testify, which calls it on every
// assertion: its caller lookup was half of TestQueueModel's time. Failures
// still say where (testify's own trace) and after which steps (rapid's log).
func fast(t *rapid.T) require.TestingT { return noHelper{t} }

type noHelper struct{ t *rapid.T }

func (n noHelper) Errorf(format string, args ...any) { n.t.Errorf(format, args...) }
func (n noHelper) FailNow()                          { n.t.FailNow() }

func TestQueueModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gran := rapid.SampledFrom([]int64{1, 1, 2, 4, 8}).Draw(t, "gran")
		maxLen := rapid.Int64Range(1, 70).Draw(t, "maxLen")
		m := &planModel{q: NewQueue[int](maxLen, gran), maxLen: max(maxLen-maxLen%gran, gran), gran: gran, tagged: true,
			settled: map[int]int64{}, expected: map[int]int64{}}
		var issue Issue[int]
		rng := func(t *rapid.T) (int64, int64) {
			off := rapid.Int64Range(0, 63).Draw(t, "off")
			n := rapid.Int64Range(1, 64-off).Draw(t, "n")
			return off, n
		}
		// Pieces keep to the granularity, as mapping makes them.
		aligned := func(t *rapid.T) (int64, int64) {
			off := rapid.Int64Range(0, 64/gran-1).Draw(t, "granule") * gran
			n := rapid.Int64Range(1, (64-off)/gran).Draw(t, "granules") * gran
			return off, n
		}
		t.Repeat(map[string]func(*rapid.T){
			"push": func(t *rapid.T) {
				off, n := aligned(t)
				tag := rapid.IntRange(0, 4).Draw(t, "tag")
				m.q.Push(off, n, tag)
				m.seq++
				m.tagged = m.tagged && tag != 0
				m.pushes = append(m.pushes, modelPush{tag: tag, seq: m.seq, left: span(off, n)})
				if tag != 0 {
					m.expected[tag] += n
				}
			},
			"pop": func(t *rapid.T) {
				pending := m.pendingUnion()
				var want uint64 // bytes the TRIM must touch
				var ok bool
				if rapid.Bool().Draw(t, "forReader") {
					off, n := rng(t)
					want = span(off, n)
					ok = m.q.PopOverlapping(off, n, &issue)
					require.Equal(fast(t), pending&want != 0, ok)

				} else {
					ok = m.q.Pop(&issue)
					require.Equal(fast(t), pending != 0, ok)
					if m.tagged && ok {
						// Without merged pieces the oldest push is served first.
						oldest := -1
						for i, p := range m.pushes {
							if p.left != 0 && (oldest < 0 || p.seq < m.pushes[oldest].seq) {
								oldest = i
							}
						}
						want = m.pushes[oldest].left & -m.pushes[oldest].left
					}
				}
				if !ok {
					return
				}
				require.Positive(fast(t), issue.Len)
				require.LessOrEqual(fast(t), issue.Len, m.maxLen, "TRIM longer than the limit")
				require.GreaterOrEqual(fast(t), issue.Off, int64(0))
				require.LessOrEqual(fast(t), issue.Off+issue.Len, int64(64))
				require.Zero(fast(t), issue.Off%m.gran, "TRIM start off the granularity")
				require.Zero(fast(t), issue.Len%m.gran, "TRIM length off the granularity")
				w := span(issue.Off, issue.Len)
				require.Equal(fast(t), w, w&pending, "TRIM [%d,+%d) covers bytes nobody asked to discard", issue.Off, issue.Len)
				if want != 0 {
					require.NotZero(fast(t), want&w&pending, "the TRIM skips the piece it was chosen for")
				}
				parts, seq := m.settle(w)
				require.Equal(fast(t), parts, partsMap(issue.Parts))
				for tag, n := range parts {
					m.settled[tag] += n
				}
				m.flights = append(m.flights, modelFlight{id: issue.ID, mask: w, seq: seq})
			},
			"finish": func(t *rapid.T) {
				if len(m.flights) == 0 {
					require.False(fast(t), m.q.Finish(12345))
					return
				}
				i := rapid.IntRange(0, len(m.flights)-1).Draw(t, "flight")
				require.True(fast(t), m.q.Finish(m.flights[i].id))
				m.flights = append(m.flights[:i], m.flights[i+1:]...)
			},
			"cancel": func(t *rapid.T) {
				off, n := rng(t)
				// Whole granules go: a partial one could not be trimmed.
				lo, hi := off/gran*gran, min((off+n+gran-1)/gran*gran, 64)
				c := span(lo, hi-lo)
				union := int64(bits.OnesCount64(m.pendingUnion() & c))
				before := m.q.Cancelled()
				got, bytes := m.q.Cancel(off, n, nil)
				parts, _ := m.settle(c)
				require.Equal(fast(t), union, bytes, "cancelled bytes")
				require.Equal(fast(t), before+union, m.q.Cancelled())
				require.Equal(fast(t), parts, partsMap(got))
				for tag, n := range parts {
					m.settled[tag] += n
				}
			},
			"overlaps": func(t *rapid.T) {
				off, n := rng(t)
				r := span(off, n)
				require.Equal(fast(t), m.flightUnion()&r != 0, m.q.OverlapsInFlight(off, n))
				require.Equal(fast(t), (m.flightUnion()|m.pendingUnion())&r != 0, m.q.Overlaps(off, n))
			},
			"oldest": func(t *rapid.T) {
				var want uint64
				for _, p := range m.pushes {
					if p.left != 0 && (want == 0 || p.seq < want) {
						want = p.seq
					}
				}
				for _, f := range m.flights {
					if want == 0 || f.seq < want {
						want = f.seq
					}
				}
				got, ok := m.q.Oldest()
				require.Equal(fast(t), want != 0, ok)
				if ok {
					require.LessOrEqual(fast(t), got, want, "a drain could stop before an older discard is done")
				}
			},
			"drop": func(t *rapid.T) {
				if rapid.IntRange(0, 9).Draw(t, "rarely") != 0 {
					return
				}
				parts, _ := m.settle(^uint64(0))
				require.Equal(fast(t), parts, partsMap(m.q.Drop(nil)))
				for tag, n := range parts {
					m.settled[tag] += n
				}
			},
			"": func(t *rapid.T) { m.checkInvariants(t) },
		})
		// Everything queued can be issued, and then every tagged byte has
		// been reported exactly once.
		for m.q.Pop(&issue) {
			parts, _ := m.settle(span(issue.Off, issue.Len))
			require.Equal(fast(t), parts, partsMap(issue.Parts))
			for tag, n := range parts {
				m.settled[tag] += n
			}
		}
		require.Equal(fast(t), m.expected, m.settled)
		require.Zero(fast(t), m.q.PendingBytes())
	})
}

func TestQueueCoalesces(t *testing.T) {
	tests := []struct {
		name    string
		maxLen  int64
		pushes  [][3]int64 // off, len, tag
		issues  [][2]int64 // off, len in pop order
		merged  uint64
		pending []int // queue length after all pushes
	}{
		{"adjacent untagged merge at push", 0, [][3]int64{{0, 4, 0}, {4, 4, 0}, {8, 4, 0}}, [][2]int64{{0, 12}}, 2, []int{1}},
		{"overlapping untagged merge", 0, [][3]int64{{0, 6, 0}, {4, 4, 0}}, [][2]int64{{0, 8}}, 1, []int{1}},
		{"gap keeps them apart", 0, [][3]int64{{0, 4, 0}, {5, 4, 0}}, [][2]int64{{0, 4}, {5, 4}}, 0, []int{2}},
		{"tagged merge when issued", 0, [][3]int64{{0, 4, 1}, {4, 4, 2}}, [][2]int64{{0, 8}}, 1, []int{2}},
		{"limit cuts the run", 5, [][3]int64{{0, 4, 0}, {4, 8, 0}}, [][2]int64{{0, 5}, {5, 5}, {10, 2}}, 1, []int{1}},
		{"oldest first", 0, [][3]int64{{20, 4, 1}, {0, 4, 2}}, [][2]int64{{20, 4}, {0, 4}}, 0, []int{2}},
		{"window starts at the oldest when the run is too long", 4, [][3]int64{{10, 2, 1}, {0, 10, 2}}, [][2]int64{{10, 2}, {0, 4}, {4, 4}, {8, 2}}, 0, []int{2}},
		{"remainders merge again when issued", 4, [][3]int64{{0, 8, 1}, {8, 8, 2}, {6, 2, 3}, {12, 2, 0}}, [][2]int64{{0, 4}, {4, 4}, {8, 4}, {12, 4}}, 2, []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue[int](tt.maxLen, 1)
			for _, p := range tt.pushes {
				q.Push(p[0], p[1], int(p[2]))
			}
			assert.Equal(t, tt.pending[0], q.Len())
			var got [][2]int64
			var is Issue[int]
			for q.Pop(&is) {
				got = append(got, [2]int64{is.Off, is.Len})
				require.True(t, q.Finish(is.ID))
			}
			assert.Equal(t, tt.issues, got)
			assert.Equal(t, tt.merged, q.Merged())
		})
	}
}

func TestQueueCancelSplits(t *testing.T) {
	q := NewQueue[int](0, 1)
	q.Push(0, 100, 7)
	parts, n := q.Cancel(40, 20, nil)
	assert.Equal(t, int64(20), n)
	assert.Equal(t, []Part[int]{{Tag: 7, Bytes: 20}}, parts)
	assert.Equal(t, 2, q.Len(), "a write in the middle splits the piece in two")
	assert.False(t, q.Overlaps(40, 20))
	assert.True(t, q.Overlaps(39, 2))
	var is Issue[int]
	require.True(t, q.Pop(&is))
	assert.Equal(t, [2]int64{0, 40}, [2]int64{is.Off, is.Len})
	assert.True(t, q.OverlapsInFlight(0, 1))
	parts, n = q.Cancel(0, 100, nil)
	assert.Equal(t, int64(40), n, "only the queued remainder is cancelled, not the TRIM in flight")
	assert.Equal(t, []Part[int]{{Tag: 7, Bytes: 40}}, parts)
	assert.True(t, q.OverlapsInFlight(0, 1))
	assert.Equal(t, int64(60), q.Cancelled())
}

func BenchmarkQueuePushPop(b *testing.B) {
	q := NewQueue[int](1<<20, 4096)
	var is Issue[int]
	b.ReportAllocs()
	for i := range b.N {
		q.Push(int64(i%64)*8192, 4096, 0)
		if q.Len() > 32 {
			for q.Pop(&is) {
				q.Finish(is.ID)
			}
		}
	}
}

func TestQueueKeepsGranularity(t *testing.T) {
	q := NewQueue[int](10000, 4096) // the limit rounds down to 8192
	q.Push(0, 8*4096, 1)
	parts, n := q.Cancel(5000, 100, nil)
	assert.Equal(t, int64(4096), n, "the whole granule the write touches goes")
	assert.Equal(t, []Part[int]{{Tag: 1, Bytes: 4096}}, parts)
	var got [][2]int64
	var is Issue[int]
	for q.Pop(&is) {
		got = append(got, [2]int64{is.Off, is.Len})
	}
	assert.Equal(t, [][2]int64{{0, 4096}, {8192, 8192}, {16384, 8192}, {24576, 8192}}, got)
}
