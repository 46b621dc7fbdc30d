package monitor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"uraid/array"
	"uraid/daemon"
)

// Oneshot reports, once, every array that needs attention, as cron wants it: array_degraded for
// one running degraded, array_failed for one with data lost, and daemon_lost for one (or a ublk
// device) whose daemon went and left its device. Arrays that are well, and records whose
// device is gone, are not reported. It returns after Out has had them; Close waits for the
// program runs.
func (m *Monitor) Oneshot(ctx context.Context) error {
	entries, err := daemon.Inventory(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		ev, ok := attention(e)
		if !ok {
			continue
		}
		if err := m.report(ev, ev.Device); err != nil {
			return err
		}
	}
	return nil
}

// attention is the event that says what is wrong with e, if something is.
func attention(e daemon.Entry) (Event, bool) {
	now := time.Now()
	if st := e.Status; st != nil {
		var typ string
		switch st.State {
		case array.StateNameDegraded:
			typ = array.EventDegraded
		case array.StateNameFailed:
			typ = array.EventArrayFailed
		default:
			return Event{}, false
		}
		msg := fmt.Sprintf("%s on %s", st.State, st.Device)
		if st.Failure != "" {
			msg += ": " + st.Failure
		}
		var out []string
		for _, ms := range st.Members {
			if ms.State != "active" {
				out = append(out, fmt.Sprintf("member %d (%s) %s", ms.Index, ms.Path, ms.State))
			}
		}
		if len(out) > 0 {
			msg += ": " + strings.Join(out, ", ")
		}
		return stamp(array.Event{Time: now, Array: st.Name, Type: typ, Device: st.Device, Message: msg}), true
	}
	l := e.Leftover()
	if l.State == daemon.LeftGone {
		return Event{}, false // a record of an array that simply is not running
	}
	return stamp(array.Event{Time: now, Array: l.Name, Type: EventDaemonLost, Device: l.Device, Message: l.Message}), true
}
