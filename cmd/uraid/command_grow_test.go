package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
	"uraid/raid"
)

func TestGrowCLI(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", filepath.Join(t.TempDir(), "run"))
	require.NoError(t, os.Mkdir(os.Getenv("URAID_RUN_DIR"), 0o700))
	ms := memberFiles(t, 4, 8<<20)
	cms, _, err := raid.Create(raid.CreateOptions{Name: "arr", Level: mapping.RAID10, Layout: mapping.Near2, Chunk: 64 << 10, Members: ms})
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	before := make([][]byte, len(ms))
	for i, p := range ms {
		before[i] = fileBytes(t, p)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		for i, p := range ms {
			assert.Equal(t, before[i], fileBytes(t, p), "a refused grow changed %s", p)
		}
	}
	t.Run("refusals", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
			code int
			msg  string
		}{
			{"no size", []string{"arr", ms[0]}, exitUsage, "--size is required"},
			{"bad size", []string{"arr", "--size", "big", ms[0]}, exitUsage, `--size: "big"`},
			{"not grown", append([]string{"arr", "--size", "max"}, ms...), exitError, "no member has grown"},
			{"past a member", append([]string{"arr", "--size", "1G"}, ms...), exitError, "allows an array of at most"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				code, out, errOut := runCLI(t, append([]string{"grow"}, tt.args...)...)
				assert.Equal(t, tt.code, code, errOut)
				assert.Empty(t, out)
				assert.Contains(t, errOut, tt.msg)
				unchanged(t)
			})
		}
	})
	t.Run("grows", func(t *testing.T) {
		for _, p := range ms {
			require.NoError(t, os.Truncate(p, 16<<20))
		}
		code, out, errOut := runCLI(t, append([]string{"grow", "arr", "--size", "max"}, ms...)...)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "uraid: array arr: grown from 14M (14680064 bytes) to 30M (31457280 bytes), 15M of data on each member")
		for _, p := range ms {
			f, err := os.Open(p)
			require.NoError(t, err)
			sb, err := raid.ReadSuperblock(f)
			f.Close()
			require.NoError(t, err)
			assert.Equal(t, uint64(15<<20), sb.DataSize)
		}
		code, out, errOut = runCLI(t, append([]string{"grow", "arr", "--size", "20000000"}, ms...)...)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "shrunk from 30M (31457280 bytes) to 19M (19922944 bytes)")
		assert.Contains(t, out, "rounded down")
	})
}
