package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/mapping"
	"uraid/raid"
)

// TestRecordMembersAbsolute: a record lists the members by the paths the array knows them by
// (raid.StablePath), not as given: a relative path given to create or assemble would name
// another file to a daemon, or uraid recover, started in another directory.
func TestRecordMembersAbsolute(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "rel", Level: mapping.RAID1, Size: 8 << 20, Members: paths})
	require.NoError(t, err)
	a, err := array.NewArray(ms, sbs, array.Options{Queues: 1, Depth: 4})
	require.NoError(t, err)
	defer a.Close()
	t.Chdir(dir)
	rec := newRecord(a, Config{Members: []string{"m0", "./m1"}})
	assert.Equal(t, paths, rec.Members)
}

// TestMemberChangeRelativePath: a device given to add by a relative path is the one in the
// caller's directory (the daemon runs in another), and is recorded by its absolute path; remove
// finds it by a relative path too.
func TestMemberChangeRelativePath(t *testing.T) {
	l := startLifecycle(t, newFakeDevice(true), Config{})
	srv, err := Listen("life")
	require.NoError(t, err)
	srv.Serve(l.s, prometheus.NewRegistry(), false)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	spare := filepath.Join(dir, "spare")
	require.NoError(t, os.WriteFile(spare, nil, 0o600))
	require.NoError(t, os.Truncate(spare, 16<<20))
	t.Chdir(dir)
	c := NewClient("life")
	_, err = c.ChangeMember(context.Background(), OpAdd, MemberChange{Member: "spare"})
	require.NoError(t, err)
	rec, err := ReadRecord("life")
	require.NoError(t, err)
	assert.Contains(t, rec.Members, spare)
	assert.NotContains(t, rec.Members, "spare")

	_, err = c.ChangeMember(context.Background(), OpRemove, MemberChange{Member: "./spare"})
	require.NoError(t, err, "remove names the spare by a relative path")
	rec, err = ReadRecord("life")
	require.NoError(t, err)
	assert.NotContains(t, rec.Members, spare)
}
