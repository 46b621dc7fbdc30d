package raid

import (
	"reflect"
	"testing"
)

// FuzzUnmarshal feeds arbitrary blocks to the decoder, which must never
// panic. Each input is zero padded or cut to SuperblockSize and decoded as
// it is; random bytes rarely carry the magic and almost never a valid
// checksum, so it is then decoded again with the magic set and the checksum
// recomputed, which lets the fuzzer reach the field checks. Whatever the
// decoder accepts must survive an encode/decode round trip unchanged.
//
// Padding rather than demanding exactly SuperblockSize bytes makes the
// outcome independent of a meaningless tail, so the fuzzer can minimise a
// new input by cutting it instead of trying every one of 4096 bytes.
// Inputs of the wrong length are covered by TestUnmarshalWrongLength.
func FuzzUnmarshal(f *testing.F) {
	sb := validSB()
	valid, err := sb.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:offReserved])
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, block := range fuzzBlocks(data) {
			checkDecodeRoundTrip(t, block)
		}
	})
}

// fuzzBlocks are the two blocks FuzzUnmarshal decodes for one input: the
// input zero padded or cut to SuperblockSize, then the same with the magic
// set and the checksum recomputed.
func fuzzBlocks(data []byte) [2][]byte {
	asIs := make([]byte, SuperblockSize)
	copy(asIs, data)
	sealed := make([]byte, SuperblockSize)
	copy(sealed, asIs)
	copy(sealed, Magic[:])
	reseal(sealed)
	return [2][]byte{asIs, sealed}
}

func checkDecodeRoundTrip(t *testing.T, data []byte) {
	var sb Superblock
	if sb.UnmarshalBinary(data) != nil {
		return
	}
	enc, err := sb.MarshalBinary()
	if err != nil {
		t.Fatalf("decoded superblock %+v does not encode: %v", sb, err)
	}
	var again Superblock
	if err := again.UnmarshalBinary(enc); err != nil {
		t.Fatalf("re-encoded superblock does not decode: %v", err)
	}
	if !reflect.DeepEqual(again, sb) {
		t.Fatalf("round trip changed the superblock:\n got %+v\nwant %+v", again, sb)
	}
}
