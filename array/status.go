package array

import (
	"sync/atomic"
	"time"

	"uraid/discard"
	"uraid/latency"
	"uraid/raid"
)

// discardStats counts the array's discard requests as the kernel sent them, and the reads and
// writes that had to wait for a TRIM.
type discardStats struct {
	requests, bytes, memberRanges atomic.Uint64
	parkedReads, parkedWrites     atomic.Uint64
}

// Status is an array's state as `uraid status` and `uraid detail` show it and the control socket
// serves it. The JSON field names are a stable interface for scripts.
type Status struct {
	Name        string         `json:"name"`
	UUID        string         `json:"uuid"`
	Level       string         `json:"level"`            // mapping.Level.ShortName: "linear", "0", "1" or "10"
	Layout      string         `json:"layout,omitempty"` // "n2", "f2" or "o2"; only raid10 has one
	ChunkBytes  int64          `json:"chunk_bytes"`
	SizeBytes   int64          `json:"size_bytes"`
	Device      string         `json:"device"`
	State       string         `json:"state"` // clean, active, degraded or failed
	DiscardMode string         `json:"discard_mode"`
	Events      uint64         `json:"events"`
	CreateTime  time.Time      `json:"create_time"` // UTC, from the superblock
	PID         int            `json:"pid"`
	Members     []MemberStatus `json:"members"`
	Discard     DiscardTotals  `json:"discard"`
	// Regions counts the region map's regions by state, and Sync is the resync, check or repair
	// in progress and the last one's outcome, for arrays with copies (raid1, raid10).
	Regions *RegionCounts `json:"regions,omitempty"`
	Sync    *SyncStatus   `json:"sync,omitempty"`
	// Spares lists the hot spares' paths.
	Spares []string `json:"spares,omitempty"`

	// Unclean is true when this run started from an unclean end of the last (a daemon killed
	// or failed, members left dirty). Resync then says what became of the regions whose copies
	// may differ: "pending" or "running" while some need it, empty once none does.
	Unclean bool   `json:"unclean"`
	Resync  string `json:"resync,omitempty"`

	// ZeroCopy is true when member reads and writes use the request's own pages instead of a copy
	// through the server's buffers; ZeroCopyMode says how ("auto-buf-reg", "register" or "copy"),
	// ZeroCopyReason why not. CopyBufferBytes is the memory mapped for copies: 0 in zero-copy
	// mode, where the server holds no mapping of the data at all. Filled in by whoever serves the
	// device; all zero while none does.
	ZeroCopy        bool   `json:"zero_copy"`
	ZeroCopyMode    string `json:"zero_copy_mode,omitempty"`
	ZeroCopyReason  string `json:"zero_copy_reason,omitempty"`
	CopyBufferBytes int64  `json:"copy_buffer_bytes"`
	// BatchIO is true when the device's queues take and complete requests with the batch I/O
	// commands (UBLK_F_BATCH_IO: many requests per command) rather than one command per
	// request; BatchIOReason says why not. Filled in like ZeroCopy.
	BatchIO       bool   `json:"batch_io"`
	BatchIOReason string `json:"batch_io_reason,omitempty"`

	// ReadLatency, WriteLatency and DiscardLatency time the requests the kernel sent, from
	// arrival to completion, for the metrics; not in the JSON, whose readers have the metrics.
	ReadLatency    latency.Snapshot `json:"-"`
	WriteLatency   latency.Snapshot `json:"-"`
	DiscardLatency latency.Snapshot `json:"-"`
}

// MemberStatus is one member slot.
type MemberStatus struct {
	Path  string `json:"path"`
	Index int    `json:"index"`
	State string `json:"state"` // active, failed, missing or rebuilding
	// Replacement is the device a replace is rebuilding this member onto.
	Replacement string `json:"replacement,omitempty"`
	Kind        string `json:"kind"` // file or block
	SizeBytes   int64  `json:"size_bytes"`
	// DiscardGranularity is the unit the member trims in, 0 when it cannot discard: its share of
	// every discard is then skipped.
	DiscardGranularity int64 `json:"discard_granularity_bytes"`
	// TrimExclusive is true when the member's TRIMs stall its reads and writes (rotational, on a
	// libata port, or named by the admin): it trims only while no read or write waits.
	TrimExclusive bool `json:"trim_exclusive"`
	// TrimInFlight is how many TRIMs the member runs at once, 0 when it cannot discard.
	TrimInFlight int `json:"trim_inflight"`
	// TrimGapMS is the least rest between two TRIMs, learned or set by --trim-gap.
	TrimGapMS float64 `json:"trim_gap_ms"`
	// TrimLearned is what the member's lane measured and decided; TrimExclusive, TrimInFlight
	// and TrimGapMS are what it runs by (the flags win over what was learned). Absent for a
	// member that cannot discard.
	TrimLearned *TrimLearned        `json:"trim_learned,omitempty"`
	IO          MemberIO            `json:"io"`
	Discard     discard.MemberStats `json:"discard"`
	// ReadLatency and WriteLatency time the member's reads and writes, for the metrics.
	ReadLatency  latency.Snapshot `json:"-"`
	WriteLatency latency.Snapshot `json:"-"`
}

