package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/mapping"
	"uraid/raid"
)

// runCLI drives the root command as a user would and returns the exit status and both outputs.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runWith(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func memberFiles(t *testing.T, n int, size int64) []string {
	t.Helper()
	dir := t.TempDir()
	var ps []string
	for i := range n {
		p := filepath.Join(dir, "m"+string(rune('0'+i)))
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		f.Close()
		ps = append(ps, p)
	}
	return ps
}

func fileSums(t *testing.T, paths []string) []string {
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			out = append(out, "absent")
			continue
		}
		out = append(out, string(b[:8192])+string(b[len(b)-8192:]))
	}
	return out
}

// TestCreateRefusalsCLI checks that create refuses bad input with exit 1 or 2, a message that
// names the problem, and no change to any member.
func TestCreateRefusalsCLI(t *testing.T) {
	ms := memberFiles(t, 4, 8<<20)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no level", append([]string{"create", "a"}, ms...), exitUsage, "--level is required"},
		{"bad level", append([]string{"create", "a", "--level", "5"}, ms...), exitUsage, "level"},
		{"bad chunk", append([]string{"create", "a", "--level", "0", "--chunk", "3K"}, ms...), exitUsage, "power of two"},
		{"chunk 0", append([]string{"create", "a", "--level", "0", "--chunk", "0"}, ms...), exitUsage, "--chunk 0: give a power of two from 4K to 1G"},
		{"metrics port out of range", append([]string{"create", "a", "--level", "1", "--metrics-listen", ":99999"}, ms...), exitUsage, "port \"99999\" is not a number from 0 to 65535"},
		{"metrics port not a number", append([]string{"create", "a", "--level", "1", "--metrics-listen", "localhost:http9"}, ms...), exitUsage, "not a number from 0 to 65535"},
		{"missing on raid0", []string{"create", "a", "--level", "0", ms[0], "missing"}, exitUsage, "level 0 keeps one copy of each byte, so no slot can be left empty"},
		{"missing a whole mirror", []string{"create", "a", "--level", "10", "missing", "missing", ms[2], ms[3]}, exitUsage, "leave at most one slot of each mirror set missing"},
		{"chunk syntax", append([]string{"create", "a", "--level", "0", "--chunk", "lots"}, ms...), exitUsage, "K, M, G or T"},
		{"bad layout", append([]string{"create", "a", "--level", "10", "--layout", "x9"}, ms...), exitUsage, "layout"},
		{"bad discard mode", append([]string{"create", "a", "--level", "1", "--discard", "lazy"}, ms...), exitUsage, "use sync"},
		{"bad trim-inflight", append([]string{"create", "a", "--level", "1", "--trim-inflight", "x=0"}, ms...), exitUsage, "MEMBER=COUNT"},
		{"trim-inflight for no member", append([]string{"create", "a", "--level", "1", "--trim-inflight", ms[0] + "=2,/dev/sdz=1"}, ms...), exitError, "--trim-inflight /dev/sdz is not a member"},
		{"trim-exclusive for no member", append([]string{"create", "a", "--level", "1", "--trim-exclusive", "/dev/sdz"}, ms...), exitError, "members: " + ms[0] + ", "},
		{"trim-exclusive for a member to be made", []string{"create", "a", "--level", "1", "--trim-exclusive", ms[1] + ".new.typo", ms[0], ms[1] + ".new"}, exitError, ms[1] + ".new.typo is not a member"},
		{"empty trim-exclusive", append([]string{"create", "a", "--level", "1", "--trim-exclusive", ""}, ms...), exitUsage, "empty member name"},
		{"empty trim-exclusive element", append([]string{"create", "a", "--level", "1", "--trim-exclusive", ms[0] + ",," + ms[1]}, ms...), exitUsage, "empty member name"},
		{"duplicate", []string{"create", "a", "--level", "1", ms[0], ms[0]}, exitError, "named twice"},
		{"missing without size", []string{"create", "a", "--level", "1", ms[0], ms[1] + ".new"}, exitError, "give --size"},
		{"too small", append([]string{"create", "a", "--level", "0", "--size", "1M"}, ms...), exitError, "too small"},
		{"bad name", append([]string{"create", "a/b", "--level", "0"}, ms...), exitUsage, "name"},
		{"hidden name", append([]string{"create", ".a", "--level", "0"}, ms...), exitUsage, "starts with '.'"},
		{"one member", []string{"create", "a", "--level", "10", ms[0]}, exitUsage, "at least 2 members"},
		{"no member", []string{"create", "a", "--level", "10"}, exitUsage, "at least 2 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fileSums(t, ms)
			code, out, errOut := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.msg)
			assert.Equal(t, before, fileSums(t, ms), "members changed")
			_, err := os.Stat(ms[1] + ".new")
			assert.True(t, os.IsNotExist(err), "a refused create made a member file")
		})
	}
}

