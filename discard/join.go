package discard

import (
	"sync"
	"sync/atomic"
)

// join waits for the bytes of one Sync discard on all its members and calls
// done once, when the last byte is settled. Joins are pooled: the hot path
// does not allocate one per discard.
type join struct {
	left atomic.Int64 // bytes not settled yet; the settle that reaches 0 finishes

	mu  sync.Mutex
	err error // first error; guarded by mu

	done func(error) // set before the join is shared, read by the last settle
}

var joinPool = sync.Pool{New: func() any { return new(join) }}

func newJoin(total int64, done func(error)) *join {
	j := joinPool.Get().(*join)
	j.left.Store(total)
	j.done = done
	return j
}

// settle counts n bytes as done, with err if they failed. The first error
// wins, as for a bio split into several: the filesystem learns that the
// discard failed, not which member failed.
func (j *join) settle(n int64, err error) {
	if err != nil {
		j.mu.Lock()
		if j.err == nil {
			j.err = err
		}
		j.mu.Unlock()
	}
	if j.left.Add(-n) != 0 {
		return
	}
	j.mu.Lock()
	done, err := j.done, j.err
	j.done, j.err = nil, nil
	j.mu.Unlock()
	joinPool.Put(j)
	done(err)
}
