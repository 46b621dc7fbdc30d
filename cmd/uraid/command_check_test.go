package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"uraid/array"
)

func TestCheckUsage(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	for _, args := range [][]string{
		{"check"},
		{"check", "a", "b"},
		{"check", "--max-rate", "fast", "demo"},
		{"check", "--cancel", "--repair", "demo"},
		{"check", "--cancel", "--wait", "demo"},
		{"wait"},
	} {
		code, _, errOut := runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	code, _, errOut := runCLI(t, "check", "demo")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not running")
	code, _, errOut = runCLI(t, "wait", "demo")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not running")
}

func TestRateFlag(t *testing.T) {
	for in, want := range map[string]int64{"50M": 50 << 20, "50M/s": 50 << 20, "1GiB/s": 1 << 30, "4096": 4096} {
		var f rateFlag
		assert.NoError(t, f.Set(in), in)
		assert.Equal(t, want, int64(f), in)
	}
	var f rateFlag
	assert.ErrorContains(t, f.Set("-1M"), "e.g. 50M")
}

func TestSyncText(t *testing.T) {
	slot := 2
	st := trimStatus()
	st.Regions = &array.RegionCounts{Regions: 1024, RegionBytes: 1 << 20, InSync: 1000, Dirty: 20, Trimmed: 4, NeedResync: 0}
	st.Sync = &array.SyncStatus{Action: array.SyncRebuild, Member: &slot, DoneBytes: 256 << 20, TotalBytes: 1 << 30, RateBytesPerS: 16 << 20}
	var out bytes.Buffer
	writeStatusLine(&out, st)
	assert.Contains(t, out.String(), "      rebuild of member 2 = 25.0% (256M/1G) 16M/s, eta 48s\n")

	st.Sync = &array.SyncStatus{Action: array.SyncIdle, Waiting: "a member is missing",
		Last: &array.SyncResult{Action: array.SyncRepair, DoneBytes: 4 << 20, Seconds: 1.5, MismatchBytes: 1, RepairedBytes: 4096,
			MismatchRegions: []int{2, 9}, Ended: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	out.Reset()
	writeStatusLine(&out, st)
	assert.Contains(t, out.String(), "      resync pending: a member is missing\n")
	out.Reset()
	writeDetail(&out, st)
	assert.Contains(t, out.String(), "           Sync : resync pending: a member is missing\n")
	assert.Contains(t, out.String(), "      Last Sync : repair done; 4M in 1.5s, 1 byte differ (regions 2 9), 4K repaired; ended 2026-01-02T03:04:05Z\n")
	assert.Contains(t, out.String(), "        Regions : 1024 of 1M: 1000 in sync, 20 dirty, 4 trimmed, 0 need resync\n")

	st.Sync = &array.SyncStatus{Action: array.SyncCheck, DoneBytes: 1 << 20, TotalBytes: 4 << 20, MismatchBytes: 4096}
	assert.Equal(t, "check = 25.0% (1M/4M) 0/s, eta unknown, 4K differ", syncProgress(st.Sync))
	assert.Empty(t, syncProgress(&array.SyncStatus{Action: array.SyncIdle}))
	assert.Empty(t, syncProgress(nil))
}

func TestWaitReport(t *testing.T) {
	var out bytes.Buffer
	assert.NoError(t, reportLast(&out, "demo", array.SyncStatus{Last: &array.SyncResult{Action: array.SyncResync, DoneBytes: 1 << 20}}))
	assert.Contains(t, out.String(), "demo: resync done; 1M")
	err := reportLast(&out, "demo", array.SyncStatus{Last: &array.SyncResult{Action: array.SyncCheck, Cancelled: true}})
	assert.ErrorContains(t, err, "cancelled")
	err = reportLast(&out, "demo", array.SyncStatus{Last: &array.SyncResult{Action: array.SyncRebuild, Error: "member 0: EIO"}})
	assert.ErrorContains(t, err, "rebuild failed: member 0: EIO")
}
