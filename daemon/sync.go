package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"uraid/array"
)

// SyncArray is what an array's daemon offers for its mirror's jobs: check and repair on demand,
// and a wait for whatever job runs (resync, check, repair, rebuild).
type SyncArray interface {
	// StartCheck starts a check, or a check and repair, of the array's copies.
	StartCheck(repair bool, maxRate int64) error
	// CancelCheck stops a running check or repair; it returns what it stopped, "" for nothing.
	CancelCheck() (string, error)
	// WaitSync returns once no job runs (or ctx ends), with the sync status then.
	WaitSync(ctx context.Context) (array.SyncStatus, error)
}

// CheckRequest is the body of POST /check.
type CheckRequest struct {
	Repair bool `json:"repair"`
	// MaxRateBytesPerS caps the job's rate while the array is otherwise idle; 0 for no cap.
	MaxRateBytesPerS int64 `json:"max_rate_bytes_per_s"`
}

// CancelReply is the answer to POST /check/cancel.
type CancelReply struct {
	// Cancelled is the action stopped, "" when none ran.
	Cancelled string `json:"cancelled"`
}

// serveSync adds POST /check, POST /check/cancel and POST /wait. A wait holds its request open
// until the job ends; closing (the server shutting down) ends it with an error.
func serveSync(mux *http.ServeMux, a SyncArray, closing <-chan struct{}) {
	mux.HandleFunc("POST /check", func(w http.ResponseWriter, r *http.Request) {
		var req CheckRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("check: bad request: %v", err)})
			return
		}
		if err := a.StartCheck(req.Repair, req.MaxRateBytesPerS); err != nil {
			writeJSON(w, http.StatusConflict, errorBody{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	})
	mux.HandleFunc("POST /check/cancel", func(w http.ResponseWriter, _ *http.Request) {
		what, err := a.CancelCheck()
		if err != nil {
			writeJSON(w, http.StatusConflict, errorBody{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, CancelReply{Cancelled: what})
	})
	mux.HandleFunc("POST /wait", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		st, err := a.WaitSync(ctx)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, errorBody{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
}

// StartCheck starts a check (repair: and repair) of the array's copies.
func (s *served) StartCheck(repair bool, maxRate int64) error {
	action := array.SyncCheck
	if repair {
		action = array.SyncRepair
	}
	return s.a.StartSync(action, array.SyncOptions{MaxRate: maxRate})
}

// CancelCheck stops a running check or repair.
func (s *served) CancelCheck() (string, error) { return s.a.CancelCheck() }

// WaitSync waits until no job runs. A job that chains another (a rebuild, then the resync it
// leaves to do) counts as running until the last has ended.
func (s *served) WaitSync(ctx context.Context) (array.SyncStatus, error) {
	done := make(chan struct{})
	go func() {
		s.a.WaitSync()
		close(done)
	}()
	select {
	case <-done:
		return s.a.SyncStatus(), nil
	case <-ctx.Done():
		return array.SyncStatus{}, fmt.Errorf("array %s: the daemon is stopping; the job resumes at the next start where it can", s.a.Name)
	}
}

// Check asks the daemon to start a check (repair: and repair) capped at maxRate bytes per
// second (0: no cap).
func (c *Client) Check(ctx context.Context, repair bool, maxRate int64) error {
	_, err := c.post(ctx, "/check", CheckRequest{Repair: repair, MaxRateBytesPerS: maxRate})
	return err
}

// CancelCheck asks the daemon to cancel the running check or repair; it returns what it
// cancelled, "" when none ran.
func (c *Client) CancelCheck(ctx context.Context) (string, error) {
	b, err := c.post(ctx, "/check/cancel", nil)
	if err != nil {
		return "", err
	}
	var r CancelReply
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("array %s: check --cancel: %w", c.name, err)
	}
	return r.Cancelled, nil
}

// WaitSync blocks until no resync, check, repair or rebuild runs on the array, and returns its
// sync status then: Last is how the last job ended.
func (c *Client) WaitSync(ctx context.Context) (array.SyncStatus, error) {
	var st array.SyncStatus
	b, err := c.post(ctx, "/wait", nil)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("array %s: wait: %w", c.name, err)
	}
	return st, nil
}

// ErrUnsupported means the daemon does not offer what was asked: an older build.
var ErrUnsupported = errors.New("the daemon does not offer this")

// post sends v as JSON (nothing when nil).
func (c *Client) post(ctx context.Context, path string, v any) ([]byte, error) {
	var body io.Reader
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	return c.send(ctx, http.MethodPost, path, body)
}
