package daemon

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/ublk"
)

// The status carries each queue's counts as the device reports them, and the runtime's counters,
// which only grow: a benchmark divides their differences by the requests in between.
func TestCostInStatus(t *testing.T) {
	c := costOf([]ublk.QueueCounts{{Queue: 0, TID: 7, Enters: 42}, {Queue: 1, TID: 9, Enters: 5}})
	assert.Equal(t, []QueueCost{{Queue: 0, TID: 7, IOUringEnters: 42}, {Queue: 1, TID: 9, IOUringEnters: 5}}, c.Queues)
	assert.Equal(t, runtime.GOMAXPROCS(0), c.Runtime.GOMAXPROCS)
	assert.NotZero(t, c.Runtime.Goroutines)

	// Goroutines that wait to run and a collection move the counters on.
	done := make(chan struct{})
	for range 64 {
		go func() { done <- struct{}{} }()
	}
	for range 64 {
		<-done
	}
	runtime.GC()
	later := readRuntimeCost()
	assert.Greater(t, later.SchedLatencyCount, c.Runtime.SchedLatencyCount)
	assert.GreaterOrEqual(t, later.SchedLatencySeconds, c.Runtime.SchedLatencySeconds)
	assert.Greater(t, later.GCCPUSeconds, 0.0)

	dev := newFakeDevice(true)
	l := startLifecycle(t, dev, Config{})
	defer l.s.a.Close()
	st := l.s.status()
	require.NotNil(t, st.Cost)
	assert.Equal(t, []QueueCost{{Queue: 0, TID: 7, IOUringEnters: 42}}, st.Cost.Queues)
}
