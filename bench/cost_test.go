package bench

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/daemon"
)

func TestStatTicks(t *testing.T) {
	// A command with spaces and a parenthesis: the fields count from the last one.
	line := "1234 (uraid (q) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 100 0 0"
	n, err := statTicks(line)
	require.NoError(t, err)
	assert.EqualValues(t, 325, n)
	_, err = statTicks("1234 (cut) S 1")
	assert.Error(t, err)

	var c costCounters
	require.NoError(t, c.readProc(os.Getpid()))
	assert.NotEmpty(t, c.threads, "this process has threads")
	assert.GreaterOrEqual(t, c.switches, int64(0))
}

// A window counts what its threads did in it: a thread that started in it from zero, and uraid's
// counters as differences per queue.
func TestCostCountersSub(t *testing.T) {
	b := costCounters{cpuTicks: 100, threads: map[int]threadCounters{1: {"a", 50, 10}, 2: {"b", 50, 5}},
		own: &daemon.CostStatus{Queues: []daemon.QueueCost{{Queue: 0, IOUringEnters: 10}, {Queue: 1, IOUringEnters: 20}},
			Runtime: daemon.RuntimeCost{GCCPUSeconds: 1, SchedLatencyCount: 8, SchedLatencySeconds: 0.5}}}
	c := costCounters{cpuTicks: 160, threads: map[int]threadCounters{1: {"a", 70, 14}, 3: {"c", 3, 2}},
		own: &daemon.CostStatus{Queues: []daemon.QueueCost{{Queue: 0, IOUringEnters: 15}, {Queue: 1, IOUringEnters: 29}},
			Runtime: daemon.RuntimeCost{GCCPUSeconds: 1.5, SchedLatencyCount: 10, SchedLatencySeconds: 0.75, Goroutines: 30}}}
	d := c.sub(b)
	assert.EqualValues(t, 60, d.cpuTicks)
	assert.EqualValues(t, 6, d.switches, "4 of thread 1, 2 of the new thread 3")
	assert.Equal(t, threadCounters{"c", 3, 2}, d.threads[3])
	assert.EqualValues(t, 5, d.own.Queues[0].IOUringEnters)
	assert.EqualValues(t, 9, d.own.Queues[1].IOUringEnters)
	assert.EqualValues(t, 2, d.own.Runtime.SchedLatencyCount)
	assert.InDelta(t, 0.5, d.own.Runtime.GCCPUSeconds, 1e-9)
	assert.EqualValues(t, 30, d.own.Runtime.Goroutines)
	assert.EqualValues(t, 15, c.own.Queues[0].IOUringEnters, "the later snapshot is left as it was")
}
