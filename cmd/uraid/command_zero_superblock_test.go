package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/raid"
)

// fileBytes reads the whole file.
func fileBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// TestZeroSuperblockCLI: zero-superblock erases the superblock block of each member and nothing
// else; it refuses, writing to no device, a device without a uraid superblock (unless --force),
// a device named twice, and a member another uraid process holds, as a running array's daemon does.
func TestZeroSuperblockCLI(t *testing.T) {
	old := raid.BusyWait
	raid.BusyWait = 10 * time.Millisecond
	t.Cleanup(func() { raid.BusyWait = old })
	ms := memberFiles(t, 2, 8<<20)
	blank := memberFiles(t, 1, 8<<20)[0]
	cms, _, err := createOnly(ms)
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	before := [][]byte{fileBytes(t, ms[0]), fileBytes(t, ms[1]), fileBytes(t, blank)}
	unchanged := func(t *testing.T) {
		t.Helper()
		assert.Equal(t, before, [][]byte{fileBytes(t, ms[0]), fileBytes(t, ms[1]), fileBytes(t, blank)}, "a refused zero-superblock changed a device")
	}

	t.Run("refusals", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
			code int
			msg  string
		}{
			{"no device", nil, exitUsage, "requires at least 1 arg"},
			{"no superblock", []string{ms[0], blank}, exitError, blank + ": carries no uraid superblock: nothing to erase"},
			{"twice", []string{ms[0], ms[1], ms[0]}, exitError, "list each device once"},
			{"absent", []string{ms[0], ms[1] + ".nope"}, exitError, "does not exist: nothing erased"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				code, out, errOut := runCLI(t, append([]string{"zero-superblock"}, tt.args...)...)
				assert.Equal(t, tt.code, code, errOut)
				assert.Empty(t, out)
				assert.Contains(t, errOut, tt.msg)
				unchanged(t)
			})
		}
	})

	t.Run("held by a running array", func(t *testing.T) {
		held, err := raid.OpenMember(ms[1])
		require.NoError(t, err)
		defer held.Close()
		code, _, errOut := runCLI(t, "zero-superblock", ms[0], ms[1])
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, "another uraid process holds it")
		assert.Contains(t, errOut, "stop the array first")
		unchanged(t)
	})

	t.Run("erases", func(t *testing.T) {
		code, out, errOut := runCLI(t, "zero-superblock", ms[0], ms[1])
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, ms[0]+": superblock erased (member 0 of array arr")
		assert.Contains(t, out, ms[1]+": superblock erased (member 1 of array arr")
		for i, p := range ms {
			got := fileBytes(t, p)
			want := append([]byte(nil), before[i]...)
			copy(want[raid.SuperblockOffset:raid.SuperblockOffset+raid.SuperblockSize], make([]byte, raid.SuperblockSize))
			assert.Equal(t, want, got, "only the superblock block is zeroed")
		}
		code, _, errOut = runCLI(t, "examine", ms[0])
		assert.Equal(t, exitError, code)
		assert.Contains(t, errOut, "not a uraid member")
	})

	t.Run("force", func(t *testing.T) {
		code, out, errOut := runCLI(t, "zero-superblock", "--force", blank)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "superblock erased (no uraid superblock)")
		assert.Equal(t, before[2], fileBytes(t, blank), "a blank stays blank")
	})
}
