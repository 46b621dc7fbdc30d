package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"uraid/array"
	"uraid/daemon"
)

// syncProgress is a running job as the status line shows it, mdstat-like: action, percent, done
// of total, rate and time left; "" when none runs.
func syncProgress(s *array.SyncStatus) string {
	if s == nil || s.Action == "" || s.Action == array.SyncIdle {
		return ""
	}
	action := s.Action
	if s.Member != nil {
		action += fmt.Sprintf(" of member %d", *s.Member)
	}
	pct := 0.0
	if s.TotalBytes > 0 {
		pct = 100 * float64(s.DoneBytes) / float64(s.TotalBytes)
	}
	eta := "unknown"
	if s.RateBytesPerS > 0 && s.TotalBytes >= s.DoneBytes {
		eta = (time.Duration(float64(s.TotalBytes-s.DoneBytes)/float64(s.RateBytesPerS)) * time.Second).Round(time.Second).String()
	}
	out := fmt.Sprintf("%s = %.1f%% (%s/%s) %s, eta %s", action, pct, sizeText(s.DoneBytes), sizeText(s.TotalBytes), rateText(s.RateBytesPerS), eta)
	if s.Action == array.SyncCheck || s.Action == array.SyncRepair {
		out += fmt.Sprintf(", %s differ", sizeText(s.MismatchBytes))
		if s.Action == array.SyncRepair {
			out += fmt.Sprintf(", %s repaired", sizeText(s.RepairedBytes))
		}
	}
	return out
}

// writeSyncLine adds the running job, or why a needed resync waits, under an array's status line.
func writeSyncLine(w io.Writer, st daemon.Status) {
	if p := syncProgress(st.Sync); p != "" {
		fmt.Fprintf(w, "      %s\n", p)
	} else if st.Sync != nil && st.Sync.Waiting != "" {
		fmt.Fprintf(w, "      resync pending: %s\n", st.Sync.Waiting)
	}
}

// writeSyncDetail adds the sync block to detail: the running job, the last one's result, the
// region map's counts.
func writeSyncDetail(row func(k, v string), st daemon.Status) {
	if st.Sync != nil {
		now := syncProgress(st.Sync)
		switch {
		case now != "":
		case st.Sync.Waiting != "":
			now = "resync pending: " + st.Sync.Waiting
		default:
			now = "idle"
		}
		row("Sync", now)
		if l := st.Sync.Last; l != nil {
			row("Last Sync", lastText(l))
		}
	}
	if c := st.Regions; c != nil {
		row("Regions", fmt.Sprintf("%d of %s: %d in sync, %d dirty, %d trimmed, %d need resync",
			c.Regions, formatSize(c.RegionBytes), c.InSync, c.Dirty, c.Trimmed, c.NeedResync))
	}
}

// lastText is how a job ended, in one line.
func lastText(l *array.SyncResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s ", l.Action)
	switch {
	case l.Error != "":
		fmt.Fprintf(&b, "failed: %s;", l.Error)
	case l.Cancelled:
		b.WriteString("cancelled;")
	default:
		b.WriteString("done;")
	}
	fmt.Fprintf(&b, " %s in %s", sizeText(l.DoneBytes), (time.Duration(l.Seconds * float64(time.Second))).Round(time.Millisecond))
	if l.Action == array.SyncCheck || l.Action == array.SyncRepair {
		fmt.Fprintf(&b, ", %s differ", sizeText(l.MismatchBytes))
		if len(l.MismatchRegions) > 0 {
			regs := make([]string, len(l.MismatchRegions))
			for i, r := range l.MismatchRegions {
				regs[i] = fmt.Sprint(r)
			}
			fmt.Fprintf(&b, " (regions %s)", strings.Join(regs, " "))
		}
		if l.Action == array.SyncRepair {
			fmt.Fprintf(&b, ", %s repaired", sizeText(l.RepairedBytes))
		}
	}
	if !l.Ended.IsZero() {
		fmt.Fprintf(&b, "; ended %s", l.Ended.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// sizeText is a byte count for progress: exact below 1 KiB, else in binary units with one decimal.
func sizeText(v int64) string {
	if v < 1<<10 {
		return fmt.Sprintf("%d bytes", v)
	}
	units := []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}
	for _, u := range units {
		if v >= 1<<u.shift {
			return fmt.Sprintf("%.1f %s", float64(v)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprint(v)
}

func rateText(r int64) string {
	return fmt.Sprintf("%.1f MiB/s", float64(r)/(1<<20))
}
