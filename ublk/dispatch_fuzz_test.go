package ublk

import (
	"testing"

	"golang.org/x/sys/unix"

	"uraid/internal/uapi"
)

// FuzzDispatch feeds arbitrary descriptors, as a buggy or hostile kernel
// might write them, through the request decoder: it must never panic, never
// hand a target a request outside the device or larger than its buffer, and
// must fail what it does not pass on.
func FuzzDispatch(f *testing.F) {
	f.Add(uint32(uapi.UBLK_IO_OP_READ), uint32(8), uint64(0))
	f.Add(uint32(uapi.UBLK_IO_OP_WRITE|uapi.UBLK_IO_F_FUA), uint32(128), uint64(1<<20))
	f.Add(uint32(uapi.UBLK_IO_OP_WRITE_ZEROES|uapi.UBLK_IO_F_NOUNMAP), uint32(1<<20), uint64(64))
	f.Add(uint32(uapi.UBLK_IO_OP_DISCARD), uint32(0xFFFFFFFF), uint64(0))
	f.Add(uint32(uapi.UBLK_IO_OP_FLUSH), uint32(0), uint64(1<<63))
	f.Add(uint32(uapi.UBLK_IO_OP_WRITE_SAME), uint32(1), uint64(1))
	f.Add(uint32(uapi.UBLK_IO_OP_REPORT_ZONES), uint32(1), uint64(1))

	const size, maxIO = 1 << 30, 64 << 10
	target := &inlineTarget{}
	h, err := NewHarness(target, 1, maxIO)
	if err != nil {
		f.Fatal(err)
	}
	defer h.Close()
	h.q.size.Store(size)

	f.Fuzz(func(t *testing.T, opFlags, nr uint32, start uint64) {
		target.n = 0
		h.q.iods[0] = uapi.IODesc{OpFlags: opFlags, NrSectors: nr, StartSector: start}
		h.q.onIO(0, uapi.UBLK_IO_RES_OK)
		_, res, err := h.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if target.n == 0 {
			if res != -int32(unix.EIO) && res != -int32(unix.EOPNOTSUPP) {
				t.Fatalf("request failed before the target with %d", res)
			}
			return
		}
		s := target.last
		if s.Op == OpFlush {
			if s.Offset != 0 || s.Length != 0 || s.BufLen != 0 || res != 0 {
				t.Fatalf("flush decoded as %+v, finished with %d", s, res)
			}
			return
		}
		if s.Offset != int64(start)*512 || s.Length != int64(nr)*512 {
			t.Fatalf("decoded %d+%d from sector %d count %d", s.Offset, s.Length, start, nr)
		}
		if s.Offset < 0 || s.Length < 0 || s.Offset+s.Length > size {
			t.Fatalf("request %d+%d escapes the %d-byte device", s.Offset, s.Length, size)
		}
		switch s.Op {
		case OpRead, OpWrite:
			if s.BufLen != int(s.Length) || s.BufLen > maxIO {
				t.Fatalf("%v of %d bytes got a %d-byte buffer", s.Op, s.Length, s.BufLen)
			}
		default:
			if s.BufLen != 0 {
				t.Fatalf("%v got a buffer", s.Op)
			}
		}
		if s.FUA != (opFlags&uapi.UBLK_IO_F_FUA != 0) {
			t.Fatalf("FUA %t from flags %#x", s.FUA, opFlags)
		}
		if s.NoUnmap && s.Op != OpWriteZeroes {
			t.Fatalf("NOUNMAP on %v", s.Op)
		}
		if want := s.Length; (s.Op == OpRead || s.Op == OpWrite) && res != int32(want) {
			t.Fatalf("%v finished with %d, want %d", s.Op, res, want)
		}
	})
}
