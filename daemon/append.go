package daemon

// append.go appends members to a running linear array (uraid grow --add): a hand-over that
// commits the append in the quiet moment when nothing is in flight, so that the successor
// assembles the longer array and tells the kernel its size.

import (
	"context"
	"fmt"
	"net/http"

	"uraid/array"
	"uraid/mapping"
	"uraid/raid"
)

// OpAppend is the control socket's POST /append.
const OpAppend = "append"

// AppendRequest is the body of POST /append: the devices to append to a linear array, in order
// (absolute paths), and whether to overwrite what they hold.
type AppendRequest struct {
	Add   []string `json:"add"`
	Force bool     `json:"force,omitempty"`
	// MaxRateBytesPS caps a reshape (raid0, raid10) at this many array bytes moved per second;
	// 0: no cap.
	MaxRateBytesPS int64 `json:"max_rate_bytes_per_s,omitempty"`
}

// AppendResult says what an append did: the members and the array's size before and after, each
// member's data size, the devices appended, and the block device's size, which is the new size
// unless the kernel could not resize it live (Note then says what to do).
type AppendResult struct {
	Schema      int      `json:"schema"`
	OldMembers  int      `json:"old_members"`
	NewMembers  int      `json:"new_members"`
	Added       []string `json:"added"`
	OldSize     int64    `json:"old_size_bytes"`
	NewSize     int64    `json:"new_size_bytes"`
	DataSize    int64    `json:"member_data_bytes"`
	Device      string   `json:"device,omitempty"`
	DeviceSize  int64    `json:"device_size_bytes,omitempty"`
	DeviceGrown bool     `json:"device_resized"`
	Note        string   `json:"note,omitempty"`
	// Error is set when the daemon handed its device over but the append failed on the way (the
	// successor assembles what reached the members); a refusal is an error of the call instead.
	Error string `json:"error,omitempty"`
	// Reshape: a raid0's or raid10's members were added by a reshape, committed in the hand-over;
	// its bytes move while the successor serves the array at OldSize, which grows to NewSize
	// once it is done (uraid wait; status sync.action "reshape").
	Reshape bool `json:"reshape,omitempty"`
}

// Appender is what a daemon whose array can take members serves on POST /append.
type Appender interface {
	Append(AppendRequest) (AppendResult, error)
}

func serveAppend(mux *http.ServeMux, a Array) {
	if c, ok := a.(Appender); ok {
		servePost(mux, OpAppend, c.Append)
	}
}

// Append asks the running daemon to append members to its array (POST /append). Without an
// error the daemon has handed its device over, as for Handover (the append itself may have
// failed on the way: AppendResult.Error), and a successor must take it.
func (c *Client) Append(ctx context.Context, req AppendRequest) (AppendResult, error) {
	return post[AppendResult](ctx, c, OpAppend, req)
}

// Append appends members to the served array by a hand-over (see handover): the array is
// drained, the append checked (a refusal leaves it serving, nothing written), the members marked
// clean, the append made, and the device left to a successor, which assembles the longer array
// and grows the device (UPDATE_SIZE, Linux 6.16+).
//
// A hand-over, not an append to the running Array: every per-member structure of a served array
// (its queues' state, its discard lanes, its failure and steering state) is sized once, when it
// is assembled, and the hand-over already is the moment when none of it is in use; the successor
// builds them for the new members as any assembly does.
func (s *served) Append(r AppendRequest) (AppendResult, error) {
	if err := absolutePaths(s.a.Name, "append", r.Add); err != nil {
		return AppendResult{}, err
	}
	if lvl := s.a.Superblock().Level; lvl == mapping.RAID0 || lvl == mapping.RAID10 {
		return s.reshape(r)
	}
	job := &appendJob{req: r}
	err := s.ask(request{handover: true, change: job})
	if job.plan == nil {
		return AppendResult{}, err
	}
	p := *job.plan
	res := AppendResult{Schema: Schema, OldMembers: p.OldMembers, NewMembers: p.NewMembers, Added: p.Added,
		OldSize: p.OldSize, NewSize: p.NewSize, DataSize: p.DataSize}
	if err != nil {
		res.Error = err.Error()
	}
	return res, nil // handed over: the caller starts the successor
}

// appendJob is an append a hand-over carries out, and what it did (nil: refused, or not
// reached).
type appendJob struct {
	req  AppendRequest
	plan *raid.AppendPlan
}

