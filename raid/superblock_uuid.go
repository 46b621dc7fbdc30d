package raid

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// UUID identifies an array or a member. uraid generates random (version 4,
// RFC 9562) UUIDs; it only ever compares them, so any 16 bytes read from a
// superblock other than all zeros are accepted.
type UUID [16]byte

// NewUUID returns a random version 4 UUID.
func NewUUID() (UUID, error) {
	var u UUID
	if _, err := rand.Read(u[:]); err != nil {
		return UUID{}, fmt.Errorf("generate uuid: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u, nil
}

// IsZero reports whether u is the all-zero UUID, which no member carries.
func (u UUID) IsZero() bool {
	return u == UUID{}
}

// Tag is the first 8 bytes of u, as the superblock's slot table names a member: never 0 for a
// UUID uraid made (its version nibble is in byte 6).
func (u UUID) Tag() uint64 { return binary.LittleEndian.Uint64(u[:8]) }

// String formats u as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// ParseUUID parses the form String produces, in either case.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return UUID{}, fmt.Errorf("parse uuid %q: want the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	groups := [][2]int{{0, 8}, {9, 13}, {14, 18}, {19, 23}, {24, 36}}
	n := 0
	for _, g := range groups {
		m, err := hex.Decode(u[n:], []byte(s[g[0]:g[1]]))
		if err != nil {
			return UUID{}, fmt.Errorf("parse uuid %q: %w", s, err)
		}
		n += m
	}
	return u, nil
}
