package tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/discard/simssd"
)

// TestE2EArrayExclusiveMember: a member named with --trim-exclusive trims one TRIM at a time,
// status says so, and while it has TRIMs to do the array reads its mirror instead, so no read
// waits behind a TRIM; once it is done, reads come back to it.
func TestE2EArrayExclusiveMember(t *testing.T) {
	uraidBin(t)
	sata, m0 := startSimSSD(t, simssd.Config{Size: 64 << 20, Exclusive: true, TrimLatency: 3 * time.Second})
	members := []string{m0}
	for range 3 {
		_, p := startSimSSD(t, simssd.Config{Size: 64 << 20})
		members = append(members, p)
	}
	args := append([]string{"create", "excl", "--level", "10", "--chunk", "64K", "--discard", "async",
		"--trim-exclusive", m0}, members...)
	dev := strings.TrimSpace(uraid(t, args...))
	t.Cleanup(func() { uraid(t, "stop", "excl") })

	st := arrayDetail(t, "excl")
	require.Len(t, st.Members, 4)
	for i, m := range st.Members {
		assert.Equal(t, i == 0, m.TrimExclusive, "member %d exclusive", i)
		assert.Equal(t, map[bool]int{true: 1, false: 4}[i == 0], m.TrimInFlight, "member %d TRIMs at once", i)
	}

	// Trim the second half; read the first, which member 0 holds a copy of too.
	half := st.SizeBytes / 2
	sh(t, "blkdiscard", "-o", fmt.Sprint(half), "-l", fmt.Sprint(half), dev)
	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(buf)
	readFirstHalf := func() {
		for i := range int64(200) {
			_, err := f.ReadAt(buf, (i*40961)%half&^4095)
			require.NoError(t, err)
		}
	}
	pending := func() bool {
		d := arrayDetail(t, "excl").Members[0].Discard
		return d.Queued+d.InFlight > 0
	}
	require.True(t, pending(), "member 0 should still be trimming (3 s per TRIM)")
	before := sata.Counters()
	readFirstHalf()
	require.True(t, pending(), "the reads outlasted member 0's TRIMs: the check below would prove nothing")
	after := sata.Counters()
	assert.Equal(t, before.Reads, after.Reads, "a read went to the member with TRIMs pending")
	assert.Zero(t, after.Stalled, "a read or write waited behind a TRIM")
	assert.EqualValues(t, 1, after.MaxConcurrentTrims, "an exclusive member runs one TRIM at a time")

	require.Eventually(t, func() bool { return !pending() }, slow*10*time.Second, 100*time.Millisecond)
	readFirstHalf()
	assert.Greater(t, sata.Counters().Reads, after.Reads, "with its TRIMs done, member 0 serves reads again")
}
