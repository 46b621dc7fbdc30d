package raid

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
)

// TestRefusedFailLeavesStatesAlone: a refused `uraid fail` of the last copy decides on a copy of
// the member states; the live ones, which the queue goroutine serves by, never change. (It
// once stored MemberFailed into the live state to ask the question: a read in that moment found
// no copy, and a map flush marked the map degraded.)
func TestRefusedFailLeavesStatesAlone(t *testing.T) {
	a, paths := createArray(t, arrayCase{mapping.RAID10, mapping.Near2, 4, 64 << 10}, "")
	t.Cleanup(func() { a.Close() })
	require.NoError(t, a.FailMember(paths[1])) // member 0 now holds the last copy of its chunks
	var stop, changed atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if MemberState(a.state[0].Load()) != MemberActive {
				changed.Store(true)
			}
		}
	}()
	for range 20000 {
		require.ErrorIs(t, a.FailMember(paths[0]), ErrLastCopy)
		if changed.Load() {
			break
		}
	}
	stop.Store(true)
	<-done
	assert.False(t, changed.Load(), "a refused fail changed the live state of the member it refused")
	assert.Equal(t, MemberActive, MemberState(a.state[0].Load()))
}

// fileSums returns a digest of each file's whole contents.
func fileSums(t *testing.T, paths []string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%x", sha256.Sum256(b)))
	}
	return out
}

// TestAssembleRefusesMismatchedMember: a member too small for the array's data area, or whose
// superblock puts its data at another offset, is refused at assemble, by name, with what to do,
// and nothing is written to any member. (Assemble once served every member at the reference
// superblock's offset and never looked at sizes: such a member failed at its first I/O.)
func TestAssembleRefusesMismatchedMember(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "")
		need := int64(a.Superblock().DataOffset + a.Superblock().DataSize)
		require.NoError(t, a.Close())
		require.NoError(t, os.Truncate(paths[1], need-4096))
		before := fileSums(t, paths)
		_, err := Assemble("t", paths, Options{Queues: 1, Depth: 8})
		require.ErrorIs(t, err, ErrTooSmall)
		assert.Contains(t, err.Error(), paths[1])
		assert.Contains(t, err.Error(), "leave it out")
		assert.Equal(t, before, fileSums(t, paths), "a refused assemble wrote to a member")
	})
	t.Run("offset", func(t *testing.T) {
		a, paths := createArray(t, arrayCase{mapping.RAID1, mapping.NoLayout, 2, 0}, "")
		require.NoError(t, a.Close())
		f, err := os.OpenFile(paths[1], os.O_RDWR, 0)
		require.NoError(t, err)
		sb, err := ReadSuperblock(f)
		require.NoError(t, err)
		sb.DataOffset += 1 << 20
		require.NoError(t, WriteSuperblock(f, sb))
		require.NoError(t, f.Close())
		before := fileSums(t, paths)
		_, err = Assemble("t", paths, Options{Queues: 1, Depth: 8})
		require.ErrorIs(t, err, ErrGeometryMismatch)
		assert.Contains(t, err.Error(), "data offset")
		assert.Contains(t, err.Error(), paths[1])
		assert.Equal(t, before, fileSums(t, paths), "a refused assemble wrote to a member")
	})
}
