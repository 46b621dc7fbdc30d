package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func fired(t Timer) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

func TestManual(t *testing.T) {
	start := time.Unix(100, 0)
	c := NewManual(start)
	a, b := c.NewTimer(time.Second), c.NewTimer(3*time.Second)
	stopped := c.NewTimer(2 * time.Second)
	assert.Equal(t, 3, c.Waiting())
	d, ok := c.Next()
	assert.True(t, ok)
	assert.Equal(t, time.Second, d)
	assert.True(t, stopped.Stop())
	assert.False(t, stopped.Stop())
	assert.Equal(t, 2, c.Waiting())

	c.Advance(999 * time.Millisecond)
	assert.False(t, fired(a))
	c.Advance(time.Millisecond)
	assert.True(t, fired(a))
	assert.False(t, a.Stop(), "a fired timer cannot be stopped")
	assert.Equal(t, 1, c.Waiting())
	c.Advance(time.Hour)
	assert.True(t, fired(b))
	assert.False(t, fired(stopped))
	assert.Equal(t, start.Add(time.Hour+time.Second), c.Now())
	_, ok = c.Next()
	assert.False(t, ok)
	assert.True(t, fired(c.NewTimer(0)), "a zero timer fires at once")

	done := make(chan struct{})
	go func() {
		c.Sleep(time.Minute)
		close(done)
	}()
	c.WaitFor(1)
	c.Advance(time.Minute)
	<-done
}

func TestVirtual(t *testing.T) {
	c := NewVirtual(time.Unix(0, 0))
	c.Sleep(time.Second)
	tm := c.NewTimer(2 * time.Second)
	assert.True(t, fired(tm))
	assert.Equal(t, time.Unix(3, 0), c.Now())
	c.Sleep(-time.Second)
	assert.Equal(t, time.Unix(3, 0), c.Now())
}

func TestSleepCtx(t *testing.T) {
	assert.NoError(t, SleepCtx(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, SleepCtx(ctx, time.Hour), context.Canceled, "a done context ends the wait")
}
