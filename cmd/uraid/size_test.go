package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{"4096": 4096, "512K": 512 << 10, "512k": 512 << 10, "64M": 64 << 20, "1G": 1 << 30,
		"1GiB": 1 << 30, "2T": 2 << 40, "8KB": 8 << 10, "0": 0}
	for in, want := range good {
		got, err := parseSize(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "K", "1.5G", "-1", "12X", "99999999999T"} {
		_, err := parseSize(bad)
		assert.Error(t, err, bad)
	}
}