func TestExamineCLI(t *testing.T) {
	ms := memberFiles(t, 2, 8<<20)
	code, _, errOut := runCLI(t, "examine", ms[0])
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not a uraid member")

	// Create without starting: write the superblocks the way create does, then examine them.
	cms, _, err := createOnly(ms)
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	code, out, errOut := runCLI(t, "examine", "--json", ms[1])
	require.Equal(t, exitOK, code, errOut)
	var e examined
	require.NoError(t, json.Unmarshal([]byte(out), &e))
	assert.Equal(t, "arr", e.Name)
	assert.Equal(t, "1", e.Level)
	assert.EqualValues(t, 1, e.Index)
	assert.EqualValues(t, 2, e.MemberCount)
	assert.Equal(t, "clean", e.State)

	code, out, _ = runCLI(t, "examine", ms[0])
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "Array Name : arr")
	assert.Contains(t, out, "Raid Level : raid1")
}

// TestExamineLevelNames pins how examine spells every level and layout: the JSON carries the
// short name --level takes, the text view mdadm's long one.
func TestExamineLevelNames(t *testing.T) {
	tests := []struct {
		level            mapping.Level
		layout           mapping.Layout
		json, jsonLayout string
		text, textLayout string
	}{
		{mapping.Linear, mapping.NoLayout, "linear", "", "linear", ""},
		{mapping.RAID0, mapping.NoLayout, "0", "", "raid0", ""},
		{mapping.RAID1, mapping.NoLayout, "1", "", "raid1", ""},
		{mapping.RAID10, mapping.NoLayout, "10", "n2", "raid10", "n2"},
		{mapping.RAID10, mapping.Far2, "10", "f2", "raid10", "f2"},
		{mapping.RAID10, mapping.Offset2, "10", "o2", "raid10", "o2"},
	}
	for _, tt := range tests {
		t.Run(tt.text+"-"+tt.textLayout, func(t *testing.T) {
			ms := memberFiles(t, 2, 8<<20)
			cms, _, err := raid.Create(raid.CreateOptions{Name: "arr", Level: tt.level, Layout: tt.layout, Members: ms})
			require.NoError(t, err)
			for _, m := range cms {
				m.Close()
			}
			code, out, errOut := runCLI(t, "examine", "--json", ms[0])
			require.Equal(t, exitOK, code, errOut)
			var fields map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &fields))
			assert.Equal(t, tt.json, fields["level"])
			if tt.jsonLayout == "" {
				assert.NotContains(t, fields, "layout")
			} else {
				assert.Equal(t, tt.jsonLayout, fields["layout"])
			}
			code, out, errOut = runCLI(t, "examine", ms[0])
			require.Equal(t, exitOK, code, errOut)
			assert.Contains(t, out, "     Raid Level : "+tt.text+"\n")
			if tt.textLayout == "" {
				assert.NotContains(t, out, "Layout :")
			} else {
				assert.Contains(t, out, "         Layout : "+tt.textLayout+"\n")
			}
		})
	}
}

func TestStatusWithoutArrays(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	code, out, _ := runCLI(t, "status")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "no arrays running\n", out)
	code, out, _ = runCLI(t, "status", "--json")
	assert.Equal(t, exitOK, code)
	assert.JSONEq(t, "[]", out)
	code, _, errOut := runCLI(t, "detail", "nosuch")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not running")
	code, _, errOut = runCLI(t, "stop", "nosuch")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not running")
}

func TestParseInFlight(t *testing.T) {
	all, per, err := parseInFlight("")
	require.NoError(t, err)
	assert.Zero(t, all)
	assert.Nil(t, per)
	all, per, err = parseInFlight("0")
	require.NoError(t, err, "0 means the defaults, as docs/cli.md says")
	assert.Zero(t, all)
	assert.Nil(t, per)
	all, _, err = parseInFlight("8")
	require.NoError(t, err)
	assert.Equal(t, 8, all)
	_, per, err = parseInFlight("/dev/sda=1,/dev/nvme0n1=8")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"/dev/sda": 1, "/dev/nvme0n1": 8}, per)
	for _, bad := range []string{"65", "-1", "/dev/sda=0", "a", "/dev/sda", "/dev/sda=", "=3", "/dev/sda=2,", "/dev/sda=x"} {
		_, _, err := parseInFlight(bad)
		assert.Error(t, err, bad)
	}
}

