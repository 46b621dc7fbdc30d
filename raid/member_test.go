package raid

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
)

// TestOpenMemberWaitsForAHolderGoingAway: a member file another holder has locked is opened once
// that holder lets go, within BusyWait: a killed daemon's io_uring rings keep its members open
// for a moment after it is gone, and its successor must not take that for a live holder. (Found
// by the robustness harness: assemble after a kill found a member "in use".)
func TestOpenMemberWaitsForAHolderGoingAway(t *testing.T) {
	p := testutil.SparseFile(t, testutil.MemDir(t), "held", 16*mib)
	holder, err := OpenMember(p)
	require.NoError(t, err)
	waiting := make(chan struct{}, 1)
	busySleep = func(d time.Duration) {
		select {
		case waiting <- struct{}{}:
		default:
		}
		time.Sleep(d)
	}
	defer func() { busySleep = time.Sleep }()
	opened := make(chan error, 1)
	go func() {
		m, err := OpenMember(p)
		if err == nil {
			m.Close()
		}
		opened <- err
	}()
	testutil.Receive(t, waiting, "the second open to find the member busy and wait")
	require.NoError(t, holder.Close())
	require.NoError(t, <-opened)

	holder, err = OpenMember(p)
	require.NoError(t, err)
	defer holder.Close()
	old := BusyWait
	BusyWait = 0
	defer func() { BusyWait = old }()
	_, err = OpenMember(p)
	require.ErrorIs(t, err, ErrMemberBusy, "a holder that stays is still refused")
}
