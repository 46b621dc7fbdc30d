package array

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
	"uraid/raid"
)

// TestAssembleRecordsAbsolutePaths: members named by relative paths are known by their absolute
// paths once assembled (status, record, events), and a --trim-exclusive that names a member as
// it was given still finds it.
func TestAssembleRecordsAbsolutePaths(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	ms, _, err := raid.Create(raid.CreateOptions{Name: "rel", Level: mapping.RAID1, Size: 8 << 20, Members: paths})
	require.NoError(t, err)
	for _, m := range ms {
		m.Close()
	}
	t.Chdir(dir)
	a, err := Assemble("rel", []string{"m0", "./m1"}, Options{Queues: 1, Depth: 4,
		Discard: DiscardOptions{Exclusive: []string{"m1"}, MemberInFlight: map[string]int{"./m0": 3}}})
	require.NoError(t, err)
	defer a.Close()
	st := a.Status("", 0)
	require.Len(t, st.Members, 2)
	assert.Equal(t, paths[0], st.Members[0].Path)
	assert.Equal(t, paths[1], st.Members[1].Path)
	assert.True(t, st.Members[1].TrimExclusive, "--trim-exclusive m1 names the member now known as %s", paths[1])
	assert.Equal(t, 3, st.Members[0].TrimInFlight)
	_, err = os.Stat(st.Members[0].Path)
	assert.NoError(t, err)
}