// TestAssembleRefusesUnknownTrimMember: assemble refuses per-member TRIM settings for a path that
// is not a member before it starts anything (--foreground keeps a wrong acceptance from spawning
// a daemon).
func TestAssembleRefusesUnknownTrimMember(t *testing.T) {
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	ms := memberFiles(t, 2, 8<<20)
	cms, _, err := createOnly(ms)
	require.NoError(t, err)
	for _, m := range cms {
		m.Close()
	}
	before := fileSums(t, ms)
	for _, flag := range [][]string{{"--trim-exclusive", ms[0] + ",/dev/sdz"}, {"--trim-inflight", "/dev/sdz=2"}} {
		args := append(append([]string{"assemble", "arr", "--foreground"}, flag...), ms...)
		code, out, errOut := runCLI(t, args...)
		assert.Equal(t, exitError, code, errOut)
		assert.Empty(t, out)
		assert.Contains(t, errOut, flag[0]+" /dev/sdz is not a member of the array (members: "+ms[0]+", "+ms[1]+")")
		assert.Equal(t, before, fileSums(t, ms), "members changed")
	}
}

// TestCreateChecksServingFirst: a create that could not serve its array (no ublk on this host, a
// metrics address in use) says why and writes nothing: no superblock, no member file, so a retry
// needs no --force.
func TestCreateChecksServingFirst(t *testing.T) {
	ms := memberFiles(t, 2, 8<<20)
	made := ms[1] + ".new"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"metrics address in use", []string{"--metrics-listen", ln.Addr().String()}, "pick a free host:port"},
	}
	if _, err := os.Stat("/dev/ublk-control"); os.IsNotExist(err) {
		tests = append(tests, struct {
			name string
			args []string
			msg  string
		}{"no ublk", nil, "ublk_drv"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fileSums(t, ms)
			args := append(append([]string{"create", "srv", "--level", "1", "--size", "8M"}, tt.args...), ms[0], made)
			code, out, errOut := runCLI(t, args...)
			assert.Equal(t, exitError, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "nothing written")
			assert.Contains(t, errOut, tt.msg)
			assert.Equal(t, before, fileSums(t, ms), "members changed")
			_, err := os.Stat(made)
			assert.True(t, os.IsNotExist(err), "a refused create made a member file")
		})
	}
}

// TestCreateUndoneWhenStartFails: a create whose array fails to start after the superblocks are
// written (here: past the serving checks on a host without ublk, as when the driver goes away
// between check and start) puts every member back byte for byte and removes the files it made.
func TestCreateUndoneWhenStartFails(t *testing.T) {
	if _, err := os.Stat("/dev/ublk-control"); err == nil {
		t.Skip("this host has ublk: the array would start; the guest suite covers serving")
	}
	t.Setenv("URAID_RUN_DIR", t.TempDir())
	// The foreground daemon moves to / once started: the directory is restored after the test.
	wd, err := os.Getwd()
	require.NoError(t, err)
	t.Chdir(wd)
	old := checkServe
	checkServe = func(*serveFlags) error { return nil }
	t.Cleanup(func() { checkServe = old })
	ms := memberFiles(t, 2, 8<<20)
	made := filepath.Join(filepath.Dir(ms[0]), "new", "m2")
	// Foreground only: a detached start would run this test binary as the daemon. Both end in
	// undoCreate.
	for _, fg := range []string{"--foreground"} {
		t.Run(fg, func(t *testing.T) {
			before := [][]byte{fileBytes(t, ms[0]), fileBytes(t, ms[1])}
			code, _, errOut := runCLI(t, "create", "undo", fg, "--level", "1", "--size", "8M", ms[0], ms[1], made)
			assert.Equal(t, exitError, code)
			assert.Contains(t, errOut, "ublk")
			assert.Contains(t, errOut, "the create was undone: every member is as it was")
			assert.Equal(t, before, [][]byte{fileBytes(t, ms[0]), fileBytes(t, ms[1])}, "a member changed")
			_, err := os.Stat(filepath.Dir(made))
			assert.True(t, os.IsNotExist(err), "the directory create made is left")
		})
	}
}