func (j *appendJob) check(a *array.Array) error {
	_, err := a.CheckAppend(j.req.Add, j.req.Force)
	return err
}

// commit is the hand-over's step for an append, once nothing is in flight and the members are
// clean. The record names the new members before the commit (array.AppendOptions.BeforeCommit):
// a successor that assembles from it after a cut finds them whether or not the commit happened,
// and leaves them out if it did not.
func (j *appendJob) commit(s *served) error {
	p, err := s.a.Append(array.AppendOptions{Add: j.req.Add, Force: j.req.Force, BeforeCommit: func(members []string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rec.Members = members
		if err := writeRecord(s.rec); err != nil {
			return fmt.Errorf("the record of its members: %w", err)
		}
		return nil
	}})
	if !p.Committed {
		return err // a successor serves the array as it was
	}
	j.plan = &p
	msg := fmt.Sprintf("members %v appended: %d members (was %d), %d bytes (was %d); the device grows once a new daemon serves",
		p.Added, p.NewMembers, p.OldMembers, p.NewSize, p.OldSize)
	if err != nil {
		msg += fmt.Sprintf(": %v", err)
	}
	s.event(EventMembersAppended, msg)
	return err
}

// AppendMembers appends members to the running array called name: its daemon hands the device
// over with the append made (Client.Append), and a successor, started by spawn or by its
// supervisor as for Restart, assembles the longer array and grows the device where the kernel
// can. It returns what the append did and the device.
func AppendMembers(ctx context.Context, name string, req AppendRequest, spawn func() (string, error)) (AppendResult, string, error) {
	var res AppendResult
	dev, err := handOver(ctx, name, func() error {
		var err error
		res, err = NewClient(name).Append(ctx, req)
		return err
	}, spawn)
	return res, dev, err
}

// reshape widens the served raid0 or raid10 by the devices r names, by a hand-over that commits
// the reshape (array.StartReshape) in the quiet moment: the successor assembles the members, old
// and new, and serves the array at its old size while the reshape's job moves the bytes, paced
// by r.MaxRateBytesPS, which the record keeps for it; the device grows when it is done.
func (s *served) reshape(r AppendRequest) (AppendResult, error) {
	a := s.a
	sb := a.Superblock()
	old := a.Map()
	job := &reshapeJob{req: r}
	err := s.ask(request{handover: true, change: job})
	if !job.committed {
		return AppendResult{}, err
	}
	// The size it will have: the new members hold what an old one does.
	wide := sb
	wide.Members = uint32(job.members)
	newSize := old.Size()
	if m, err := raid.MapOf(&wide); err == nil {
		newSize = m.Size()
	}
	res := AppendResult{Schema: Schema, OldMembers: int(sb.Members), NewMembers: job.members, Added: r.Add,
		OldSize: old.Size(), NewSize: newSize, DataSize: int64(sb.DataSize), Reshape: true}
	if err != nil {
		res.Error = err.Error()
	}
	return res, nil // handed over: the caller starts the successor
}

// reshapeJob is a reshape a hand-over commits, and what it did.
type reshapeJob struct {
	req       AppendRequest
	committed bool
	members   int
}

func (j *reshapeJob) check(a *array.Array) error {
	return a.CheckReshape(j.req.Add, array.ReshapeOptions{Force: j.req.Force})
}

// commit records the members of the wider array and the reshape's rate before the commit: a
// successor that assembles from the record after a cut finds the new members whether or not the
// commit happened (the new members alone carry no array that assembles).
func (j *reshapeJob) commit(s *served) error {
	err := s.a.StartReshape(j.req.Add, array.ReshapeOptions{Force: j.req.Force, Log: s.log, BeforeCommit: func(members []string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rec.Members = members
		s.rec.Options.ReshapeMaxRate = j.req.MaxRateBytesPS
		if err := writeRecord(s.rec); err != nil {
			return fmt.Errorf("the record of its members: %w", err)
		}
		j.members = len(members)
		return nil
	}})
	if j.members == 0 {
		return err // refused before the commit: a successor serves the array as it was
	}
	j.committed = true
	msg := fmt.Sprintf("reshape to %d members committed (adding %v); its bytes move once a new daemon serves", j.members, j.req.Add)
	if err != nil {
		msg += fmt.Sprintf(": %v", err)
	}
	s.event(EventReshapeStarted, msg)
	return err
}
