package simssd

import "encoding/binary"

// Garbage fills p with what the bytes at device offset off read as once
// trimmed on a device with Config.TrimGarbage and Config.Seed seed. The
// bytes of a block depend only on the seed and the block number.
func Garbage(seed uint64, off int64, p []byte) {
	for done := 0; done < len(p); {
		pos := off + int64(done)
		b, in := pos/BlockSize, int(pos%BlockSize)
		n := min(len(p)-done, BlockSize-in)
		garbage(seed, b, in, p[done:done+n])
		done += n
	}
}

// garbage fills p with block b's garbage from byte in of the block on;
// p must not run past the block's end. Every 8 bytes are one mix of the
// block's key and their position, so any part can be made on its own.
func garbage(seed uint64, b int64, in int, p []byte) {
	key := mix64(seed ^ mix64(uint64(b)))
	var w [8]byte
	for i := 0; i < len(p); {
		pos := in + i
		binary.LittleEndian.PutUint64(w[:], mix64(key+uint64(pos/8)*0x9e3779b97f4a7c15))
		i += copy(p[i:], w[pos%8:])
	}
}

// mix64 is one SplitMix64 step: a bijection that spreads every input bit
// over the output, and maps zero away from zero.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
