package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/bench"
)

// committed is the results JSON of the last full make bench run.
const committed = "../../../docs/bench/results.json"

// TestRedrawFromCommittedResults: the committed results JSON alone, with no
// console log and nothing run, gives the tables and one readable PNG per
// chart, under the names docs/benchmarks.md links to.
func TestRedrawFromCommittedResults(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	// A low resolution: the race detector makes rasterising slow.
	require.NoError(t, run([]string{"-in", committed, "-plots", dir, "-dpi", "48"}, &out, &errOut))
	assert.Contains(t, out.String(), "## Targets")
	assert.Contains(t, out.String(), "| a-blkdiscard/full/wall ↓ | raid0-async |")
	assert.Empty(t, errOut.String())

	b, err := os.ReadFile(committed)
	require.NoError(t, err)
	s, err := bench.Extract(append(append([]byte(beginMarker), b...), endMarker...), beginMarker, endMarker)
	require.NoError(t, err)
	var want []string
	for _, c := range s.Charts() {
		want = append(want, c.Name+".png")
	}
	for _, name := range []string{"a-blkdiscard-wall.png", "c-fstrim-wall.png", "f-slow-member-read_p99.png"} {
		assert.Contains(t, want, name, "docs/benchmarks.md links to it")
	}

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		f, err := os.Open(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err, e.Name())
		// 48 dpi over a page 105 mm high and at least 100 mm wide.
		assert.Equal(t, 198, cfg.Height, e.Name())
		assert.GreaterOrEqual(t, cfg.Width, 189, e.Name())
	}
	slices.Sort(want)
	assert.Equal(t, want, got)
}

func TestRunNeedsInput(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(nil, &out, &errOut)
	assert.ErrorContains(t, err, "need -log")
	assert.ErrorContains(t, err, "-in")

	err = run([]string{"-in", filepath.Join(t.TempDir(), "missing.json")}, &out, &errOut)
	assert.ErrorIs(t, err, os.ErrNotExist)

	err = run([]string{"-in", committed, "-dpi", "0"}, &out, &errOut)
	assert.ErrorContains(t, err, "-dpi 0")

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o644))
	err = run([]string{"-in", bad}, &out, &errOut)
	assert.ErrorContains(t, err, bad)
	assert.Empty(t, out.String(), "nothing printed from a file that does not parse")
}
