package daemon

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"uraid/array"
)

// The sync worker's metrics: the job running (resync, check, repair, rebuild, or a reshape, whose
// done and total bytes are its cursor and end) and its progress,
// the last one's outcome, the region map's counts, and each member's share of the job's I/O.
var (
	descSyncAction   = prometheus.NewDesc("uraid_array_sync_action", "Sync job: 1 for the one running of idle, resync, check, repair, rebuild, reshape.", []string{"array", "action"}, nil)
	descSyncDone     = prometheus.NewDesc("uraid_array_sync_done_bytes", "Bytes of the array the running sync job has done (0 when idle).", labelsArray, nil)
	descSyncTotal    = prometheus.NewDesc("uraid_array_sync_total_bytes", "Bytes of the array the running sync job has to do (0 when idle).", labelsArray, nil)
	descSyncRate     = prometheus.NewDesc("uraid_array_sync_rate_bytes_per_second", "Rate of the running sync job since it began.", labelsArray, nil)
	descSyncMismatch = prometheus.NewDesc("uraid_array_sync_mismatch_bytes", "Bytes the running check or repair found to differ between copies.", labelsArray, nil)
	descSyncRepaired = prometheus.NewDesc("uraid_array_sync_repaired_bytes", "Bytes the running repair rewrote.", labelsArray, nil)
	descSyncWaiting  = prometheus.NewDesc("uraid_array_sync_waiting", "1 while a resync is needed but cannot run, or a reshape is paused, with why.", []string{"array", "reason"}, nil)
	descLastResult   = prometheus.NewDesc("uraid_array_sync_last_info", "How the last sync job ended: result is done, cancelled or failed.", []string{"array", "action", "result"}, nil)
	descLastEnded    = prometheus.NewDesc("uraid_array_sync_last_end_timestamp_seconds", "When the last sync job ended, in seconds since the epoch.", labelsArray, nil)
	descLastMismatch = prometheus.NewDesc("uraid_array_sync_last_mismatch_bytes", "Bytes the last check or repair found to differ between copies.", labelsArray, nil)
	descLastRepaired = prometheus.NewDesc("uraid_array_sync_last_repaired_bytes", "Bytes the last repair rewrote.", labelsArray, nil)
	descRegions      = prometheus.NewDesc("uraid_array_regions", "Regions of the region map by state: in_sync, dirty, trimmed, need_resync.", []string{"array", "state"}, nil)
	descRegionBytes  = prometheus.NewDesc("uraid_array_region_bytes", "Size of a region of the region map.", labelsArray, nil)

	descSyncReadBytes  = prometheus.NewDesc("uraid_member_sync_read_bytes_total", "Bytes the sync jobs read from the member.", labelsMember, nil)
	descSyncWriteBytes = prometheus.NewDesc("uraid_member_sync_write_bytes_total", "Bytes the sync jobs wrote to the member.", labelsMember, nil)
)

var syncActions = []string{array.SyncIdle, array.SyncResync, array.SyncCheck, array.SyncRepair, array.SyncRebuild, array.SyncReshape}

func describeSync(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSyncAction, descSyncDone, descSyncTotal, descSyncRate, descSyncMismatch,
		descSyncRepaired, descSyncWaiting, descLastResult, descLastEnded, descLastMismatch, descLastRepaired, descRegions,
		descRegionBytes, descSyncReadBytes, descSyncWriteBytes} {
		ch <- d
	}
}

// collectSync exports the sync job and the region map of an array that has them (raid1, raid10).
func collectSync(ch chan<- prometheus.Metric, st Status) {
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	if s := st.Sync; s != nil {
		for _, a := range syncActions {
			v := 0.0
			if s.Action == a {
				v = 1
			}
			gauge(descSyncAction, v, st.Name, a)
		}
		gauge(descSyncDone, float64(s.DoneBytes), st.Name)
		gauge(descSyncTotal, float64(s.TotalBytes), st.Name)
		gauge(descSyncRate, float64(s.RateBytesPerS), st.Name)
		gauge(descSyncMismatch, float64(s.MismatchBytes), st.Name)
		gauge(descSyncRepaired, float64(s.RepairedBytes), st.Name)
		if s.Waiting != "" {
			gauge(descSyncWaiting, 1, st.Name, s.Waiting)
		}
		if l := s.Last; l != nil {
			result := "done"
			switch {
			case l.Error != "":
				result = "failed"
			case l.Cancelled:
				result = "cancelled"
			}
			gauge(descLastResult, 1, st.Name, l.Action, result)
			gauge(descLastEnded, float64(l.Ended.UnixNano())/1e9, st.Name)
			gauge(descLastMismatch, float64(l.MismatchBytes), st.Name)
			gauge(descLastRepaired, float64(l.RepairedBytes), st.Name)
		}
	}
	if c := st.Regions; c != nil {
		for state, n := range map[string]int{"in_sync": c.InSync, "dirty": c.Dirty, "trimmed": c.Trimmed, "need_resync": c.NeedResync} {
			gauge(descRegions, float64(n), st.Name, state)
		}
		gauge(descRegionBytes, float64(c.RegionBytes), st.Name)
		for _, m := range st.Members {
			l := []string{st.Name, strconv.Itoa(m.Index), m.Path}
			ch <- prometheus.MustNewConstMetric(descSyncReadBytes, prometheus.CounterValue, float64(m.IO.SyncReadBytes), l...)
			ch <- prometheus.MustNewConstMetric(descSyncWriteBytes, prometheus.CounterValue, float64(m.IO.SyncWriteBytes), l...)
		}
	}
}
