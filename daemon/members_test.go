package daemon

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemberChangesOverTheSocket: add, fail, remove and replace through the control socket, each
// followed by the record, so that a successor assembles from the devices the array uses now; a
// spare that takes a failed member's place by itself is recorded too; a refusal changes nothing.
func TestMemberChangesOverTheSocket(t *testing.T) {
	l := startLifecycle(t, newFakeDevice(true), Config{})
	srv, err := Listen("life")
	require.NoError(t, err)
	srv.Serve(l.s, prometheus.NewRegistry(), false)
	t.Cleanup(func() { srv.Close() })
	c := NewClient("life")
	ctx := context.Background()
	recorded := func() []string {
		r, err := ReadRecord("life")
		require.NoError(t, err)
		return r.Members
	}
	blank := func(name string) string {
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		require.NoError(t, os.Truncate(p, 16<<20))
		return p
	}
	m0, m1 := l.members[0], l.members[1]

	spare := blank("spare")
	// The daemon runs in /: a relative path reaching it is refused, not read there.
	_, err = c.doBody(ctx, http.MethodPost, "/"+OpAdd, MemberChange{Member: "spare"})
	assert.ErrorContains(t, err, "add spare: give the device's absolute path")
	_, err = c.doBody(ctx, http.MethodPost, "/"+OpReplace, MemberChange{Member: m0, New: "new"})
	assert.ErrorContains(t, err, "replace new: give the device's absolute path")
	// The client makes it absolute in the caller's directory first.
	t.Chdir(filepath.Dir(spare))
	res, err := c.ChangeMember(ctx, OpAdd, MemberChange{Member: "spare"})
	require.NoError(t, err)
	assert.Equal(t, "added as a spare", res)
	assert.Equal(t, []string{m0, m1, spare}, recorded())

	_, err = c.ChangeMember(ctx, OpRemove, MemberChange{Member: m0})
	assert.ErrorContains(t, err, "fail it first")
	assert.Equal(t, []string{m0, m1, spare}, recorded(), "a refusal changes nothing")

	// The spare takes m1's place by itself, and the record follows.
	_, err = c.ChangeMember(ctx, OpFail, MemberChange{Member: m1})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st := l.s.a.Status("", 0)
		return st.Members[1].Path == spare && st.Members[1].State == "active" && len(st.Spares) == 0
	}, 30*time.Second, 10*time.Millisecond)
	l.s.a.WaitSync()
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{m0, spare}, recorded()) }, 30*time.Second, 10*time.Millisecond)

	// A replace records its new device while it runs, and keeps it once done.
	fresh := blank("fresh")
	_, err = c.ChangeMember(ctx, OpReplace, MemberChange{Member: m0, New: fresh, MaxRateBytesPS: 1 << 30})
	require.NoError(t, err)
	l.s.a.WaitSync()
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual([]string{fresh, spare}, recorded()) }, 30*time.Second, 10*time.Millisecond)
	st := l.s.a.Status("", 0)
	assert.Empty(t, st.Sync.Last.Error)
	assert.Equal(t, fresh, st.Members[0].Path)

	_, err = c.ChangeMember(ctx, OpFail, MemberChange{Member: "/nonesuch"})
	assert.ErrorContains(t, err, "is not in the array")
	_, err = c.ChangeMember(ctx, OpReplace, MemberChange{Member: fresh})
	assert.ErrorContains(t, err, "name the member")
}
