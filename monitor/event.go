package monitor

import (
	"encoding/json"
	"time"

	"uraid/array"
	"uraid/daemon"
)

// The monitor's own events, in the stream beside the daemons' (daemon.Event*, array.Event*).
// array_started and array_stopped are the daemons' names, reported by the monitor when it sees
// the array start or go without having heard the daemon say so.
const (
	// EventDaemonLost: an array's daemon went without stopping the array or handing it over; its
	// device waits (quiesced) for uraid recover, or is gone. The message says which, and what
	// to do.
	EventDaemonLost = "daemon_lost"
)

// Event is one event as the monitor reports it: the daemon's event with the JSON schema first.
type Event struct {
	Schema int `json:"schema"`
	array.Event
}

// JSON is e as one line of uraid monitor --json, without the newline.
func (e Event) JSON() ([]byte, error) { return json.Marshal(e) }

func stamp(e array.Event) Event { return Event{Schema: daemon.Schema, Event: e} }

// own is an event of the monitor's about array name.
func own(name, typ, device, msg string) Event {
	return stamp(array.Event{Time: time.Now(), Array: name, Type: typ, Device: device, Message: msg})
}

// startEvent reports whether typ is a daemon's first event on a device.
func startEvent(typ string) bool {
	switch typ {
	case daemon.EventStarted, daemon.EventRecovered, daemon.EventRecreated:
		return true
	}
	return false
}
