package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"uraid/array"
)

// Array is what a daemon serves on its control socket.
type Array interface {
	// Status is the array's status, encoded as JSON for GET /status.
	Status() any
	// Stop stops the array: flush, mark the members clean, remove the device. It returns once that
	// is done, or why it was refused; it is safe to call more than once and from any goroutine.
	Stop() error
	// Handover drains the array and leaves its device to a successor (POST /handover).
	Handover() error
	// FailQueue makes the device fail as a broken queue would (POST /debug/fail-queue, only
	// with the test hooks on).
	FailQueue() error
	// Subscribe streams the array's events from now on (GET /events) until the returned
	// function is called.
	Subscribe() (<-chan array.Event, func())
}

// Server is a daemon's control socket.
type Server struct {
	name string
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	err  error // of Serve, read after done is closed
	// quit is closed when Close begins: event streams end, once they have sent what they hold.
	quit chan struct{}
}

// Listen creates the control socket of the array called name. It fails if a daemon of that name
// already answers there; a socket left behind by a killed daemon is replaced.
func Listen(name string) (*Server, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(RunDir(), 0o755); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	path := SocketPath(name)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("array %s is already running (its control socket %s answers); stop it first: uraid stop %s", name, path, name)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: remove stale %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	// Status reveals member paths and stop removes a disk: root only.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return &Server{name: name, ln: ln, done: make(chan struct{}), quit: make(chan struct{})}, nil
}

// Serve answers on the socket until Close: GET /status, GET /metrics from reg, POST /stop, POST
// /handover, POST /fail, /remove, /add and /replace (members.go), POST /grow (grow.go), and with hooks POST
// /debug/fail-queue.
func (s *Server) Serve(a Array, reg prometheus.Gatherer, hooks bool) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, a.Status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	action := func(do func() error) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if err := do(); err != nil {
				writeJSON(w, http.StatusInternalServerError, errorBody{err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, struct{}{})
		}
	}
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		s.streamEvents(w, r, a)
	})
	mux.HandleFunc("POST /stop", action(a.Stop))
	mux.HandleFunc("POST /handover", action(a.Handover))
	serveMembers(mux, a)
	serveGrow(mux, a)
	serveCopies(mux, a)
	serveAppend(mux, a)
	if hooks {
		mux.HandleFunc("POST /debug/fail-queue", action(a.FailQueue))
	}
	if sa, ok := a.(SyncArray); ok {
		serveSync(mux, sa, s.quit)
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.srv.RegisterOnShutdown(func() { close(s.quit) })
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
}

// Close stops answering, lets requests in progress finish (a stop in progress among them) and
// removes the socket.
func (s *Server) Close() error {
	var err error
	if s.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = s.srv.Shutdown(ctx)
		<-s.done
		if s.err != nil {
			err = s.err
		}
	} else {
		err = s.ln.Close()
	}
	if rerr := os.Remove(SocketPath(s.name)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// streamEvents answers GET /events: one JSON object per line (application/x-ndjson), each
// flushed as it happens, until the watcher goes or the daemon closes the socket.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, a Array) {
	events, cancel := a.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	if rc.Flush() != nil {
		return
	}
	send := func(e array.Event) bool { return enc.Encode(e) == nil && rc.Flush() == nil }
	for {
		select {
		case e, ok := <-events:
			if !ok || !send(e) {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.quit:
			for {
				select {
				case e, ok := <-events:
					if !ok || !send(e) {
						return
					}
				default:
					return
				}
			}
		}
	}
}

type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client has gone if this fails; nothing to tell it
}
