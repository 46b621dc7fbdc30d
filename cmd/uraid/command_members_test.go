package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
)

func rebuildingStatus() daemon.Status {
	return daemon.Status{Status: array.Status{
		Name: "demo", Level: "1", SizeBytes: 1 << 30, Device: "/dev/ublkb0", State: array.StateNameDegraded,
		DiscardMode: "sync",
		Members: []array.MemberStatus{
			{Path: "/dev/sda", Index: 0, State: "active", Replacement: "/dev/sde"},
			{Path: "/dev/sdb", Index: 1, State: "rebuilding"},
			{Path: "/dev/sdc", Index: 2, State: "failed"},
		},
		Spares: []string{"/dev/sdd"},
	}}
}

func TestStatusLineShowsSparesAndRebuilds(t *testing.T) {
	var out bytes.Buffer
	writeStatusLine(&out, rebuildingStatus())
	assert.Contains(t, out.String(), "/dev/sda[0] /dev/sde[0](R) /dev/sdb[1](R) /dev/sdc[2](F) /dev/sdd(S)\n")
	assert.Contains(t, out.String(), " [1/3] [U_F] ")
}

func TestDetailShowsSparesAndReplacement(t *testing.T) {
	var out bytes.Buffer
	writeDetail(&out, rebuildingStatus())
	assert.Contains(t, out.String(), "  Spare Devices : 1\n")
	rows := map[string][]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(f[len(f)-1], "/dev/") {
			rows[f[len(f)-1]] = f
		}
	}
	require.Contains(t, rows, "/dev/sdd", out.String())
	assert.Equal(t, []string{"-", "spare", "/dev/sdd"}, rows["/dev/sdd"])
	assert.Equal(t, []string{"0", "replacement", "/dev/sde"}, rows["/dev/sde"])
	assert.Equal(t, "rebuilding", rows["/dev/sdb"][1])
	// The path column lines up for every row.
	col := -1
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.Index(l, "/dev/sd"); i >= 0 && !strings.Contains(l, " : ") {
			if col < 0 {
				col = i
			}
			assert.Equal(t, col, i, l)
		}
	}
}

func TestMaxRateFlag(t *testing.T) {
	for in, want := range map[string]int64{"50M": 50 << 20, "50M/s": 50 << 20, "1G/s": 1 << 30, "4096": 4096} {
		var f maxRateFlag
		require.NoError(t, f.Set(in), in)
		assert.Equal(t, want, int64(f), in)
	}
	var f maxRateFlag
	assert.Error(t, f.Set("fast"))
}

func TestMemberCommandsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"fail", "demo"}, {"remove"}, {"add", "demo"}, {"replace", "demo", "/dev/sda"},
		{"add", "demo", "/dev/sda", "--max-rate", "fast"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, exitUsage, runWith(args, &stdout, &stderr), "%v: %s", args, stderr.String())
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, runWith([]string{"create", "x", "--level", "0", "--spare", "/tmp/s", "/tmp/a", "/tmp/b"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "--spare")
}
