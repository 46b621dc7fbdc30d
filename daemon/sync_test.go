package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// syncFake is an array whose jobs the test drives: a wait returns once release is closed.
type syncFake struct {
	fakeArray
	startErr error
	repair   bool
	maxRate  int64
	release  chan struct{}
}

func (a *syncFake) StartCheck(repair bool, maxRate int64) error {
	a.repair, a.maxRate = repair, maxRate
	return a.startErr
}

func (a *syncFake) CancelCheck() (string, error) { return array.SyncCheck, nil }

func (a *syncFake) WaitSync(ctx context.Context) (array.SyncStatus, error) {
	select {
	case <-a.release:
		return array.SyncStatus{Action: array.SyncIdle, Last: &array.SyncResult{Action: array.SyncRepair, MismatchBytes: 1}}, nil
	case <-ctx.Done():
		return array.SyncStatus{}, errors.New("array t0: the daemon is stopping")
	}
}

func TestServeCheckCancelWait(t *testing.T) {
	useRunDir(t)
	s, err := Listen("t0")
	require.NoError(t, err)
	a := &syncFake{release: make(chan struct{})}
	s.Serve(a, prometheus.NewRegistry(), false)
	ctx := context.Background()
	cl := NewClient("t0")

	require.NoError(t, cl.Check(ctx, true, 50<<20))
	assert.True(t, a.repair)
	assert.Equal(t, int64(50<<20), a.maxRate)
	a.startErr = errors.New("array t0: a sync job is running (resync); wait for it: uraid wait t0")
	err = cl.Check(ctx, false, 0)
	require.Error(t, err)
	assert.Equal(t, a.startErr.Error(), err.Error(), "the daemon's reason, named once")

	what, err := cl.CancelCheck(ctx)
	require.NoError(t, err)
	assert.Equal(t, array.SyncCheck, what)

	got := make(chan array.SyncStatus, 1)
	go func() {
		st, err := cl.WaitSync(ctx)
		assert.NoError(t, err)
		got <- st
	}()
	close(a.release)
	st := <-got
	require.NotNil(t, st.Last)
	assert.Equal(t, array.SyncRepair, st.Last.Action)
	assert.Equal(t, int64(1), st.Last.MismatchBytes)

	// A wait in progress when the daemon shuts its socket ends with an error, not a hang.
	a.release = make(chan struct{})
	errc := make(chan error, 1)
	go func() { _, err := cl.WaitSync(ctx); errc <- err }()
	// Whether the request reaches the handler before the shutdown or not, the wait ends in an error.
	require.NoError(t, s.Close())
	assert.Error(t, <-errc)
}

func TestServeWithoutSync(t *testing.T) {
	useRunDir(t)
	s, err := Listen("t1")
	require.NoError(t, err)
	s.Serve(&fakeArray{}, prometheus.NewRegistry(), false)
	defer s.Close()
	err = NewClient("t1").Check(context.Background(), false, 0)
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "uraid restart t1")
}

func TestCollectorExportsSync(t *testing.T) {
	member := 1
	st := array.Status{Name: "m", State: array.StateNameActive,
		Regions: &array.RegionCounts{Regions: 64, RegionBytes: 1 << 20, InSync: 40, Dirty: 4, Trimmed: 20, NeedResync: 3},
		Sync: &array.SyncStatus{Action: array.SyncRebuild, Member: &member, DoneBytes: 10 << 20, TotalBytes: 64 << 20,
			RateBytesPerS: 1 << 20, Last: &array.SyncResult{Action: array.SyncCheck, Cancelled: true, MismatchBytes: 4096, Ended: time.Unix(100, 0)}},
		Members: []array.MemberStatus{{Path: "/dev/a", Index: 0, State: "active", IO: array.MemberIO{SyncReadBytes: 7, SyncWriteBytes: 9}}},
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(func() Status { return Status{Status: st} }))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&b, mf)
		require.NoError(t, err)
	}
	text := b.String()
	for _, want := range []string{
		`uraid_array_sync_action{action="rebuild",array="m"} 1`,
		`uraid_array_sync_action{action="idle",array="m"} 0`,
		`uraid_array_sync_done_bytes{array="m"} 1.048576e+07`,
		`uraid_array_sync_total_bytes{array="m"} 6.7108864e+07`,
		`uraid_array_sync_rate_bytes_per_second{array="m"} 1.048576e+06`,
		`uraid_array_sync_last_info{action="check",array="m",result="cancelled"} 1`,
		`uraid_array_sync_last_mismatch_bytes{array="m"} 4096`,
		`uraid_array_sync_last_end_timestamp_seconds{array="m"} 100`,
		`uraid_array_regions{array="m",state="need_resync"} 3`,
		`uraid_array_regions{array="m",state="trimmed"} 20`,
		`uraid_member_sync_write_bytes_total{array="m",member="0",path="/dev/a"} 9`,
	} {
		assert.Contains(t, text, want)
	}
}
