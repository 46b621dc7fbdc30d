package raid

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestNewUUID(t *testing.T) {
	seen := make(map[UUID]bool)
	for range 1000 {
		u, err := NewUUID()
		require.NoError(t, err)
		require.False(t, u.IsZero())
		assert.Equal(t, byte(0x40), u[6]&0xf0, "version 4 in %s", u)
		assert.Equal(t, byte(0x80), u[8]&0xc0, "RFC 9562 variant in %s", u)
		assert.Equal(t, byte('4'), u.String()[14], "version digit in %s", u)
		require.False(t, seen[u], "duplicate %s", u)
		seen[u] = true
	}
}

func TestUUIDString(t *testing.T) {
	u := UUID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4e, 0xf0, 0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	assert.Equal(t, "12345678-9abc-4ef0-8123-456789abcdef", u.String())
	p, err := ParseUUID("12345678-9ABC-4EF0-8123-456789ABCDEF")
	require.NoError(t, err)
	assert.Equal(t, u, p)
}

func TestParseUUIDRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"12345678-9abc-4ef0-8123-456789abcde",
		"12345678-9abc-4ef0-8123-456789abcdef0",
		"123456789abc-4ef0-8123-456789abcdef-",
		"12345678_9abc_4ef0_8123_456789abcdef",
		"1234567g-9abc-4ef0-8123-456789abcdef",
		"12345678-9abc-4ef0-8123-456789abcd+f",
	} {
		_, err := ParseUUID(s)
		assert.Error(t, err, "%q", s)
	}
}

func TestPropertyUUIDStringRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var u UUID
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "uuid"))
		s := u.String()
		require.Len(t, s, 36)
		require.Equal(t, s, strings.ToLower(s))
		p, err := ParseUUID(s)
		require.NoError(t, err)
		require.Equal(t, u, p)
	})
}
