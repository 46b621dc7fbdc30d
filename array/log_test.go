package array

import (
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/testutil"
	"uraid/mapping"
	"uraid/raid"
)

// TestLogInjected: the array logs to Options.Log, each record tagged with its name, a failure at
// level WARN: a member failing and a spare rebuilt in its place are heard there.
func TestLogInjected(t *testing.T) {
	dir := testutil.MemDir(t)
	paths := []string{filepath.Join(dir, "m0"), filepath.Join(dir, "m1")}
	spare := filepath.Join(dir, "s0")
	ms, sbs, err := raid.Create(raid.CreateOptions{Name: "t", Level: mapping.RAID1, Size: 16 * mib, Members: paths, Spares: []string{spare}})
	require.NoError(t, err)
	var logged testutil.LogBuffer
	a, err := NewArray(ms, sbs, Options{Queues: 1, Depth: 8, Clock: newVirtual(), Log: slog.New(slog.NewTextHandler(&logged, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	require.NoError(t, a.MarkDirty())

	require.NoError(t, a.FailMember(paths[0]))
	for e := nextEvent(t, a); e.Type != EventSyncFinished; e = nextEvent(t, a) {
	}
	require.Eventually(t, func() bool { return strings.Contains(logged.String(), "rebuild of member finished") },
		time.Minute, time.Millisecond, "%s", logged.String())
	log := logged.String()
	assert.Regexp(t, `level=WARN msg="member failed" array=t member=0 path=`+regexp.QuoteMeta(paths[0])+` err=`, log)
	assert.Contains(t, log, `level=INFO msg="a spare takes the place of a member" array=t member=0 spare=`+spare)
	assert.Contains(t, log, `level=INFO msg="rebuild of member started" array=t member=0 path=`+spare)
	assert.Contains(t, log, `level=INFO msg="rebuild of member finished" array=t member=0 path=`+spare)
}
