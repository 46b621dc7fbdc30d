package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
)

// stateArray is a daemon.Array whose status is an array in the given state.
type stateArray struct{ st daemon.Status }

func (a *stateArray) Status() any      { return a.st }
func (a *stateArray) Stop() error      { return nil }
func (a *stateArray) Handover() error  { return nil }
func (a *stateArray) FailQueue() error { return nil }
func (a *stateArray) Subscribe() (<-chan array.Event, func()) {
	return make(chan array.Event), func() {}
}

// TestDetailStatusExitCodes: detail and status exit 0 whenever they report, whatever the state,
// so that `uraid detail X | grep` works under set -e; --test gives mdadm --detail --test's codes.
func TestDetailStatusExitCodes(t *testing.T) {
	for _, tt := range []struct {
		state string
		test  int // exit status with --test
	}{
		{array.StateNameClean, exitOK},
		{array.StateNameActive, exitOK},
		{array.StateNameDegraded, exitTestDegraded},
		{array.StateNameFailed, exitTestFailed},
	} {
		t.Run(tt.state, func(t *testing.T) {
			t.Setenv("URAID_RUN_DIR", t.TempDir())
			srv, err := daemon.Listen("arr")
			require.NoError(t, err)
			st := trimStatus()
			st.Name, st.State = "arr", tt.state
			srv.Serve(&stateArray{st: st}, prometheus.NewRegistry(), false)
			t.Cleanup(func() { srv.Close() })
			for _, args := range [][]string{{"detail", "arr"}, {"detail", "--json", "arr"}, {"status"}, {"status", "arr"}, {"status", "--json"}} {
				code, out, errOut := runCLI(t, args...)
				assert.Equal(t, exitOK, code, "uraid %v: %s", args, errOut)
				assert.Contains(t, out, tt.state, "uraid %v", args)
				code, out2, errOut := runCLI(t, append(args, "--test")...)
				assert.Equal(t, tt.test, code, "uraid %v --test: %s", args, errOut)
				assert.Equal(t, out, out2, "--test changes the exit status only")
			}
		})
	}
}

// TestTestFlagErrors: with --test, not getting the information exits 4 (mdadm's "error while
// trying to get information"), and a usage error stays a usage error.
func TestTestFlagErrors(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"detail", "--test", "nosuch"}, exitTestError, "array nosuch: array is not running"},
		{[]string{"status", "--test", "nosuch"}, exitTestError, "array nosuch: array is not running"},
		{[]string{"detail", "nosuch"}, exitError, "array nosuch: array is not running"},
		{[]string{"detail", "--test", "bad/name"}, exitUsage, "array name"},
		{[]string{"status", "--test"}, exitOK, ""},
	} {
		code, _, errOut := runCLI(t, tt.args...)
		assert.Equal(t, tt.code, code, "uraid %s: %s", strings.Join(tt.args, " "), errOut)
		assert.Contains(t, errOut, tt.msg, fmt.Sprint(tt.args))
	}
}
