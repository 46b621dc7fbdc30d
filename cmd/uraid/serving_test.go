package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/array"
)

// parseServeFlags parses args as create and assemble do.
func parseServeFlags(t *testing.T, args ...string) (*serveFlags, error) {
	t.Helper()
	var f serveFlags
	cmd := &cobra.Command{Use: "x"}
	f.register(cmd)
	return &f, cmd.ParseFlags(args)
}

func TestTrimExclusiveFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // nil: refused
	}{
		{"absent", nil, []string{}},
		{"one", []string{"--trim-exclusive", "/dev/sda"}, []string{"/dev/sda"}},
		{"list", []string{"--trim-exclusive=/dev/sda,/dev/ublkb1"}, []string{"/dev/sda", "/dev/ublkb1"}},
		{"repeated", []string{"--trim-exclusive", "/dev/sda", "--trim-exclusive", "/dev/sdb,/dev/sdc"}, []string{"/dev/sda", "/dev/sdb", "/dev/sdc"}},
		{"empty", []string{"--trim-exclusive="}, nil},
		{"empty element", []string{"--trim-exclusive", "/dev/sda,,/dev/sdb"}, nil},
		{"trailing comma", []string{"--trim-exclusive", "/dev/sda,"}, nil},
		{"leading comma", []string{"--trim-exclusive", ",/dev/sda"}, nil},
		{"no value", []string{"--trim-exclusive"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseServeFlags(t, tt.args...)
			if tt.want == nil {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, f.check())
			assert.Equal(t, tt.want, append([]string{}, f.options(false).Discard.Exclusive...))
		})
	}
}

// TestServeArgsRoundTrip checks that the detached daemon gets the choices create and assemble
// were given: its flags, parsed again, give the same options.
func TestServeArgsRoundTrip(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--discard", "async", "--trim-inflight", "/dev/sda=2", "--trim-exclusive", "/dev/sda,/dev/sdb", "--trim-gap", "50ms", "--queues", "2", "--depth", "64"},
		{"--trim-inflight", "3", "--trim-exclusive", "/dev/sdb", "--trim-exclusive", "/dev/sdc"},
	} {
		f, err := parseServeFlags(t, args...)
		require.NoError(t, err)
		g, err := parseServeFlags(t, f.args()...)
		require.NoError(t, err, "serve refuses %q", f.args())
		assert.Equal(t, f.options(true), g.options(true), "%q", args)
	}
	f, err := parseServeFlags(t, "--trim-exclusive", "/dev/sda", "--trim-gap", "5ms")
	require.NoError(t, err)
	assert.Equal(t, array.DiscardOptions{Mode: "sync", Exclusive: []string{"/dev/sda"}, MinGap: 5 * time.Millisecond},
		f.options(false).Discard)
}

// TestEnumFlagsAnyCase pins the one rule for enum flags: their words are taken in any case
// (--level and --layout always did), and check spells them the way the daemon keeps them.
func TestEnumFlagsAnyCase(t *testing.T) {
	f, err := parseServeFlags(t, "--discard", "ASYNC", "--log-format", "Json")
	require.NoError(t, err)
	require.NoError(t, f.check())
	assert.Equal(t, "async", f.discard)
	assert.Equal(t, "json", f.logFormat)
	assert.Contains(t, f.args(), "--log-format=json")

	f, err = parseServeFlags(t, "--discard", "lazy")
	require.NoError(t, err)
	assert.ErrorContains(t, f.check(), "use sync")
}
