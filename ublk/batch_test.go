package ublk

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/uapi"
)

func TestChooseBatch(t *testing.T) {
	const k612, k73 = 0x1fe, 0x1fffff
	on, why := chooseBatch(BatchIOAuto, k73, "7.3")
	assert.True(t, on)
	assert.Empty(t, why)
	on, why = chooseBatch(BatchIOAuto, k612, "6.12")
	assert.False(t, on)
	assert.Equal(t, "kernel 6.12 lacks UBLK_F_BATCH_IO (Linux 6.19)", why)
	on, why = chooseBatch(BatchIOOff, k73, "7.3")
	assert.False(t, on)
	assert.Contains(t, why, "off (the default")
	on, _ = chooseBatch(BatchIOAuto, k73&^uapi.UBLK_F_BATCH_IO, "7.3")
	assert.False(t, on, "the feature bit alone decides")
}

func TestParseBatchIO(t *testing.T) {
	for s, want := range map[string]BatchIO{"": BatchIOOff, "auto": BatchIOAuto, "off": BatchIOOff} {
		got, err := ParseBatchIO(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		if s != "" {
			assert.Equal(t, s, got.String())
		}
	}
	_, err := ParseBatchIO("on")
	assert.ErrorContains(t, err, "want off or auto")
	_, err = Options{BatchIO: 2}.withDefaults()
	assert.ErrorContains(t, err, "batch I/O mode 2")
}

// The elements PREP and COMMIT send: 16 bytes with the tag's buffer address
// when the driver copies, 8 without (zero copy), and the fallback flag
// only where the queue can register a request itself.
func TestBatchElements(t *testing.T) {
	for _, tt := range []struct {
		name        string
		mode        dataMode
		canRegister bool
		flags       uint16
		elemBytes   int
	}{
		{"copy", modeCopy, false, uapi.UBLK_BATCH_F_HAS_BUF_ADDR, 16},
		{"auto-buf-reg with fallback", modeAutoReg, true, uapi.UBLK_BATCH_F_AUTO_BUF_REG_FALLBACK, 8},
		{"auto-buf-reg alone", modeAutoReg, false, 0, 8},
		{"register", modeRegister, true, 0, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue(0, 4, &halvesTarget{}, 1<<20)
			q.mode, q.canRegister = tt.mode, tt.canRegister
			require.NoError(t, q.openBuffers(4096, false))
			require.NoError(t, q.openBatch())
			defer func() { assert.NoError(t, q.close()) }()
			b := q.batch
			assert.Equal(t, tt.flags, b.flags)
			assert.Equal(t, tt.elemBytes, b.elemBytes)
			q.addCommit(3, -5)
			e := b.commit[0]
			assert.Equal(t, []byte{3, 0, 3, 0, 0xfb, 0xff, 0xff, 0xff}, e[:8], "tag 3, slot 3, result -5")
			if tt.elemBytes == 16 {
				assert.Equal(t, bufAddr(q.bufs[3]), binary.LittleEndian.Uint64(e[8:16]), "tag 3's buffer")
			}
			assert.Equal(t, 1, b.n)
		})
	}
}
