package daemon

// notify.go tells systemd (a Type=notify unit) how the daemon is: READY=1 once the device is
// usable, STATUS= as the array's state changes and its sync jobs progress, STOPPING=1 on a stop.

import (
	"net"
	"os"
	"sync"
	"time"

	"uraid/array"
)

// sdNotify sends state to the socket NOTIFY_SOCKET names (a path, or an abstract socket's name
// after '@'); nothing without one. systemd hears nothing more from a daemon whose notify fails,
// and the daemon serves on regardless.
func sdNotify(state string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = c.Write([]byte(state))
}

// progressStatusEvery is the least time between two STATUS= updates of a sync job's progress:
// systemctl status shows where the job is without a datagram for every tenth of a small array.
const progressStatusEvery = 5 * time.Second

// statusNotifier turns the array's events into systemd's STATUS=, which `systemctl status`
// shows: a changed state at once, a sync job's progress at most every progressStatusEvery.
type statusNotifier struct {
	mu           sync.Mutex // guards lastProgress
	lastProgress time.Time
}

func (n *statusNotifier) event(e array.Event) {
	switch e.Type {
	case array.EventSyncProgress:
		n.mu.Lock()
		now := time.Now()
		due := now.Sub(n.lastProgress) >= progressStatusEvery
		if due {
			n.lastProgress = now
		}
		n.mu.Unlock()
		if !due {
			return
		}
	case array.EventMemberFailed, array.EventDegraded, array.EventArrayFailed, array.EventSpareActivated,
		array.EventMemberReplaced, array.EventSyncStarted, array.EventSyncFinished,
		EventStarted, EventRecovered, EventRecreated, EventStopDraining, EventDeviceFailed, EventHandedOver:
	default:
		return
	}
	msg := e.Message
	switch e.Type {
	case array.EventDegraded:
		msg = array.StateNameDegraded + ": " + msg
	case array.EventArrayFailed:
		msg = array.StateNameFailed + ": " + msg
	}
	sdNotify("STATUS=" + statusLine(msg))
}

// statusLine is msg on one line: STATUS= ends at the newline.
func statusLine(msg string) string {
	b := []byte(msg)
	for i, c := range b {
		if c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
