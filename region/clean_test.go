package region

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const idle = 10 * time.Second

// TestCleanTiming: a region is cleaned once idle for at least the idle time,
// counted from its last write, and within three epochs.
func TestCleanTiming(t *testing.T) {
	rg := newRig(t, geom(4), InSync, 1)
	m := rg.m
	m.Clean(0, idle) // starts the clock: epoch 0
	rg.write(0, true)
	assert.Equal(t, 0, m.Clean(5*time.Second, idle))
	assert.Equal(t, 0, m.Clean(10*time.Second, idle), "epoch 1: too soon")
	assert.Equal(t, Dirty, m.State(0))
	assert.Equal(t, 1, m.Clean(20*time.Second, idle), "epoch 2: idle since epoch 0")
	assert.Equal(t, InSync, m.State(0))
	rg.verify()
}

// TestCleanWaitsForTheLastWrite: a region written again after it was queued
// is not cleaned until idle since that write, and is cleaned then.
func TestCleanWaitsForTheLastWrite(t *testing.T) {
	rg := newRig(t, geom(4), InSync, 1)
	m := rg.m
	m.Clean(0, idle)
	rg.write(1, true)             // epoch 0, queued
	m.Clean(10*time.Second, idle) // epoch 1
	m.Clean(15*time.Second, idle) // no new epoch
	rg.write(1, true)             // at 15 s, already queued
	assert.Equal(t, 0, m.Clean(20*time.Second, idle), "written 5 s ago")
	assert.Equal(t, Dirty, m.State(1))
	assert.Equal(t, 0, m.Clean(30*time.Second, idle))
	assert.Equal(t, 1, m.Clean(40*time.Second, idle), "three epochs after its last write")
	assert.Equal(t, InSync, m.State(1))
}

func TestCleanNever(t *testing.T) {
	t.Run("with a write in flight", func(t *testing.T) {
		rg := newRig(t, geom(2), InSync, 1)
		m := rg.m
		rg.write(0, true)
		_, err := m.BeginWrite(0, 512)
		require.NoError(t, err)
		assert.Equal(t, 0, m.Clean(time.Hour, 0))
		assert.Equal(t, Dirty, m.State(0))
		require.NoError(t, m.EndWrite(0, 512, true))
		assert.Equal(t, 1, m.Clean(time.Hour, 0))
	})
	t.Run("while degraded", func(t *testing.T) {
		rg := newRig(t, geom(2), InSync, 2)
		m := rg.m
		rg.write(0, true) // before the member left: every copy has it
		m.SetDegraded(true)
		assert.Equal(t, 0, m.Clean(time.Hour, 0))
		assert.Equal(t, Dirty, m.State(0))
		rg.write(1, true)
		assert.True(t, m.NeedsResync(1), "written while a member was away")
		assert.False(t, m.NeedsResync(0))
		assert.False(t, m.Resynced(1), "no resync clears a region while degraded")
		m.SetDegraded(false)
		assert.Equal(t, 1, m.Clean(time.Hour, 0), "the region written before")
		assert.Equal(t, Dirty, m.State(1), "the region written while away waits for its resync")
		require.True(t, m.Resynced(1))
		assert.Equal(t, InSync, m.State(1))
	})
	t.Run("a region that needs resync", func(t *testing.T) {
		rg := newRig(t, geom(2), Dirty, 1)
		assert.Equal(t, 0, rg.m.Clean(time.Hour, 0))
	})
}

// TestCleanClock: a clock that goes back does not clean early.
func TestCleanClock(t *testing.T) {
	rg := newRig(t, geom(2), InSync, 1)
	m := rg.m
	m.Clean(100*time.Second, idle)
	rg.write(0, true)
	m.Clean(50*time.Second, idle) // back: the epoch starts again
	assert.Equal(t, 0, m.Clean(59*time.Second, idle))
	m.Clean(60*time.Second, idle)
	assert.Equal(t, Dirty, m.State(0))
	assert.Equal(t, 1, m.Clean(70*time.Second, idle))
}

// TestCleanedReachesDisk: cleans are lazy, written with a later flush.
func TestCleanedReachesDisk(t *testing.T) {
	rg := newRig(t, geom(2), InSync, 2)
	rg.write(0, true)
	rg.m.Clean(0, 0)
	assert.False(t, rg.m.Urgent(), "a clean is never urgent")
	assert.True(t, rg.m.Changed())
	assert.Zero(t, rg.flush(FlushUrgent))
	m, _ := rg.load()
	assert.Equal(t, Dirty, m.State(0), "not yet on disk")
	require.NotZero(t, rg.flush(FlushChanged))
	m, _ = rg.load()
	assert.Equal(t, InSync, m.State(0))
}
