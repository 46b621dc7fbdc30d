package simssd

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"uraid/internal/clock"
)

// TestTrimGarbage: with TrimGarbage, exactly the trimmed bytes read back
// as the seed's garbage, the same on every read and different on a device
// of another seed; a write into a trimmed block keeps the rest of its
// garbage; without it they read as zeros.
func TestTrimGarbage(t *testing.T) {
	trimmed := func(seed uint64, garbage bool) (*Device, []byte) {
		d := newDev(t, Config{Size: 64 << 10, Seed: seed, TrimGarbage: garbage, Clock: clock.NewVirtual(time.Unix(0, 0))})
		data := bytes.Repeat([]byte{0xab}, 4*BlockSize)
		_, err := d.WriteAt(data, 0)
		require.NoError(t, err)
		require.NoError(t, d.Discard(BlockSize, BlockSize))      // block 1, whole
		require.NoError(t, d.Discard(2*BlockSize+100, 200))      // part of block 2
		require.NoError(t, d.Discard(8*BlockSize, 2*BlockSize))  // blocks 8 and 9, never written
		require.NoError(t, d.Discard(10*BlockSize+7, BlockSize)) // ends of blocks 10 and 11, never written
		got := make([]byte, 16*BlockSize)
		_, err = d.ReadAt(got, 0)
		require.NoError(t, err)
		return d, got
	}
	zeros := func(n int) []byte { return make([]byte, n) }
	g := func(seed uint64, off int64, n int) []byte {
		b := make([]byte, n)
		Garbage(seed, off, b)
		return b
	}
	for _, garbage := range []bool{false, true} {
		_, got := trimmed(7, garbage)
		want := bytes.Repeat([]byte{0xab}, 4*BlockSize)
		want = append(want, zeros(12*BlockSize)...)
		if garbage {
			copy(want[BlockSize:], g(7, BlockSize, BlockSize))
			copy(want[2*BlockSize+100:], g(7, 2*BlockSize+100, 200))
			copy(want[8*BlockSize:], g(7, 8*BlockSize, 2*BlockSize))
			copy(want[10*BlockSize+7:], g(7, 10*BlockSize+7, BlockSize))
		} else {
			clear(want[BlockSize : 2*BlockSize])
			clear(want[2*BlockSize+100 : 2*BlockSize+300])
		}
		assert.Equal(t, want, got, "garbage=%v: exactly the trimmed bytes changed", garbage)
	}

	d, first := trimmed(7, true)
	again := make([]byte, len(first))
	_, err := d.ReadAt(again, 0)
	require.NoError(t, err)
	assert.Equal(t, first, again, "garbage reads back the same")
	assert.NotEqual(t, zeros(BlockSize), first[BlockSize:2*BlockSize])
	assert.NotEqual(t, first[8*BlockSize:9*BlockSize], first[9*BlockSize:10*BlockSize], "blocks differ")
	_, other := trimmed(8, true)
	assert.NotEqual(t, first[BlockSize:2*BlockSize], other[BlockSize:2*BlockSize], "devices of other seeds differ")
	assert.Equal(t, first[:BlockSize], other[:BlockSize], "data is data on both")

	// A write into a trimmed block keeps the rest of its garbage.
	_, err = d.WriteAt([]byte("new"), BlockSize+50)
	require.NoError(t, err)
	blk := make([]byte, BlockSize)
	_, err = d.ReadAt(blk, BlockSize)
	require.NoError(t, err)
	want := g(7, BlockSize, BlockSize)
	copy(want[50:], "new")
	assert.Equal(t, want, blk)
}

// TestGarbageAnyPart: Garbage of any part of a range is that part of the
// range's garbage, so a device can make the bytes of a partial read or trim
// on their own.
func TestGarbageAnyPart(t *testing.T) {
	const n = 3 * BlockSize
	whole := make([]byte, n)
	Garbage(3, 5*BlockSize, whole)
	rapid.Check(t, func(t *rapid.T) {
		from := rapid.IntRange(0, n).Draw(t, "from")
		to := rapid.IntRange(from, n).Draw(t, "to")
		part := make([]byte, to-from)
		Garbage(3, 5*BlockSize+int64(from), part)
		if !bytes.Equal(whole[from:to], part) {
			t.Fatalf("Garbage of [%d, %d) differs from that part of the whole", from, to)
		}
	})
}

// TestDataModel: random writes, TRIMs and reads, against a byte array in
// which a TRIM writes zeros or the seed's garbage.
func TestDataModel(t *testing.T) {
	const size = 16 * BlockSize
	rapid.Check(t, func(t *rapid.T) {
		garbage := rapid.Bool().Draw(t, "garbage")
		seed := rapid.Uint64().Draw(t, "seed")
		d, err := New(Config{Size: size, Seed: seed, TrimGarbage: garbage, Clock: clock.NewVirtual(time.Unix(0, 0))})
		if err != nil {
			t.Fatal(err)
		}
		model := make([]byte, size)
		span := func() (int64, int) {
			off := rapid.Int64Range(0, size).Draw(t, "off")
			n := rapid.IntRange(0, int(size-off)).Draw(t, "n")
			return off, n
		}
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			off, n := span()
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				// One drawn seed per write, not one draw per byte: a write of
				// a few blocks would otherwise draw tens of thousands of values.
				// The bytes never repeat with the block, so a block served
				// from the wrong place shows.
				fill := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "fill"), uint64(off)))
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(fill.Uint32())
				}
				if _, err := d.WriteAt(p, off); err != nil {
					t.Fatal(err)
				}
				copy(model[off:], p)
			case 1:
				if err := d.Discard(off, int64(n)); err != nil {
					t.Fatal(err)
				}
				if garbage {
					Garbage(seed, off, model[off:off+int64(n)])
				} else {
					clear(model[off : off+int64(n)])
				}
			case 2:
				got := make([]byte, n)
				if _, err := d.ReadAt(got, off); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(model[off:off+int64(n)], got) {
					t.Fatalf("read [%d, +%d) differs from the model", off, n)
				}
			}
		}
		got := make([]byte, size)
		if _, err := d.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(model, got) {
			t.Fatal("the device differs from the model")
		}
	})
}
