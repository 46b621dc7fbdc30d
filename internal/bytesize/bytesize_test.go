package bytesize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0", 1: "1 byte", 512: "512 bytes", 1023: "1023 bytes", -5: "-5 bytes",
		1 << 10: "1K", 512 << 10: "512K", 3 << 29: "1536M", 2046 << 20: "2046M", 1 << 30: "1G", 2 << 40: "2T", 1 << 50: "1P",
		1<<30 + 1: "1.0G", 62<<20 + 512<<10: "62.5M", 1536: "1.5K", 1<<20 + 1: "1.0M", 24<<20 + 4<<10: "24.0M", 10000 << 10: "9.8M", 9999 << 10: "9999K",
	} {
		assert.Equal(t, want, Format(in), in)
	}
	assert.Equal(t, "50M/s", FormatRate(50<<20))
}