// MemberIO counts a member's reads and writes.
type MemberIO struct {
	Reads      uint64 `json:"reads"`
	Writes     uint64 `json:"writes"`
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
	Errors     uint64 `json:"errors"`
	// SyncReadBytes and SyncWriteBytes are the resync, check and repair's own I/O.
	SyncReadBytes  uint64 `json:"sync_read_bytes"`
	SyncWriteBytes uint64 `json:"sync_write_bytes"`
}

// DiscardTotals counts discards as the array received them.
type DiscardTotals struct {
	Requests     uint64 `json:"requests"`
	Bytes        uint64 `json:"bytes"`
	MemberRanges uint64 `json:"member_ranges"`
	// ParkedReads and ParkedWrites count reads of bytes with a discard pending and writes over a
	// TRIM in flight: they waited, off the queue, until the TRIM was done.
	ParkedReads  uint64 `json:"parked_reads"`
	ParkedWrites uint64 `json:"parked_writes"`
}

// Array states.
const (
	StateNameClean    = "clean"
	StateNameActive   = "active"
	StateNameDegraded = "degraded"
	StateNameFailed   = "failed"
)

// Status.Resync of a mirror some of whose regions' copies may disagree: the resync waits (for a
// member to come back), or runs.
const (
	ResyncPending = "pending"
	ResyncRunning = "running"
)

// Status reports the array's state and counters; device is the served block device path, or ""
// while none is.
func (a *Array) Status(device string, pid int) Status {
	sb := a.Superblock()
	st := Status{
		Name: a.Name, UUID: sb.ArrayUUID.String(), Level: sb.Level.ShortName(),
		ChunkBytes: int64(sb.ChunkSize), SizeBytes: a.Map().Size(), Device: device,
		DiscardMode: a.engine.Mode().String(), Events: sb.Events, CreateTime: time.Unix(0, sb.CreateTime).UTC(), PID: pid,
		Discard: DiscardTotals{
			Requests: a.discard.requests.Load(), Bytes: a.discard.bytes.Load(),
			MemberRanges: a.discard.memberRanges.Load(),
			ParkedReads:  a.discard.parkedReads.Load(), ParkedWrites: a.discard.parkedWrites.Load(),
		},
	}
	if sb.Level.HasLayout() {
		st.Layout = sb.Layout.String()
	}
	st.ReadLatency, st.WriteLatency = a.lat.read.Snapshot(), a.lat.write.Snapshot()
	st.DiscardLatency = a.lat.discard.Snapshot()
	st.Unclean = a.Unclean()
	switch {
	case !a.readable():
		st.State = StateNameFailed
	case a.Degraded():
		st.State = StateNameDegraded
	case sb.State == raid.StateDirty:
		st.State = StateNameActive
	default:
		st.State = StateNameClean
	}
	if _, ok := a.ReshapeStatus(); ok && a.regions == nil {
		ss := a.SyncStatus() // a raid0's reshape: its only job
		st.Sync = &ss
	}
	if a.regions != nil {
		c := a.regions.counts()
		st.Regions = &c
		ss := a.SyncStatus()
		st.Sync = &ss
		if c.NeedResync > 0 {
			st.Resync = ResyncPending
			if ss.Action == SyncResync {
				st.Resync = ResyncRunning
			}
		}
	}
	ds := a.engine.Stats()
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	for _, sp := range a.spares {
		st.Spares = append(st.Spares, sp.Path)
	}
	for i, m := range a.members {
		ms := MemberStatus{Index: i, State: MemberState(a.state[i].Load()).String()}
		if sh := a.shadowMembers[i]; sh != nil {
			ms.Replacement = sh.Path
		}
		if i < len(ds) {
			ms.Discard = ds[i]
		}
		// The settings the engine runs with, not a recomputation that could disagree with it.
		set := a.engine.Settings(i)
		ms.TrimExclusive = set.Exclusive
		ms.TrimInFlight = set.InFlight
		ms.TrimGapMS = float64(set.MinGap) / float64(time.Millisecond)
		if l, ok := a.engine.Learned(i); ok {
			ms.TrimLearned = newTrimLearned(l)
		}
		if m != nil {
			ms.DiscardGranularity = a.gran[i].Bytes
			ms.Path, ms.SizeBytes, ms.Kind = m.Path, m.Size, "file"
			if m.Block {
				ms.Kind = "block"
			}
		}
		s := &a.stats[i]
		ms.IO = MemberIO{
			Reads: s.reads.Load(), Writes: s.writes.Load(), ReadBytes: s.readBytes.Load(),
			WriteBytes: s.writeBytes.Load(), Errors: s.errors.Load(),
			SyncReadBytes: s.syncReadBytes.Load(), SyncWriteBytes: s.syncWriteBytes.Load(),
		}
		ms.ReadLatency, ms.WriteLatency = s.readLat.Snapshot(), s.writeLat.Snapshot()
		st.Members = append(st.Members, ms)
	}
	return st
}

// InService are the devices a successor must assemble from: the slots' members that take
// writes, a replace's new device, and the spares. A failed member is left out: it may no longer
// be readable, and assembling it could bring back data it missed.
func (st Status) InService() []string {
	var ps []string
	for _, m := range st.Members {
		if m.Path != "" && (m.State == MemberActive.String() || m.State == MemberRebuilding.String()) {
			ps = append(ps, m.Path)
		}
		if m.Replacement != "" {
			ps = append(ps, m.Replacement)
		}
	}
	return append(ps, st.Spares...)
}
