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

	"uraid/simssd"
)

// TestE2EArrayExclusiveMember: a member named with --trim-exclusive trims one TRIM at a time,
// status says so, and while it has TRIMs to do the array reads its mirror instead, so no read
// waits behind a TRIM; once it is done, reads come back to it. Member 0's TRIMs are held at its
// gate while the reads run, so they run while it has TRIMs to do however slow the machine is.
func TestE2EArrayExclusiveMember(t *testing.T) {
	uraidBin(t)
	sata, m0 := startSimSSD(t, simssd.Config{Size: 64 << 20, Exclusive: true})
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

	// Trim four separate MiB of the second half, so that member 0 has several TRIMs to do; read
	// the first half, which member 0 holds a copy of too.
	holdTrims(t, sata)
	half := st.SizeBytes / 2
	for i := range int64(4) {
		sh(t, "blkdiscard", "-o", fmt.Sprint(half+i*(4<<20)), "-l", fmt.Sprint(1<<20), dev)
	}
	require.NoError(t, sata.WaitHeld(patient(t), 1), "member 0 never started a TRIM")
	d0 := arrayDetail(t, "excl").Members[0].Discard
	assert.Equal(t, 1, d0.InFlight, "an exclusive member runs one TRIM at a time")
	assert.Positive(t, d0.Queued, "member 0 should have TRIMs queued behind the held one")

	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	buf := alignedBuf(4096)
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
	before := sata.Counters()
	readFirstHalf()
	after := sata.Counters()
	assert.Equal(t, before.Reads, after.Reads, "a read went to the member with TRIMs pending")
	assert.EqualValues(t, 1, after.Held, "member 0's TRIM is still held: the reads ran while it had TRIMs to do")

	sata.Release()
	require.Eventually(t, func() bool { return !pending() }, slow*10*time.Second, 100*time.Millisecond,
		"member 0's TRIMs did not finish once released")
	assert.EqualValues(t, 1, sata.Counters().MaxConcurrentTrims, "an exclusive member runs one TRIM at a time")
	readFirstHalf()
	assert.Greater(t, sata.Counters().Reads, after.Reads, "with its TRIMs done, member 0 serves reads again")
}
