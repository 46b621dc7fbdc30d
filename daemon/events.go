package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"uraid/array"
)

// The daemon's own events, in the same stream as the array's (array.Event*).
const (
	EventStarted      = "array_started"
	EventRecovered    = "daemon_recovered" // a new daemon took the device over
	EventRecreated    = "device_recreated" // a new daemon found the device gone and made it again
	EventHandedOver   = "handed_over"
	EventStopDraining = "stop_draining"
	EventStopped      = "array_stopped"
	EventDeviceFailed = "device_failed"
	EventDropped      = "events_dropped"
	EventGrown        = "array_grown" // uraid grow changed the array's size
	// EventCopiesChanged: uraid grow --copies changed a raid1's copies, in the hand-over that
	// follows.
	EventCopiesChanged = "array_copies_changed"
	// EventMembersAppended: uraid grow --add appended members to a linear array, in the
	// hand-over that follows.
	EventMembersAppended = "array_members_appended"
	// EventReshapeStarted: uraid grow --add committed a reshape of a raid0 or raid10 in the
	// hand-over that follows; the array's own reshape_finished (or reshape_paused) follows it.
	EventReshapeStarted = "reshape_started"
	// EventWatching opens every watcher's stream: what the array is doing as it starts to watch.
	EventWatching = "watching"
)

// subscriberLen bounds the events waiting for one watcher (uraid monitor): one that falls this
// far behind loses the newest, and hears how many.
const subscriberLen = 256

// Log formats of a daemon's log (--log-format).
const (
	LogText = "text" // key=value lines, as journald shows them
	LogJSON = "json" // one JSON object per line
)

// NewLogger is a daemon's logger in format (LogText or LogJSON) writing to w.
func NewLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case LogText, "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case LogJSON:
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("log format %q: use %s or %s", format, LogText, LogJSON)
}

// hub is a daemon's event stream: the array's events and its own, logged and fanned out to every
// watcher. Nothing waits for a watcher.
type hub struct {
	log *slog.Logger
	// notify, if set, hears every event after it is logged (systemd's STATUS=); set before the
	// first publish.
	notify func(array.Event)

	mu   sync.Mutex // guards subs
	subs map[*subscriber]struct{}

	// The pump: reads the array's events until stop is closed; done once it has.
	stop chan struct{}
	done chan struct{}
}

type subscriber struct {
	ch chan array.Event
	// dropped counts the events it missed since it last heard of some; under hub.mu.
	dropped int
}

func newHub(log *slog.Logger) *hub {
	if log == nil {
		log = slog.Default()
	}
	return &hub{log: log, subs: map[*subscriber]struct{}{}}
}

// publish logs e and hands it to every watcher that has room.
func (h *hub) publish(e array.Event) {
	level := slog.LevelInfo
	switch e.Type {
	case array.EventMemberFailed, array.EventDegraded, EventDropped:
		level = slog.LevelWarn
	case array.EventArrayFailed, EventDeviceFailed:
		level = slog.LevelError
	case array.EventSyncFinished:
		if e.Outcome == array.OutcomeFailed {
			level = slog.LevelError
		}
	}
	h.log.LogAttrs(context.Background(), level, e.Message, eventAttrs(e)...)
	if h.notify != nil {
		h.notify(e)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.dropped > 0 {
			note := array.Event{Time: e.Time, Array: e.Array, Type: EventDropped,
				Message: fmt.Sprintf("%d events lost: this watcher fell behind", s.dropped)}
			select {
			case s.ch <- note:
				s.dropped = 0
			default:
				s.dropped++
				continue
			}
		}
		select {
		case s.ch <- e:
		default:
			s.dropped++
		}
	}
}

// eventAttrs are e's fields as log attributes (journald keeps them as KEY=value).
func eventAttrs(e array.Event) []slog.Attr {
	attrs := []slog.Attr{slog.String("array", e.Array), slog.String("event", e.Type)}
	if e.Member != nil {
		attrs = append(attrs, slog.Int("member", *e.Member))
	}
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	num := func(k string, v int64) {
		if v != 0 {
			attrs = append(attrs, slog.Int64(k, v))
		}
	}
	str("path", e.Path)
	str("action", e.Action)
	num("done_bytes", e.DoneBytes)
	num("total_bytes", e.TotalBytes)
	num("mismatch_bytes", e.MismatchBytes)
	num("repaired_bytes", e.RepairedBytes)
	str("outcome", e.Outcome)
	str("error", e.Error)
	str("device", e.Device)
	return attrs
}

// Subscribe returns a stream of first (if not nil) and the events from now on, and the function
// that ends it.
func (h *hub) Subscribe(first *array.Event) (<-chan array.Event, func()) {
	s := &subscriber{ch: make(chan array.Event, subscriberLen)}
	if first != nil {
		s.ch <- *first
	}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s.ch, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

// daemonEvent publishes an event of the daemon's about array name.
func (h *hub) daemonEvent(a *array.Array, typ, device, msg string) {
	h.publish(array.Event{Time: time.Now(), Array: a.Name, Type: typ, Device: device, Message: msg})
}

// pump publishes the array's events until stopPump; it says when the array dropped some.
func (h *hub) pump(a *array.Array) {
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.done)
		var seen uint64
		forward := func(e array.Event) {
			if d := a.EventsDropped(); d != seen {
				h.publish(array.Event{Time: e.Time, Array: a.Name, Type: EventDropped,
					Message: fmt.Sprintf("%d events lost: the daemon fell behind", d-seen)})
				seen = d
			}
			h.publish(e)
		}
		for {
			select {
			case e := <-a.Events():
				forward(e)
			case <-h.stop:
				for {
					select {
					case e := <-a.Events():
						forward(e)
					default:
						return
					}
				}
			}
		}
	}()
}

// stopPump publishes what the array has queued and stops the pump.
func (h *hub) stopPump() {
	if h.stop == nil {
		return
	}
	close(h.stop)
	<-h.done
	h.stop = nil
}
