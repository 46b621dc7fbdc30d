package raid

import (
	"bytes"
	"testing"
)

// FuzzUnmarshal feeds arbitrary bytes to the decoder. Random bytes rarely
// carry the magic and almost never a valid checksum, so each input is also
// tried with the magic set and the checksum recomputed, which lets the
// fuzzer reach the field checks. Whatever the decoder accepts must survive
// an encode/decode round trip unchanged.
func FuzzUnmarshal(f *testing.F) {
	sb := validSB()
	valid, err := sb.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(make([]byte, SuperblockSize))
	f.Add(valid[:100])

	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeRoundTrip(t, data)
		if len(data) == SuperblockSize {
			sealed := bytes.Clone(data)
			copy(sealed, Magic[:])
			reseal(sealed)
			checkDecodeRoundTrip(t, sealed)
		}
	})
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
	if again != sb {
		t.Fatalf("round trip changed the superblock:\n got %+v\nwant %+v", again, sb)
	}
}
