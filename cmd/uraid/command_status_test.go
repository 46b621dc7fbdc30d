package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
	"uraid/daemon"
	"uraid/discard/learn"
)

func trimStatus() daemon.Status {
	return daemon.Status{Status: array.Status{
		Name: "demo", Level: "10", Layout: "n2", ChunkBytes: 512 << 10, SizeBytes: 1 << 30,
		Device: "/dev/ublkb0", State: array.StateNameDegraded, DiscardMode: "sync",
		Members: []array.MemberStatus{
			{Path: "/dev/sda", Index: 0, State: "active", Kind: "block", DiscardGranularity: 4096, TrimExclusive: true, TrimInFlight: 1},
			{Path: "/dev/nvme0n1", Index: 1, State: "active", Kind: "block", DiscardGranularity: 4096, TrimInFlight: 4},
			{Index: 2, State: "missing"},
			{Path: "/dev/sdc", Index: 3, State: "active", Kind: "block", TrimExclusive: true},
		},
	}}
}

func TestStatusLineTrimSettings(t *testing.T) {
	var out bytes.Buffer
	writeStatusLine(&out, trimStatus())
	assert.Contains(t, out.String(), "      TRIMs at once [1 4 - 0], exclusive: /dev/sda[0] /dev/sdc[3]\n")

	st := trimStatus()
	for i := range st.Members {
		st.Members[i].TrimExclusive = false
	}
	out.Reset()
	writeStatusLine(&out, st)
	assert.Contains(t, out.String(), "exclusive: none\n")
}

func TestDetailTrimSettings(t *testing.T) {
	var out bytes.Buffer
	writeDetail(&out, trimStatus())
	lines := strings.Split(out.String(), "\n")
	var header []string
	rows := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "Number":
			// Column names hold spaces; tabwriter pads with two or more.
			for _, c := range strings.Split(l, "  ") {
				if c = strings.TrimSpace(c); c != "" {
					header = append(header, c)
				}
			}
		case header != nil && len(f) == len(header):
			rows[f[len(f)-1]] = f
		}
	}
	require.NotEmpty(t, header, out.String())
	col := func(name string) int {
		for i, h := range header {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q in %q", name, header)
		return -1
	}
	at, ex := col("TRIMs at once"), col("Exclusive")
	for path, want := range map[string][2]string{"/dev/sda": {"1", "yes"}, "/dev/nvme0n1": {"4", "no"}, "/dev/sdc": {"0", "yes"}} {
		require.Contains(t, rows, path, out.String())
		assert.Equal(t, want, [2]string{rows[path][at], rows[path][ex]}, path)
	}
}

// TestLevelNamesInViews pins how status and detail spell each level and layout: the JSON carries
// the short name (see array.TestStatusLevelNames), the text views mdadm's long one.
func TestLevelNamesInViews(t *testing.T) {
	tests := []struct {
		level, layout string // as array.Status carries them
		line          string // uraid status, after "demo : degraded "
		detail        string // uraid detail's Raid Level row
	}{
		{"linear", "", "linear /dev/ublkb0", "linear"},
		{"0", "", "raid0 /dev/ublkb0", "raid0"},
		{"1", "", "raid1 /dev/ublkb0", "raid1"},
		{"10", "n2", "raid10 n2 /dev/ublkb0", "raid10"},
		{"10", "o2", "raid10 o2 /dev/ublkb0", "raid10"},
		{"6", "", "6 /dev/ublkb0", "6"}, // a level from a newer daemon is shown as it came
	}
	for _, tt := range tests {
		st := trimStatus()
		st.Level, st.Layout = tt.level, tt.layout
		var out bytes.Buffer
		writeStatusLine(&out, st)
		assert.True(t, strings.HasPrefix(out.String(), "demo : degraded "+tt.line+" "), "%q", out.String())
		out.Reset()
		writeDetail(&out, st)
		assert.Contains(t, out.String(), "     Raid Level : "+tt.detail+"\n")
		if tt.layout != "" {
			assert.Contains(t, out.String(), "         Layout : "+tt.layout+"\n")
		} else {
			assert.NotContains(t, out.String(), "Layout :")
		}
	}
}

