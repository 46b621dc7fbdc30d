package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"uraid/array"
	"uraid/daemon"
	"uraid/discard"
	"uraid/discard/learn"
	"uraid/mapping"
	"uraid/monitor"
	"uraid/raid"
	"uraid/ublk"
)

// The JSON views are an interface scripts code against: these tests pin them byte for byte.
// After a deliberate change, regenerate with `go test ./cmd/uraid -run Golden -update`, review the
// diff, and bump daemon.Schema if a field was renamed, removed or changed type or meaning.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./cmd/uraid -run 'Golden|ExitCodes' -update")
	assert.Equal(t, string(want), string(got), "%s changed: if that is meant, run go test ./cmd/uraid -run 'Golden|ExitCodes' -update and bump daemon.Schema for a breaking change", path)
}

func encoded(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, writeJSON(&b, v))
	return b.Bytes()
}

var goldenTime = time.Date(2026, 11, 30, 15, 38, 31, 0, time.UTC)

// goldenStatus has every field set, so that the golden file shows each one.
func goldenStatus() daemon.Status {
	member := 1
	return daemon.Status{
		Status: array.Status{
			Name: "demo", UUID: "8d6f0a52-3c1e-4f55-9a0e-2f1b7c9d4e10", Level: "10", Layout: "n2",
			ChunkBytes: 512 << 10, SizeBytes: 2145386496, Device: "/dev/ublkb0", State: array.StateNameDegraded,
			DiscardMode: "async", Events: 7, CreateTime: goldenTime, PID: 123,
			Members: []array.MemberStatus{
				{Path: "/var/lib/uraid/demo/m0", Index: 0, State: "active", Kind: "file", SizeBytes: 1 << 30,
					DiscardGranularity: 4096, TrimInFlight: 1,
					IO: array.MemberIO{Reads: 41, Writes: 346, ReadBytes: 1234, WriteBytes: 5678, Errors: 1,
						SyncReadBytes: 4096, SyncWriteBytes: 8192},
					Discard: discard.MemberStats{Member: 0, Requests: 2, Bytes: 133169152, Queued: 1, QueuedBytes: 4096,
						InFlight: 1, Issued: 2, IssuedBytes: 133169152, Completed: 2, Errors: 0, Merged: 1,
						CancelledBytes: 4096, Latency: discard.Latency{P50: 180, P99: 950, Max: 1200}}},
				{Path: "/dev/sdb", Index: 1, State: "rebuilding", Replacement: "/dev/sdc", Kind: "block",
					SizeBytes: 1 << 30, DiscardGranularity: 4096, TrimExclusive: true, TrimInFlight: 1, TrimGapMS: 32,
					TrimLearned: &array.TrimLearned{Decision: learn.Decision{Exclusive: true, InFlight: 1, Gap: 32 * time.Millisecond, GapMS: 32,
						Basis: learn.Basis{IOCleanUS: 180, IOCleanN: 400, IOOverlappedUS: 41000, IOOverlappedN: 12, Trims: 96, TrimUS: 2100,
							TrimIsolatedUS: 1100, TrimBackToBackUS: 98000, GapPenalizedBelowMS: 32, SerialSlope: 0.93, Probes: 2, Changes: 3}},
						Overridden: []string{"exclusive overridden by --trim-exclusive"}}},
			},
			Discard: array.DiscardTotals{Requests: 2, Bytes: 266338304, MemberRanges: 8, ParkedReads: 3, ParkedWrites: 4},
			Regions: &array.RegionCounts{Regions: 32, RegionBytes: 64 << 20, InSync: 28, Dirty: 2, Trimmed: 1, NeedResync: 1},
			Sync: &array.SyncStatus{Action: array.SyncRebuild, Member: &member, DoneBytes: 1 << 20, TotalBytes: 1 << 30,
				RateBytesPerS: 50 << 20, Waiting: "", Last: &array.SyncResult{Action: "check", Ended: goldenTime.Add(time.Hour),
					Seconds: 12.5, DoneBytes: 1 << 30, MismatchBytes: 4096, MismatchRegions: []int{3}, Error: ""}},
			Spares:  []string{"/dev/sdd"},
			Unclean: true, Resync: array.ResyncPending,
			ZeroCopy: false, ZeroCopyMode: "copy", ZeroCopyReason: "kernel 6.12 lacks UBLK_F_AUTO_BUF_REG",
			BatchIO: false, BatchIOReason: "kernel 6.12 lacks UBLK_F_BATCH_IO (Linux 6.19)",
			CopyBufferBytes: 1 << 20,
		},
		Failure:  "",
		Recovery: daemon.RecoveryStatus{Enabled: true, Reissue: true, Count: 1, LastExit: "daemon 812 died"},
		Version:  "0f3c",
	}
}

