package raid

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/failpoint"
	"uraid/mapping"
	"uraid/ublk"
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

// setHook sets a failpoint hook for the test's length.
func setHook(t *testing.T, h failpoint.Hook) {
	t.Helper()
	old := failpoint.Set(h)
	t.Cleanup(func() { failpoint.Set(old) })
}

// TestRebuildTrimRace: a write that lands in a trimmed region just before the rebuild takes it
// is on the rebuilt member afterwards. (The rebuild once decided that the region was trimmed
// before it locked it, then punched the write out of the new member: a hole where the other
// copy had data, in a region later counted in sync.)
func TestRebuildTrimRace(t *testing.T) {
	m := newMirrorWith(t, 0)
	rs := m.a.regions.m.RegionSize()
	require.NoError(t, m.a.FailMember(m.paths[1]))
	require.NoError(t, m.a.RemoveMember(m.paths[1]))
	data := bytes.Repeat([]byte{0x5a}, 64<<10)
	var hits atomic.Int32
	var werr error
	setHook(t, func(name string) {
		if name != FailpointRebuildRegion || hits.Add(1) != 3 {
			return
		}
		// The rebuild is about to take region 2, trimmed until this write.
		copy(m.h.Buf(0), data)
		res, err := m.h.Do(ublk.HarnessRequest{Op: ublk.OpWrite, Offset: 2 * rs, Length: int64(len(data))})
		if err == nil && res != int32(len(data)) {
			err = fmt.Errorf("write result %d", res)
		}
		werr = err
	})
	fresh := blank(t, "new")
	_, err := m.a.AddMember(fresh, false)
	require.NoError(t, err)
	m.a.WaitSync()
	require.NoError(t, werr)
	require.GreaterOrEqual(t, hits.Load(), int32(3))
	require.Empty(t, m.a.SyncStatus().Last.Error)
	require.NoError(t, m.a.FailMember(m.paths[0]))
	assert.Equal(t, data, do(t, m.h, ublk.OpRead, 2*rs, make([]byte, len(data))), "the rebuilt member lost the write")
}
