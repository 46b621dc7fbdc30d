package ublk

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Every pushed tag comes out of exactly one take with its result, whatever
// the interleaving of pushers and the taker.
func TestCompletionsConcurrent(t *testing.T) {
	const depth = 4096
	c := newCompletions(depth)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tag := g; tag < depth; tag += 8 {
				c.push(uint16(tag), int32(-tag))
			}
		}()
	}
	seen := make([]int, depth)
	taken := 0
	collect := func() {
		for l := c.takeAll(); l != 0; {
			tag, res, rest := c.walk(l)
			l = rest
			assert.Equal(t, int32(-int(tag)), res)
			seen[tag]++
			taken++
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		collect()
	}
	collect()
	require.Equal(t, depth, taken)
	for tag, n := range seen {
		require.Equal(t, 1, n, "tag %d", tag)
	}
	assert.True(t, c.empty())
}

// A tag may be pushed again once it was taken (the queue recycles tags):
// model the stack as a set and check it against random push/take runs.
func TestCompletionsModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		depth := rapid.IntRange(1, 64).Draw(t, "depth")
		c := newCompletions(depth)
		pending := map[uint16]int32{}
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for range steps {
			if rapid.Bool().Draw(t, "take") {
				got := map[uint16]int32{}
				for l := c.takeAll(); l != 0; {
					tag, res, rest := c.walk(l)
					l = rest
					_, dup := got[tag]
					require.False(t, dup, "tag %d taken twice", tag)
					got[tag] = res
				}
				require.Equal(t, pending, got)
				pending = map[uint16]int32{}
				continue
			}
			tag := uint16(rapid.IntRange(0, depth-1).Draw(t, "tag"))
			if _, busy := pending[tag]; busy {
				continue // a tag completes once per request
			}
			res := rapid.Int32().Draw(t, "res")
			c.push(tag, res)
			pending[tag] = res
		}
		require.Equal(t, len(pending) == 0, c.empty())
	})
}
