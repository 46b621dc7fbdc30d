package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil/raidtest"
	"uraid/mapping"
	"uraid/raid"
	"uraid/reshape"
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
			{"no size", []string{"arr", ms[0]}, exitUsage, "--size, --copies or --add is required"},
			{"size and add", []string{"arr", "--size", "max", "--add", ms[0], ms[1]}, exitUsage, "give one"},
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

// A stopped raid1 gains a copy in place: the device named with --add becomes its spare, which
// fills the new slot when the array is assembled; refusals change nothing.
func TestGrowCopiesCLI(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", filepath.Join(t.TempDir(), "run"))
	require.NoError(t, os.Mkdir(os.Getenv("URAID_RUN_DIR"), 0o700))
	ms := memberFiles(t, 4, 8<<20)
	small := memberFiles(t, 1, 1<<20)[0]
	cms, _, err := raid.Create(raid.CreateOptions{Name: "mir", Level: mapping.RAID1, Members: ms[:2]})
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	sbOf := func(p string) *raid.Superblock { return raidtest.Superblock(t, p) }
	before := [][]byte{fileBytes(t, ms[0]), fileBytes(t, ms[1]), fileBytes(t, ms[2]), fileBytes(t, small)}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--copies", "3", "--size", "max"}, exitUsage, "give one"},
		{[]string{"--add", ms[2]}, exitError, "add a copy with --copies N --add DEV"},
		{[]string{"--copies", "0"}, exitUsage, "at least one copy"},
		{[]string{"--copies", "2"}, exitError, "keeps 2 copies already"},
		{[]string{"--copies", "3", "--add", small}, exitError, "too small"},
		{[]string{"--copies", "1"}, exitError, "uraid fail, then uraid remove"},
	} {
		code, _, errOut := runCLI(t, append(append([]string{"grow", "mir"}, tt.args...), ms[:2]...)...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, errOut)
		assert.Contains(t, errOut, tt.msg, tt.args)
	}
	for i, p := range []string{ms[0], ms[1], ms[2], small} {
		assert.Equal(t, before[i], fileBytes(t, p), "a refusal changed %s", p)
	}

	code, out, errOut := runCLI(t, "grow", "mir", "--copies", "3", "--add", ms[2], ms[0], ms[1])
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "uraid: array mir: 3 copies (was 2); "+ms[2]+" fills a new slot by a rebuild (uraid wait mir)")
	for _, p := range ms[:2] {
		assert.Equal(t, uint32(3), sbOf(p).Members, p)
	}
	assert.Equal(t, raid.RoleSpare, sbOf(ms[2]).Role)
	assert.Equal(t, uint32(3), sbOf(ms[2]).Members)

	code, out, errOut = runCLI(t, "grow", "mir", "--copies", "4", "--json", ms[0], ms[1], ms[2])
	require.Equal(t, exitError, code, out)
	assert.Contains(t, errOut, "slot 2 is empty already: fill it (uraid add) first")
}

// A stopped linear array takes a member in place: the array grows by its data size; refusals
// change nothing.
func TestGrowAppendCLI(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", filepath.Join(t.TempDir(), "run"))
	require.NoError(t, os.Mkdir(os.Getenv("URAID_RUN_DIR"), 0o700))
	ms := memberFiles(t, 3, 8<<20)
	small := memberFiles(t, 1, 1<<20)[0]
	cms, _, err := raid.Create(raid.CreateOptions{Name: "cat", Level: mapping.Linear, Members: ms[:2]})
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	before := [][]byte{fileBytes(t, ms[0]), fileBytes(t, ms[1]), fileBytes(t, ms[2]), fileBytes(t, small)}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--add", small}, exitError, "too small"},
		{[]string{"--add", ms[1]}, exitError, "a member already"},
		{[]string{"--add", ms[2], "--add", ms[2]}, exitError, "named twice"},
	} {
		code, _, errOut := runCLI(t, append(append([]string{"grow", "cat"}, tt.args...), ms[:2]...)...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, errOut)
		assert.Contains(t, errOut, tt.msg, tt.args)
	}
	for i, p := range []string{ms[0], ms[1], ms[2], small} {
		assert.Equal(t, before[i], fileBytes(t, p), "a refusal changed %s", p)
	}

	code, out, errOut := runCLI(t, "grow", "cat", "--add", ms[2], "--json", ms[0], ms[1])
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"old_members": 2`)
	assert.Contains(t, out, `"new_members": 3`)
	for i, p := range ms {
		sb := raidtest.Superblock(t, p)
		assert.Equal(t, uint32(3), sb.Members, p)
		assert.Equal(t, uint32(i), sb.Index, p)
	}
	assert.Equal(t, raidtest.Superblock(t, ms[0]).Events, raidtest.Superblock(t, ms[2]).Events)
}

// A stopped raid10 gains two members by reshape; refusals change nothing.
func TestGrowAddCLI(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", filepath.Join(t.TempDir(), "run"))
	require.NoError(t, os.Mkdir(os.Getenv("URAID_RUN_DIR"), 0o700))
	ms := memberFiles(t, 6, 8<<20)
	cms, _, err := raid.Create(raid.CreateOptions{Name: "wide", Level: mapping.RAID10, Layout: mapping.Near2, Chunk: 64 << 10, Members: ms[:4]})
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	before := make([][]byte, len(ms))
	for i, p := range ms {
		before[i] = fileBytes(t, p)
	}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--add", ms[4], "--size", "max"}, exitUsage, "--size and --add: give one"},
		{[]string{"--add", ms[0]}, exitError, "named twice"},
	} {
		code, _, errOut := runCLI(t, append(append([]string{"grow", "wide"}, tt.args...), ms[:4]...)...)
		assert.Equal(t, tt.code, code, "%v: %s", tt.args, errOut)
		assert.Contains(t, errOut, tt.msg, tt.args)
	}
	for i, p := range ms {
		assert.Equal(t, before[i], fileBytes(t, p), "a refusal changed %s", p)
	}
	code, out, errOut := runCLI(t, append([]string{"grow", "wide", "--add", ms[4], "--add", ms[5]}, ms[:4]...)...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "uraid: array wide: reshaped from 4 to 6 members, 14M (14680064 bytes) to 21M (22020096 bytes)")
	for i, p := range ms {
		sb := raidtest.Superblock(t, p)
		assert.Equal(t, uint32(6), sb.Members, p)
		assert.Equal(t, uint32(i), sb.Index, p)
		assert.Nil(t, sb.Reshape, p)
	}
}

// examine shows a reshape a member's superblock carries.
func TestExamineReshape(t *testing.T) {
	ms := memberFiles(t, 4, 8<<20)
	cms, sbs, err := raid.Create(raid.CreateOptions{Name: "mid", Level: mapping.RAID0, Chunk: 64 << 10, Members: ms})
	require.NoError(t, err)
	sb := *sbs[0]
	sb.Members, sb.Slots = 5, nil
	sb.Reshape = &raid.ReshapeInfo{OldMembers: 4, WindowKiB: 1024, State: reshape.State{Cursor: 1 << 20}}
	require.NoError(t, raid.WriteSuperblock(cms[0].File, &sb))
	for _, m := range cms {
		m.Close()
	}
	code, out, errOut := runCLI(t, "examine", ms[0])
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "Reshape : 4 to 5 members, new layout below 1048576 bytes, backup of 0 bytes, done false")
	code, out, errOut = runCLI(t, "examine", "--json", ms[0])
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"reshape": {`)
	assert.Contains(t, out, `"cursor_bytes": 1048576`)
}
