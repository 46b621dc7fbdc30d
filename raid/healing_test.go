package raid

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
)

// TestRefusedFailLeavesStatesAlone: a refused `uraid fail` of the last copy decides on a copy of
// the member states; the live ones, which the queue goroutine serves by, never change. (It
// once stored MemberFailed into the live state to ask the question: a read in that moment found
// no copy, and a map flush marked the map degraded.)
func TestRefusedFailLeavesStatesAlone(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, "")
	t.Cleanup(func() { a.Close() })
	require.NoError(t, a.FailMember(paths[1])) // member 0 now holds the last copy of its chunks
	var stop, changed atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if MemberState(a.state[0].Load()) != MemberActive {
				changed.Store(true)
			}
		}
	}()
	for range 20000 {
		require.ErrorIs(t, a.FailMember(paths[0]), ErrLastCopy)
		if changed.Load() {
			break
		}
	}
	stop.Store(true)
	<-done
	assert.False(t, changed.Load(), "a refused fail changed the live state of the member it refused")
	assert.Equal(t, MemberActive, MemberState(a.state[0].Load()))
}
