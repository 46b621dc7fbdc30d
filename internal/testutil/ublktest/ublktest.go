// Package ublktest runs requests through a ublk.Harness for the tests of ublk targets, on tag 0,
// failing the test when a request does not do all it was asked. Like testutil, it is for _test.go
// files only.
package ublktest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"uraid/ublk"
)

// Do runs r on tag 0 of h and returns its result: only the harness failing fails t.
func Do(t testing.TB, h *ublk.Harness, r ublk.HarnessRequest) int32 {
	t.Helper()
	res, err := h.Do(r)
	require.NoError(t, err, "%v at %d+%d", r.Op, r.Offset, r.Length)
	return res
}

// Write writes data at off, requiring all of it written.
func Write(t testing.TB, h *ublk.Harness, off int64, data []byte) {
	t.Helper()
	write(t, h, off, data, false)
}

// WriteFUA writes data at off with forced unit access, requiring all of it written.
func WriteFUA(t testing.TB, h *ublk.Harness, off int64, data []byte) {
	t.Helper()
	write(t, h, off, data, true)
}

func write(t testing.TB, h *ublk.Harness, off int64, data []byte, fua bool) {
	t.Helper()
	copy(h.Buf(0), data)
	require.Equal(t, int32(len(data)),
		Do(t, h, ublk.HarnessRequest{Op: ublk.OpWrite, Offset: off, Length: int64(len(data)), FUA: fua}),
		"write at %d+%d", off, len(data))
}

// Read reads n bytes at off, requiring all of them, and returns a copy.
func Read(t testing.TB, h *ublk.Harness, off int64, n int) []byte {
	t.Helper()
	require.Equal(t, int32(n), Do(t, h, ublk.HarnessRequest{Op: ublk.OpRead, Offset: off, Length: int64(n)}),
		"read at %d+%d", off, n)
	return bytes.Clone(h.Buf(0)[:n])
}

// Discard discards n bytes at off, requiring it to succeed.
func Discard(t testing.TB, h *ublk.Harness, off, n int64) {
	t.Helper()
	require.Zero(t, Do(t, h, ublk.HarnessRequest{Op: ublk.OpDiscard, Offset: off, Length: n}),
		"discard at %d+%d", off, n)
}

// Flush flushes, requiring it to succeed.
func Flush(t testing.TB, h *ublk.Harness) {
	t.Helper()
	require.Zero(t, Do(t, h, ublk.HarnessRequest{Op: ublk.OpFlush}), "flush")
}
