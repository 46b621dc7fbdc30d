package raid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	uuidA = "8d6f0a52-3c1e-4f55-9a0e-2f1b7c9d4e10"
	uuidB = "0b7e4c1a-5d2f-4e3b-8a6c-1f9e2d3c4b5a"
)

// TestParseConfigArrays: ARRAY lines beside path lines, in any case, with devices= read as paths
// too; a line repeated (examine --scan appended twice) is one array.
func TestParseConfigArrays(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"m0", "m1"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	text := "# arrays\nARRAY data UUID=" + uuidA + "   # the big one\n" +
		"array demo uuid=" + uuidB + " devices=" + dir + "/m0," + dir + "/m1\n" +
		dir + "/m*\n" +
		"ARRAY data UUID=" + uuidA + "\n"
	c, err := ParseConfig(strings.NewReader(text), "u.conf")
	require.NoError(t, err)
	a, b := mustUUID(t, uuidA), mustUUID(t, uuidB)
	assert.Equal(t, []ConfigArray{
		{Name: "data", UUID: a, Line: 2},
		{Name: "demo", UUID: b, Devices: []string{dir + "/m0", dir + "/m1"}, Line: 3},
	}, c.Arrays)
	assert.Equal(t, []string{dir + "/m0", dir + "/m1", dir + "/m0", dir + "/m1"}, c.Paths)
}

// TestParseConfigErrors: every bad line is refused with its file and line number and how to write
// it.
func TestParseConfigErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"ARRAY\n", "u.conf:1: ARRAY without a name: write ARRAY NAME UUID="},
		{"\nARRAY UUID=" + uuidA + "\n", "u.conf:2: ARRAY without a name"},
		{"ARRAY data\n", "u.conf:1: ARRAY data has no UUID=: uraid picks arrays by UUID"},
		{"ARRAY data UUID=12345\n", "u.conf:1: UUID=12345: "},
		{"ARRAY data UUID=" + uuidA + " UUID=" + uuidB + "\n", "u.conf:1: uuid= given twice: give it once"},
		{"ARRAY data UUID=" + uuidA + " level=1\n", "u.conf:1: unknown key level=: ARRAY takes UUID= and devices="},
		{"ARRAY data UUID=" + uuidA + " spare\n", `u.conf:1: "spare" is not KEY=VALUE`},
		{"ARRAY bad/name UUID=" + uuidA + "\n", `u.conf:1: array name "bad/name"`},
		{"ARRAY data UUID=" + uuidA + " devices=m0\n", `u.conf:1: devices=: "m0" is not an absolute path`},
		{"ARRAY data UUID=" + uuidA + " devices=/x/[\n", `u.conf:1: devices=: pattern "/x/["`},
		{"ARRAY data UUID=" + uuidA + "\nARRAY other UUID=" + uuidA + "\n", "u.conf:2: array " + uuidA + " is ARRAY data on line 1 and ARRAY other here: one array, one name"},
		{"ARRAY data UUID=" + uuidA + "\nARRAY data UUID=" + uuidB + "\n", "u.conf:2: ARRAY data names array " + uuidB + " here and array " + uuidA + " on line 1: two arrays cannot share a name"},
		{"/a\nvar/m1\n", `u.conf:2: "var/m1" is neither an absolute path nor an ARRAY line`},
		{"/x/[\n", `u.conf:1: pattern "/x/["`},
	} {
		_, err := ParseConfig(strings.NewReader(tt.text), "u.conf")
		assert.ErrorContains(t, err, "config "+tt.want, "%q", tt.text)
	}
}

// TestConfigSelect: without ARRAY lines every array found is kept; with them only those listed,
// with only the members devices= allows; an array listed under another name is refused.
func TestConfigSelect(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"m0", "m1"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	require.NoError(t, os.Symlink(filepath.Join(dir, "m1"), filepath.Join(dir, "link1")))
	a, b := mustUUID(t, uuidA), mustUUID(t, uuidB)
	res := ScanResult{Arrays: []Found{
		{Name: "data", UUID: a, Members: []MemberSB{{Path: "/dev/sdb"}, {Path: "/dev/sdc"}}},
		{Name: "demo", UUID: b, Members: []MemberSB{{Path: dir + "/m0"}, {Path: dir + "/m1"}, {Path: "/dev/sdd"}}},
	}}
	sel, notListed, errs := Config{}.Select(res, "u.conf")
	assert.Equal(t, res, sel)
	assert.Empty(t, notListed)
	assert.Empty(t, errs)

	c := Config{Arrays: []ConfigArray{{Name: "demo", UUID: b, Devices: []string{dir + "/m0", dir + "/link*"}, Line: 4}}}
	sel, notListed, errs = c.Select(res, "u.conf")
	assert.Empty(t, errs)
	require.Len(t, sel.Arrays, 1)
	assert.Equal(t, "demo", sel.Arrays[0].Name)
	assert.Equal(t, []MemberSB{{Path: dir + "/m0"}, {Path: dir + "/m1"}}, sel.Arrays[0].Members, "devices= leaves /dev/sdd out")
	assert.Len(t, res.Arrays[1].Members, 3, "the scan result is not changed")
	require.Len(t, notListed, 1)
	assert.Equal(t, "data", notListed[0].Name)

	c = Config{Arrays: []ConfigArray{{Name: "renamed", UUID: a, Line: 7}}}
	sel, _, errs = c.Select(res, "u.conf")
	assert.Empty(t, sel.Arrays)
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0], "config u.conf:7 names it renamed, but its members call it data: uraid does not rename arrays: write ARRAY data UUID="+uuidA)
}

// TestArrayLineRoundTrip: the line examine --scan prints parses back to the same array, with the
// member files (not the block devices) in devices=.
func TestArrayLineRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m0 := filepath.Join(dir, "m0")
	require.NoError(t, os.WriteFile(m0, nil, 0o600))
	f := Found{Name: "demo", UUID: mustUUID(t, uuidB), Members: []MemberSB{{Path: m0}, {Path: "/dev/null"}}}
	line := ArrayLine(f)
	assert.Equal(t, "ARRAY demo UUID="+uuidB+" devices="+m0, line)
	c, err := ParseConfig(strings.NewReader(line+"\n"), "u.conf")
	require.NoError(t, err)
	require.Len(t, c.Arrays, 1)
	assert.Equal(t, ConfigArray{Name: "demo", UUID: f.UUID, Devices: []string{m0}, Line: 1}, c.Arrays[0])
}

func mustUUID(t *testing.T, s string) UUID {
	t.Helper()
	u, err := ParseUUID(s)
	require.NoError(t, err)
	return u
}
