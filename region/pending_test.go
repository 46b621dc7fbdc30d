package region

// Pending is the model test's list of asynchronous discards waiting for
// their tickets, as the array kept them before the discard engine learned to
// say when a discard completes (array's trimDone): the model still drives
// EndTrim that way, late and in any order, as Poll asks the tickets. It is
// bounded: a discard that finds it full is forgotten, which only leaves its
// regions less trimmed than they could be.
type Pending[T any] struct {
	items []pendingTrim[T]
}

type pendingTrim[T any] struct {
	trim   Trim
	ticket T
}

// NewPending returns a Pending for up to capacity discards, allocated up
// front.
func NewPending[T any](capacity int) *Pending[T] {
	return &Pending[T]{items: make([]pendingTrim[T], 0, max(capacity, 1))}
}

// Add keeps t until its ticket says it completed. A Trim that covers no
// region is not kept. It returns false when the list is full and t was
// dropped.
func (p *Pending[T]) Add(t Trim, ticket T) bool {
	if t.id == 0 {
		return true
	}
	if len(p.items) == cap(p.items) {
		return false
	}
	p.items = append(p.items, pendingTrim[T]{t, ticket})
	return true
}

// Len is the number of discards kept.
func (p *Pending[T]) Len() int { return len(p.items) }

// Poll calls done for each kept discard's ticket, and for each that
// completed calls m.EndTrim and forgets it. It returns the number of
// regions that became trimmed.
func (p *Pending[T]) Poll(m *Map, done func(T) bool) int {
	n, w := 0, 0
	for _, it := range p.items {
		if done(it.ticket) {
			n += m.EndTrim(it.trim)
			continue
		}
		p.items[w] = it
		w++
	}
	clear(p.items[w:])
	p.items = p.items[:w]
	return n
}
