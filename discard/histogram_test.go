package discard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestHistogramBuckets(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Int64Range(0, 1<<40-1).Draw(t, "v")
		i := bucket(v)
		require.GreaterOrEqual(t, upper(i), v, "bucket %d ends below %d", i, v)
		if i > 0 {
			require.Less(t, upper(i-1), v, "value %d belongs in an earlier bucket", v)
		}
		// Relative error of reporting the upper edge stays within 1/8.
		require.LessOrEqual(t, float64(upper(i)-v), float64(v)/histSub+1)
	})
}

func TestHistogramPercentiles(t *testing.T) {
	var h histogram
	assert.Zero(t, h.percentile(0.5))
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	p50, p99 := h.percentile(0.50), h.percentile(0.99)
	assert.InDelta(t, 50_000, p50, 50_000/histSub)
	assert.InDelta(t, 99_000, p99, 99_000/histSub)
	assert.GreaterOrEqual(t, p50, int64(50_000))
	assert.Equal(t, int64(100_000), h.max)
	assert.Equal(t, h.max, h.percentile(1))
	allocs := testing.AllocsPerRun(100, func() { h.record(time.Millisecond) })
	assert.Zero(t, allocs)
}
