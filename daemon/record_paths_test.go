package daemon

import (
	"path/filepath"
	"testing"

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
