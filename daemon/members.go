package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"uraid/array"
)

// MemberChange is the body of POST /fail, /remove, /add and /replace: the member (for replace,
// the one replaced), the new device of a replace, and for add and replace whether to overwrite
// what the new device holds and the rebuild's rate cap.
type MemberChange struct {
	Member         string `json:"member"`
	New            string `json:"new,omitempty"`
	Force          bool   `json:"force,omitempty"`
	MaxRateBytesPS int64  `json:"max_rate_bytes_per_s,omitempty"`
}

// MemberChangeResult says what became of the change.
type MemberChangeResult struct {
	Result string `json:"result"`
}

// Members is what a daemon whose array can change members serves on POST /fail, /remove, /add
// and /replace.
type Members interface {
	ChangeMember(op string, c MemberChange) (string, error)
}

// Membership operations.
const (
	OpFail    = "fail"
	OpRemove  = "remove"
	OpAdd     = "add"
	OpReplace = "replace"
)

func serveMembers(mux *http.ServeMux, a Array) {
	m, ok := a.(Members)
	if !ok {
		return
	}
	for _, op := range []string{OpFail, OpRemove, OpAdd, OpReplace} {
		mux.HandleFunc("POST /"+op, func(w http.ResponseWriter, r *http.Request) {
			var c MemberChange
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&c); err != nil {
				writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("%s: bad request: %v", op, err)})
				return
			}
			res, err := m.ChangeMember(op, c)
			if err != nil {
				writeJSON(w, http.StatusInternalServerError, errorBody{err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, MemberChangeResult{Result: res})
		})
	}
}

// ChangeMember fails, removes, adds or replaces a member of the served array, then records the
// devices the array now uses, so that a successor assembles from them.
func (s *served) ChangeMember(op string, c MemberChange) (string, error) {
	a := s.a
	if c.Member == "" || (op == OpReplace) != (c.New != "") {
		return "", fmt.Errorf("array %s: %s: name the member (and for replace the new device)", a.Name, op)
	}
	// The daemon runs in / (leaveWorkingDir): a relative path would name a file there, not the
	// one the caller meant. uraid add and replace send absolute paths.
	opened := c.New // the device the change opens
	if op == OpAdd {
		opened = c.Member
	}
	if opened != "" && !filepath.IsAbs(opened) {
		return "", fmt.Errorf("array %s: %s %s: give the device's absolute path", a.Name, op, opened)
	}
	var res string
	var err error
	// The cap is read when the rebuild starts, within the call: it paces that rebuild only, not
	// a later spare's.
	defer a.SetRebuildOptions(array.SyncOptions{})
	switch op {
	case OpFail:
		if err = a.FailMember(c.Member); err == nil {
			res = "failed " + c.Member
		}
	case OpRemove:
		if err = a.RemoveMember(c.Member); err == nil {
			res = "removed " + c.Member
		}
	case OpAdd:
		a.SetRebuildOptions(array.SyncOptions{MaxRate: c.MaxRateBytesPS})
		res, err = a.AddMember(c.Member, c.Force)
	case OpReplace:
		a.SetRebuildOptions(array.SyncOptions{MaxRate: c.MaxRateBytesPS})
		if err = a.ReplaceMember(c.Member, c.New, c.Force); err == nil {
			res = fmt.Sprintf("rebuilding %s onto %s; it takes %s's place when done", c.Member, c.New, c.Member)
		}
	default:
		return "", fmt.Errorf("array %s: unknown member operation %q", a.Name, op)
	}
	if err != nil {
		return "", err
	}
	s.recordMembers()
	return res, nil
}

// recordMembers writes the devices the array uses into its record, when they changed, while
// this daemon still owns the record: not once it stopped (the record is gone), handed over or
// failed (the record is its successor's).
func (s *served) recordMembers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.a.Status("", 0).InService()
	if slices.Equal(ps, s.rec.Members) {
		return
	}
	if r, err := ReadRecord(s.rec.Name); err != nil || r.PID != os.Getpid() || r.Handover || r.Failure != "" {
		return
	}
	s.rec.Members = ps
	if err := writeRecord(s.rec); err != nil {
		s.log.Error("members not recorded", "err", err)
	}
}
