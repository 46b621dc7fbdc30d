package ublk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrainWithholdsThenServes: once draining, a queue hands the target nothing new, says it is
// drained only when the target has finished what it held, and serves the withheld requests on
// EndDrain.
func TestDrainWithholdsThenServes(t *testing.T) {
	target := &asyncTarget{reqs: make(chan *Request, 4)}
	h := newTestHarness(t, target, 4, 64<<10)

	require.NoError(t, h.Start(0, HarnessRequest{Op: OpWrite, Offset: 0, Length: 4096}))
	held := <-target.reqs
	drained := h.Drain()
	require.NoError(t, h.Start(1, HarnessRequest{Op: OpRead, Offset: 8192, Length: 4096}))
	require.NoError(t, h.Start(2, HarnessRequest{Op: OpFlush}))
	assert.Equal(t, 2, h.Withheld())
	assert.Empty(t, target.reqs, "a draining queue handed the target a request")
	select {
	case <-drained:
		t.Fatal("drained while the target still holds a request")
	default:
	}

	held.Done(nil)
	tag, res, err := h.Wait()
	require.NoError(t, err)
	assert.Equal(t, uint16(0), tag)
	assert.Equal(t, int32(4096), res)
	select {
	case <-drained:
	default:
		t.Fatal("not drained once the target holds nothing")
	}
	assert.Empty(t, target.reqs)

	h.EndDrain()
	for range 2 {
		go func() { (<-target.reqs).Done(nil) }()
	}
	got := map[uint16]int32{}
	for range 2 {
		tag, res, err := h.Wait()
		require.NoError(t, err)
		got[tag] = res
	}
	assert.Equal(t, map[uint16]int32{1: 4096, 2: 0}, got, "the withheld requests are served after EndDrain")
	assert.Zero(t, h.Withheld())
}

// A queue that drains while the target holds nothing is drained at once, and a second Drain
// is answered again.
func TestDrainIdleQueue(t *testing.T) {
	h := newTestHarness(t, &inlineTarget{}, 2, 64<<10)
	for range 2 {
		drained := h.Drain()
		require.NoError(t, h.Start(0, HarnessRequest{Op: OpRead, Length: 512}))
		_, _, err := h.Wait()
		require.Error(t, err, "nothing is in flight while the only request is withheld")
		select {
		case <-drained:
		default:
			t.Fatal("an idle queue never said it was drained")
		}
		h.EndDrain()
		tag, res, err := h.Wait()
		require.NoError(t, err)
		assert.Equal(t, uint16(0), tag)
		assert.Equal(t, int32(512), res)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		"/mnt/data":               "/mnt/data",
		`/mnt/with\040space`:      "/mnt/with space",
		`/a\011tab\012nl\134back`: "/a\ttab\nnl\\back",
		`/trailing\04`:            `/trailing\04`,
	} {
		assert.Equal(t, want, unescapeMount(in), in)
	}
}

func TestParseDevt(t *testing.T) {
	d, ok := parseDevt("259:3")
	assert.True(t, ok)
	assert.Equal(t, devt{259, 3}, d)
	for _, bad := range []string{"", "259", "a:b", "1:-1"} {
		_, ok := parseDevt(bad)
		assert.False(t, ok, bad)
	}
}

func TestOpenersRefusesNonBlock(t *testing.T) {
	_, err := Openers(t.TempDir())
	assert.ErrorContains(t, err, "not a block device")
}
