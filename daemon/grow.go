package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"uraid/array"
	"uraid/internal/bytesize"
	"uraid/ublk"
)

// OpGrow is the control socket's POST /grow.
const OpGrow = "grow"

// GrowRequest is the body of POST /grow: the array's new size in bytes (0: as large as its
// smallest device allows) and whether to shrink below the filesystem on it.
type GrowRequest struct {
	SizeBytes int64 `json:"size_bytes,omitempty"`
	Force     bool  `json:"force,omitempty"`
}

// GrowResult says what a grow did: the array's old and new size, each member's data size, the
// size asked for and whether it was rounded down, and the size of the block device, which is the
// new size unless the kernel could not resize it live (Note then says what to do).
type GrowResult struct {
	Schema      int    `json:"schema"`
	OldSize     int64  `json:"old_size_bytes"`
	NewSize     int64  `json:"new_size_bytes"`
	DataSize    int64  `json:"member_data_bytes"`
	Asked       int64  `json:"asked_bytes,omitempty"`
	Rounded     bool   `json:"rounded,omitempty"`
	DeviceSize  int64  `json:"device_size_bytes"`
	DeviceGrown bool   `json:"device_resized"`
	Note        string `json:"note,omitempty"`
}

// Grower is what a daemon whose array can grow serves on POST /grow.
type Grower interface {
	Grow(GrowRequest) (GrowResult, error)
}

func serveGrow(mux *http.ServeMux, a Array) {
	if g, ok := a.(Grower); ok {
		servePost(mux, OpGrow, g.Grow)
	}
}

// Grow asks the running daemon to grow its array (POST /grow).
func (c *Client) Grow(ctx context.Context, req GrowRequest) (GrowResult, error) {
	return post[GrowResult](ctx, c, OpGrow, req)
}

// servePost serves POST /op: the body decoded into a Req, do's answer written as JSON, or its
// error with status 500.
func servePost[Req, Res any](mux *http.ServeMux, op string, do func(Req) (Res, error)) {
	mux.HandleFunc("POST /"+op, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("%s: bad request: %v", op, err)})
			return
		}
		res, err := do(req)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

// post asks the daemon for POST /op with req and decodes its answer.
func post[Res any](ctx context.Context, c *Client, op string, req any) (Res, error) {
	var res Res
	b, err := c.doBody(ctx, http.MethodPost, "/"+op, req)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("array %s: %s: %w", c.name, op, err)
	}
	return res, nil
}

// Grow grows (or shrinks) the served array and tells the kernel: after the array for a larger
// size, so that no request reaches bytes the array does not have yet; before it for a smaller
// one, so that none reaches bytes it no longer has. A kernel that cannot resize a live device
// (before 6.16) keeps the old size until the device is made again; shrinking then is refused.
func (s *served) Grow(req GrowRequest) (GrowResult, error) {
	a := s.a
	o := array.GrowOptions{Size: req.SizeBytes, Force: req.Force}
	p, err := a.PlanGrow(o)
	if err != nil {
		return GrowResult{}, err
	}
	if p.Shrinks() {
		if err := s.dev.UpdateSize(p.NewSize); err != nil {
			if errors.Is(err, ublk.ErrNotSupported) {
				return GrowResult{}, fmt.Errorf("array %s: %w; shrink it stopped instead: unmount it, uraid stop %s, "+
					"uraid grow %s --size %d, uraid assemble --scan %s", a.Name, err, a.Name, a.Name, p.NewSize, a.Name)
			}
			return GrowResult{}, fmt.Errorf("array %s: shrink its device: %w", a.Name, err)
		}
	}
	p, err = a.Grow(o)
	if err != nil {
		if p.Shrinks() {
			if uerr := s.dev.UpdateSize(p.OldSize); uerr != nil {
				s.log.Error("grow: the device stays at the smaller size of a refused shrink", "err", uerr)
			}
		}
		return GrowResult{}, err
	}
	res := GrowResult{Schema: Schema, OldSize: p.OldSize, NewSize: p.NewSize, DataSize: p.NewDataSize, Asked: p.Asked, Rounded: p.Rounded,
		DeviceSize: p.NewSize, DeviceGrown: true}
	if !p.Shrinks() {
		// A daemon that dies here leaves the members larger than the device: its successor
		// tells the kernel (growTakenOver).
		pauseAt(s.log, a.Name, pauseGrown)
		err := s.dev.UpdateSize(p.NewSize)
		switch {
		case errors.Is(err, ublk.ErrNotSupported):
			res.DeviceSize, res.DeviceGrown = p.OldSize, false
			res.Note = fmt.Sprintf("the array is %s now, but this kernel cannot resize a running ublk device (Linux 6.16 can): "+
				"%s keeps %s until it is made again: unmount it, uraid stop %s, uraid assemble --scan %s",
				bytesize.Format(p.NewSize), s.dev.Path(), bytesize.Format(p.OldSize), a.Name, a.Name)
		case err != nil:
			res.DeviceSize, res.DeviceGrown = p.OldSize, false
			res.Note = fmt.Sprintf("the array is %s now, but telling the kernel failed (%v): %s keeps %s until it is made again "+
				"(uraid stop %s, uraid assemble --scan %s)", bytesize.Format(p.NewSize), err, s.dev.Path(), bytesize.Format(p.OldSize), a.Name, a.Name)
		}
	}
	msg := fmt.Sprintf("grown from %d to %d bytes", p.OldSize, p.NewSize)
	if p.Shrinks() {
		msg = fmt.Sprintf("shrunk from %d to %d bytes", p.OldSize, p.NewSize)
	}
	if res.Note != "" {
		msg += "; " + res.Note
	}
	s.event(EventGrown, msg)
	return res, nil
}
