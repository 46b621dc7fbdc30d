package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRootExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"version", []string{"version"}, exitOK, "uraid "},
		{"unknown command", []string{"frobnicate"}, exitUsage, ""},
		{"unknown flag", []string{"version", "--bogus"}, exitUsage, ""},
		{"extra argument", []string{"version", "x"}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			got := runWith(tt.args, &out, &bytes.Buffer{})
			assert.Equal(t, tt.want, got)
			assert.Contains(t, out.String(), tt.out)
		})
	}
}

func TestBareUraidPrintsHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, exitUsage, runWith(nil, &out, &errOut))
	assert.Empty(t, out.String(), "help goes to stderr with a usage exit: stdout stays clean for scripts")
	assert.Contains(t, errOut.String(), "Available Commands:")
	assert.Contains(t, errOut.String(), "create")
}

func TestVersionFlag(t *testing.T) {
	var flag, cmd bytes.Buffer
	require.Equal(t, exitOK, runWith([]string{"--version"}, &flag, &bytes.Buffer{}))
	require.Equal(t, exitOK, runWith([]string{"version"}, &cmd, &bytes.Buffer{}))
	assert.Equal(t, cmd.String(), flag.String())
	assert.Regexp(t, `^uraid \S+\n$`, flag.String())
}

// complete runs cobra's hidden completion command, as the shell scripts do, and returns the
// candidates (without their descriptions) and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	var out bytes.Buffer
	require.Equal(t, exitOK, runWith(append([]string{"__complete"}, args...), &out, &bytes.Buffer{}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var words []string
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, lines[len(lines)-1]
}

func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("URAID_RUN_DIR", dir)
	for _, n := range []string{"data", "dead"} {
		rec := `{"version":1,"name":"` + n + `","pid":1073741824,"device_id":9,"device":"/dev/ublkb9","members":["/m0"]}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, n+".json"), []byte(rec), 0o600))
	}
	noFiles := ":4" // cobra.ShellCompDirectiveNoFileComp
	for _, c := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"detail", ""}, []string{"data", "dead"}, noFiles},
		{[]string{"stop", "da"}, []string{"data"}, noFiles},
		{[]string{"status", ""}, []string{"data", "dead"}, noFiles},
		{[]string{"recover", "de"}, []string{"dead"}, noFiles},
		{[]string{"restart", ""}, []string{"data", "dead"}, noFiles},
		{[]string{"detail", "data", ""}, nil, noFiles},
		{[]string{"assemble", ""}, []string{"data", "dead"}, noFiles},
		{[]string{"assemble", "data", ""}, nil, ":0"}, // members: the shell's files
		{[]string{"create", ""}, nil, noFiles},
		{[]string{"create", "new", ""}, nil, ":0"},
		{[]string{"create", "new", "--level", ""}, []string{"linear", "0", "1", "10"}, noFiles},
		{[]string{"create", "new", "--layout", ""}, []string{"n2", "f2", "o2"}, noFiles},
		{[]string{"create", "new", "--discard", ""}, []string{"sync", "async"}, noFiles},
		{[]string{"assemble", "data", "--discard", ""}, []string{"sync", "async"}, noFiles},
	} {
		words, directive := complete(t, c.args...)
		assert.Equal(t, c.want, words, "%v", c.args)
		assert.Equal(t, c.directive, directive, "%v", c.args)
	}
}