// detail says whether member I/O copies, and why.
func TestDetailZeroCopy(t *testing.T) {
	for _, tt := range []struct {
		on           bool
		mode, reason string
		want         string
	}{
		{true, "auto-buf-reg", "", "yes (auto-buf-reg)"},
		{true, "register", "", "yes (register)"},
		{false, "copy", "kernel 6.12 lacks UBLK_F_AUTO_BUF_REG and UBLK_F_SUPPORT_ZERO_COPY (Linux 6.16 and 6.15)",
			"no: kernel 6.12 lacks UBLK_F_AUTO_BUF_REG and UBLK_F_SUPPORT_ZERO_COPY (Linux 6.16 and 6.15)"},
		{false, "", "", "unknown (not served)"},
	} {
		st := trimStatus()
		st.ZeroCopy, st.ZeroCopyMode, st.ZeroCopyReason = tt.on, tt.mode, tt.reason
		var out bytes.Buffer
		writeDetail(&out, st)
		assert.Contains(t, out.String(), "      Zero Copy : "+tt.want+"\n")
	}
}

// TestStatusJSONListsDeadArray: an array whose daemon is gone but whose record is left is listed
// with its state, not dropped, and status --test says so in its exit code.
func TestStatusJSONListsDeadArray(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("URAID_RUN_DIR", dir)
	rec := `{"version":1,"name":"dead","pid":1073741824,"device_id":9,"device":"/dev/ublkb9","members":["/m0"]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dead.json"), []byte(rec), 0o600))
	for _, args := range [][]string{{"status", "--json"}, {"status", "--json", "dead"}, {"list", "--json"}} {
		code, out, errOut := runCLI(t, args...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
		if args[0] == "status" {
			code, _, _ := runCLI(t, append(args, "--test")...)
			require.Equal(t, exitTestFailed, code, "%v --test", args)
		}
		var got []daemon.Leftover
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Len(t, got, 1, out)
		l := got[0]
		assert.Equal(t, daemon.Schema, l.Schema)
		assert.Equal(t, "dead", l.Name)
		assert.Equal(t, "/dev/ublkb9", l.Device)
		assert.False(t, l.DaemonRunning)
		assert.False(t, l.Orphan)
		// Without ublk (this host) the kernel cannot be asked; with it, the device is gone.
		assert.Contains(t, []string{daemon.LeftUnknown, daemon.LeftGone}, l.State)
		assert.Contains(t, l.Message, "daemon 1073741824")
	}
}

// TestDetailTrimLearned: detail's text says what each lane learned, with its basis and what a
// flag overrode, as the JSON's trim_learned does.
func TestDetailTrimLearned(t *testing.T) {
	st := trimStatus()
	st.Members[0].TrimLearned = &array.TrimLearned{
		Decision: learn.Decision{Exclusive: true, InFlight: 1, Gap: 40 * time.Millisecond, GapMS: 40,
			Basis: learn.Basis{IOCleanUS: 200, IOCleanN: 50, IOOverlappedUS: 90000, IOOverlappedN: 5, Trims: 7}},
		Overridden: []string{"inflight overridden by --trim-inflight"},
	}
	var out bytes.Buffer
	writeDetail(&out, st)
	assert.Contains(t, out.String(), "member 0 trim learned: exclusive true, 1 in flight, gap 40ms (reads and writes 90ms beside a TRIM vs 200µs clean, 5/50 samples;")
	assert.Contains(t, out.String(), "; inflight overridden by --trim-inflight\n")
	assert.NotContains(t, out.String(), "member 1 trim learned", "a member with nothing learned has no line")
}
