package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/ublk"
)

func TestZeroCopyOption(t *testing.T) {
	t.Setenv(ZeroCopyEnv, "")
	zc, err := zeroCopyOption()
	require.NoError(t, err)
	assert.Equal(t, ublk.ZeroCopyAuto, zc)
	t.Setenv(ZeroCopyEnv, "off")
	zc, err = zeroCopyOption()
	require.NoError(t, err)
	assert.Equal(t, ublk.ZeroCopyOff, zc)
	t.Setenv(ZeroCopyEnv, "yes")
	_, err = zeroCopyOption()
	assert.ErrorContains(t, err, "URAID_ZERO_COPY: zero copy \"yes\": want auto, off or register")
}
