package raid

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
)

// corpusOutcome is what decoding one fuzz corpus input gives: either err
// (the whole message) or a superblock with these fields.
type corpusOutcome struct {
	err      string
	level    mapping.Level
	layout   mapping.Layout
	chunk    uint64
	members  uint32
	index    uint32
	state    State
	sentinel error
}

// TestFuzzCorpusDecodes pins how every input kept under
// testdata/fuzz/FuzzUnmarshal decodes, both as it is and with the magic set
// and the checksum recomputed (as FuzzUnmarshal feeds it): the members those
// blocks stand for must keep reading the same whatever becomes of the types
// the decoder fills in.
func TestFuzzCorpusDecodes(t *testing.T) {
	const (
		badSum  = "corrupt superblock: checksum mismatch: the block was damaged after it was written; re-add the member from its mirror or re-create the array"
		noMagic = "not a uraid member: no uraid magic at the superblock position (wrong device, or never part of an array?)"
		// Major 3 became the version of a member whose reshape is under way: this raid10 f2 one
		// is refused as no reshape can be (a uraid before reshape refused it as too new).
		major3    = "invalid superblock: a reshape of level 10 f2: only raid0 and raid10 n2 and o2 are reshaped"
		major0    = "unsupported superblock version: version 0.0, this uraid reads 1.x to 3.x: upgrade uraid"
		indexEq   = "invalid superblock: member index 4 is not below member count 4"
		afterNUL  = "invalid superblock: array name field has bytes after its NUL terminator"
		emptyData = "invalid superblock: data size is zero"
		badRole   = "invalid superblock: unknown role code 232 (written by a newer uraid? upgrade it)"
	)
	raid10f2 := corpusOutcome{level: mapping.RAID10, layout: mapping.Far2, chunk: 512 << 10, members: 4, index: 2, state: StateDirty}
	want := map[string][2]corpusOutcome{
		"bad-checksum":       {{err: badSum, sentinel: ErrCorrupt}, raid10f2},
		"index-equals-count": {{err: indexEq, sentinel: ErrInvalid}, {err: indexEq, sentinel: ErrInvalid}},
		"long":               {raid10f2, raid10f2},
		"major-2":            {raid10f2, raid10f2}, // version 2.0 (with a region map) is current
		"major-3":            {{err: badSum, sentinel: ErrCorrupt}, {err: major3, sentinel: ErrInvalid}},
		// Minor 1 gave byte 136 a meaning (the role); this input, written to stand for a newer
		// minor, fills it with garbage no writer of minor 1 or later would put there.
		"minor-9-reserved-used": {{err: badRole, sentinel: ErrInvalid}, {err: badRole, sentinel: ErrInvalid}},
		"name-after-nul":        {{err: afterNUL, sentinel: ErrInvalid}, {err: afterNUL, sentinel: ErrInvalid}},
		"short":                 {{err: badSum, sentinel: ErrCorrupt}, {err: emptyData, sentinel: ErrInvalid}},
		"valid-linear": {
			{level: mapping.Linear, members: 1, state: StateDirty},
			{level: mapping.Linear, members: 1, state: StateDirty},
		},
		"valid-raid0": {
			{level: mapping.RAID0, chunk: 4096, members: 4, index: 2, state: StateClean},
			{level: mapping.RAID0, chunk: 4096, members: 4, index: 2, state: StateClean},
		},
		"valid-raid1": {
			{level: mapping.RAID1, members: 2, index: 1, state: StateDirty},
			{level: mapping.RAID1, members: 2, index: 1, state: StateDirty},
		},
		"valid-raid10-f2": {raid10f2, raid10f2},
		"wrong-magic":     {{err: noMagic, sentinel: ErrNotMember}, raid10f2},
		"zero-block":      {{err: noMagic, sentinel: ErrNotMember}, {err: major0, sentinel: ErrUnsupportedVersion}},
	}
	files, err := filepath.Glob("testdata/fuzz/FuzzUnmarshal/*")
	require.NoError(t, err)
	require.Len(t, files, len(want), "every corpus input has its outcome pinned here")
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			outcomes, ok := want[name]
			require.True(t, ok, "corpus input %s has no pinned outcome", name)
			data := readCorpusInput(t, f)
			for pass, block := range fuzzBlocks(data) {
				w := outcomes[pass]
				var sb Superblock
				err := sb.UnmarshalBinary(block)
				if w.err != "" {
					require.Error(t, err, "pass %d", pass)
					assert.ErrorIs(t, err, w.sentinel, "pass %d", pass)
					assert.Equal(t, w.err, err.Error(), "pass %d", pass)
					continue
				}
				require.NoError(t, err, "pass %d", pass)
				got := corpusOutcome{level: sb.Level, layout: sb.Layout, chunk: sb.ChunkSize, members: sb.Members, index: sb.Index, state: sb.State}
				assert.Equal(t, w, got, "pass %d", pass)
				assert.Equal(t, "fast_scratch-1.0", sb.Name, "pass %d", pass)
			}
		})
	}
}

// readCorpusInput reads one input in the "go test fuzz v1" file format: a
// header line, then one []byte("...") line holding a Go string literal.
func readCorpusInput(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2, path)
	require.Equal(t, "go test fuzz v1", lines[0], path)
	lit, ok := strings.CutPrefix(lines[1], "[]byte(")
	require.True(t, ok, path)
	lit, ok = strings.CutSuffix(lit, ")")
	require.True(t, ok, path)
	s, err := strconv.Unquote(lit)
	require.NoError(t, err, path)
	return []byte(s)
}