// goldenEntries are one running array and one of each kind of leftover.
func goldenEntries() []daemon.Entry {
	st := goldenStatus()
	dead := 1 << 30 // no such process
	return []daemon.Entry{
		{Name: "demo", Status: &st},
		{Name: "gone", Err: daemon.ErrNotRunning,
			Record:    &daemon.Record{Version: 1, Name: "gone", PID: dead, DeviceID: 3, Device: "/dev/ublkb3"},
			DeviceErr: unix.ENODEV},
		{Name: "quiet", Err: daemon.ErrNotRunning,
			Record: &daemon.Record{Version: 1, Name: "quiet", PID: dead, DeviceID: 1, Device: "/dev/ublkb1"},
			Device: &ublk.DeviceInfo{ID: 1, State: "quiesced"}},
		{Device: &ublk.DeviceInfo{ID: 5, State: "dead"}},
	}
}

func TestGoldenDetailJSON(t *testing.T) {
	goldenFile(t, "detail.json", encoded(t, stamped(goldenStatus())))
}

func TestGoldenStatusJSON(t *testing.T) {
	goldenFile(t, "status.json", encoded(t, entriesJSON(goldenEntries())))
}

func TestGoldenListJSON(t *testing.T) {
	goldenFile(t, "list.json", encoded(t, listJSON(goldenEntries())))
}

func TestGoldenExamineJSON(t *testing.T) {
	sb := &raid.Superblock{Name: "demo", Level: mapping.RAID10, Layout: mapping.Near2, ChunkSize: 512 << 10,
		Members: 4, Index: 2, DataOffset: 1 << 20, DataSize: 1<<30 - 1<<20, Events: 7, State: raid.StateClean,
		CreateTime: goldenTime.UnixNano(), UpdateTime: goldenTime.Add(time.Minute).UnixNano()}
	goldenFile(t, "examine.json", encoded(t, examineOf("/dev/sdb", sb)))
}

// TestGoldenEventJSON pins the lines of uraid monitor --json: an event with every field set,
// and one the monitor makes itself.
func TestGoldenEventJSON(t *testing.T) {
	var b bytes.Buffer
	p := &eventPrinter{w: &b, json: true}
	slot := 1
	require.NoError(t, p.print(monitor.Event{Schema: daemon.Schema, Event: array.Event{Time: goldenTime, Array: "demo",
		Type: array.EventSyncFinished, Member: &slot, Path: "/dev/sdc", Action: array.SyncRebuild, DoneBytes: 1 << 30,
		TotalBytes: 1 << 30, MismatchBytes: 4096, RepairedBytes: 4096, Outcome: array.OutcomeFailed,
		Error: "read member 0: input/output error", Device: "/dev/ublkb0", Message: "rebuild of member 1 failed"}}))
	require.NoError(t, p.print(monitor.Event{Schema: daemon.Schema, Event: array.Event{Time: goldenTime, Array: "demo",
		Type: monitor.EventDaemonLost, Device: "/dev/ublkb0",
		Message: "its daemon went without a stop: quiesced: daemon 812 was killed; uraid recover demo takes it over"}}))
	goldenFile(t, "events.jsonl", b.Bytes())
}

// TestJSONNamingRule checks every key of every golden file against the rule docs/cli.md states:
// snake_case, and so no key that a later field could collide with by case.
func TestJSONNamingRule(t *testing.T) {
	for _, f := range []string{"detail.json", "status.json", "list.json", "examine.json", "events.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		require.NoError(t, err)
		var v any
		if filepath.Ext(f) == ".jsonl" {
			var lines []any
			for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
				var o any
				require.NoError(t, json.Unmarshal(line, &o), f)
				lines = append(lines, o)
			}
			v = lines
		} else {
			require.NoError(t, json.Unmarshal(b, &v))
		}
		walkKeys(v, func(k string) {
			for _, c := range k {
				assert.True(t, c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'), "%s: key %q is not snake_case", f, k)
			}
		})
		// Every object a command prints carries the schema.
		objs := []any{v}
		if l, ok := v.([]any); ok {
			objs = l
		}
		for _, o := range objs {
			assert.EqualValues(t, daemon.Schema, o.(map[string]any)["schema"], f)
		}
	}
}

func walkKeys(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			f(k)
			walkKeys(x, f)
		}
	case []any:
		for _, x := range v {
			walkKeys(x, f)
		}
	}
}
