package daemon

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/ublk"
)

// TestServedGrow: a running array grows, then its device is told (after, for a grow); a kernel
// without UPDATE_SIZE leaves the device at its size, and the result says what to do; a shrink
// tells the device first, and on such a kernel is refused with nothing changed.
func TestServedGrow(t *testing.T) {
	for _, supported := range []bool{true, false} {
		t.Run(fmt.Sprintf("update size %v", supported), func(t *testing.T) {
			dev := newFakeDevice(true)
			if !supported {
				dev.updateErr = fmt.Errorf("ublk update size of dev 5: %w", ublk.ErrNotSupported)
			}
			l := startLifecycle(t, dev, Config{})
			old := l.s.a.Map().Size()
			for _, p := range l.members {
				require.NoError(t, os.Truncate(p, 16<<20))
			}
			res, err := l.s.Grow(GrowRequest{})
			require.NoError(t, err)
			assert.Equal(t, old, res.OldSize)
			assert.Equal(t, int64(15<<20), res.NewSize)
			assert.Equal(t, res.NewSize, l.s.a.Map().Size())
			assert.Equal(t, []int64{res.NewSize}, dev.sizes, "the kernel is told after the array grew")
			assert.Equal(t, supported, res.DeviceGrown)
			if supported {
				assert.Equal(t, res.NewSize, res.DeviceSize)
				assert.Empty(t, res.Note)
			} else {
				assert.Equal(t, old, res.DeviceSize)
				assert.Contains(t, res.Note, "uraid stop life")
			}

			dev.sizes = nil
			res, err = l.s.Grow(GrowRequest{SizeBytes: 10 << 20})
			if supported {
				require.NoError(t, err)
				assert.Equal(t, []int64{10 << 20}, dev.sizes, "the kernel is told before the array shrinks")
				assert.Equal(t, int64(10<<20), l.s.a.Map().Size())
			} else {
				require.ErrorIs(t, err, ublk.ErrNotSupported)
				assert.Contains(t, err.Error(), "shrink it stopped instead")
				assert.Equal(t, int64(15<<20), l.s.a.Map().Size(), "a refused shrink changes nothing")
			}
			require.NoError(t, l.s.Stop())
			require.NoError(t, l.ended())
		})
	}
}
