package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"uraid/array"
	"uraid/daemon"
	"uraid/internal/bytesize"
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
	out := fmt.Sprintf("%s = %.1f%% (%s/%s) %s, eta %s", action, pct, bytesize.Format(s.DoneBytes), bytesize.Format(s.TotalBytes), bytesize.FormatRate(s.RateBytesPerS), eta)
	if r := s.Reshape; r != nil {
		out += fmt.Sprintf(", %d to %d members, %s when done", r.OldMembers, r.NewMembers, bytesize.Format(r.NewSize))
		if r.State == array.ReshapePaused {
			out += ", paused: " + r.Why
		}
	}
	if s.Action == array.SyncCheck || s.Action == array.SyncRepair {
		out += fmt.Sprintf(", %s differ", bytesize.Format(s.MismatchBytes))
		if s.Action == array.SyncRepair {
			out += fmt.Sprintf(", %s repaired", bytesize.Format(s.RepairedBytes))
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
			c.Regions, bytesize.Format(c.RegionBytes), c.InSync, c.Dirty, c.Trimmed, c.NeedResync))
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
	fmt.Fprintf(&b, " %s in %s", bytesize.Format(l.DoneBytes), (time.Duration(l.Seconds * float64(time.Second))).Round(time.Millisecond))
	if l.Action == array.SyncCheck || l.Action == array.SyncRepair {
		fmt.Fprintf(&b, ", %s differ", bytesize.Format(l.MismatchBytes))
		if len(l.MismatchRegions) > 0 {
			regs := make([]string, len(l.MismatchRegions))
			for i, r := range l.MismatchRegions {
				regs[i] = fmt.Sprint(r)
			}
			fmt.Fprintf(&b, " (regions %s)", strings.Join(regs, " "))
		}
		if l.Action == array.SyncRepair {
			fmt.Fprintf(&b, ", %s repaired", bytesize.Format(l.RepairedBytes))
		}
	}
	if !l.Ended.IsZero() {
		fmt.Fprintf(&b, "; ended %s", l.Ended.UTC().Format(time.RFC3339))
	}
	return b.String()
}
