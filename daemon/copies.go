package daemon

// copies.go changes the copies of a running raid1 (uraid grow --copies): a hand-over that
// commits the new slot count in the quiet moment when nothing is in flight, so that the successor
// assembles the array as it is now.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"uraid/array"
)

// OpCopies is the control socket's POST /copies.
const OpCopies = "copies"

// CopiesRequest is the body of POST /copies: how many copies the raid1 is to keep, the devices
// that become its new copies (absolute paths), and whether to overwrite what they hold.
type CopiesRequest struct {
	Copies int      `json:"copies"`
	Add    []string `json:"add,omitempty"`
	Force  bool     `json:"force,omitempty"`
}

// CopiesResult says what a change of copies did: the copies before and after, the devices added
// as spares (each fills a new slot by a rebuild once the successor serves), and the slots dropped.
type CopiesResult struct {
	Schema  int      `json:"schema"`
	Old     int      `json:"old_copies"`
	New     int      `json:"new_copies"`
	Spares  []string `json:"spares,omitempty"`
	Dropped []int    `json:"dropped_slots,omitempty"`
	// Error is set when the daemon handed its device over but the change failed on the way (the
	// successor assembles what reached the members); a refusal is an error of the call instead.
	Error string `json:"error,omitempty"`
}

// Copier is what a daemon whose array can change its copies serves on POST /copies.
type Copier interface {
	Copies(CopiesRequest) (CopiesResult, error)
}

func serveCopies(mux *http.ServeMux, a Array) {
	if c, ok := a.(Copier); ok {
		servePost(mux, OpCopies, c.Copies)
	}
}

// Copies asks the running daemon to change its array's copies (POST /copies). Without an error
// the daemon has handed its device over, as for Handover (the change itself may have failed on
// the way: CopiesResult.Error), and a successor must take it.
func (c *Client) Copies(ctx context.Context, req CopiesRequest) (CopiesResult, error) {
	return post[CopiesResult](ctx, c, OpCopies, req)
}

// Copies changes the served array's copies by a hand-over (see handover): the array is drained,
// the change checked (a refusal leaves it serving, nothing written), the members marked clean,
// the change committed and the new devices written as spares, and the device left to a
// successor, which assembles the new slots and fills them from the spares.
func (s *served) Copies(c CopiesRequest) (CopiesResult, error) {
	if err := absolutePaths(s.a.Name, "copies", c.Add); err != nil {
		return CopiesResult{}, err
	}
	job := &copiesJob{req: c}
	err := s.ask(request{handover: true, change: job})
	if job.plan == nil {
		return CopiesResult{}, err
	}
	p := *job.plan
	res := CopiesResult{Schema: Schema, Old: p.Old, New: p.New, Spares: p.Spares, Dropped: p.Dropped}
	if err != nil {
		res.Error = err.Error()
	}
	return res, nil // handed over: the caller starts the successor
}

// copiesJob is a change of copies a hand-over carries out, and what it did (nil: refused, or
// not reached).
type copiesJob struct {
	req  CopiesRequest
	plan *array.CopiesPlan
}

func (j *copiesJob) check(a *array.Array) error {
	return a.CheckCopies(j.req.Copies, j.req.Add, j.req.Force)
}

// commit is the hand-over's step for a change of copies, once nothing is in flight and the
// members are clean; the record then names the new spares for the successor.
func (j *copiesJob) commit(s *served) error {
	c := j.req
	p, err := s.a.SetCopies(c.Copies, c.Add, c.Force)
	s.mu.Lock()
	s.rec.Members = s.a.Status("", 0).InService()
	werr := writeRecord(s.rec)
	s.mu.Unlock()
	if werr != nil && err == nil {
		err = fmt.Errorf("array %s: copies changed, but the record of its members was not written: %w", s.a.Name, werr)
	}
	j.plan = &p
	if p.New != 0 {
		msg := fmt.Sprintf("%d copies (was %d)", p.New, p.Old)
		for _, d := range p.Dropped {
			msg += fmt.Sprintf("; slot %d dropped", d)
		}
		for _, sp := range p.Spares {
			msg += fmt.Sprintf("; spare %s fills a new slot once a new daemon serves", sp)
		}
		if err != nil {
			msg += fmt.Sprintf(": %v", err)
		}
		s.event(EventCopiesChanged, msg)
	}
	return err
}

// ChangeCopies changes the copies of the running array called name: its daemon hands the device
// over with the change made (Client.Copies), and a successor, started by spawn or by its
// supervisor as for Restart, assembles the array as the change left it. It returns what the
// change did and the device.
func ChangeCopies(ctx context.Context, name string, req CopiesRequest, spawn func() (string, error)) (CopiesResult, string, error) {
	var res CopiesResult
	dev, err := handOver(ctx, name, func() error {
		var err error
		res, err = NewClient(name).Copies(ctx, req)
		return err
	}, spawn)
	return res, dev, err
}

// absolutePaths refuses a device path the daemon would resolve against its own working
// directory (it moved to / once started), not the caller's: every change that adds devices
// through the control socket checks them so.
func absolutePaths(array, op string, paths []string) error {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("array %s: %s: give the device's absolute path, not %s", array, op, p)
		}
	}
	return nil
}
