package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"uraid/mapping"
)

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"/dev/md/../md127": "/dev/md127",
		"/dev/md127":       "/dev/md127",
		"/dev//md/./x":     "/dev/md/x",
		"/../x":            "/x",
	} {
		assert.Equal(t, want, cleanPath(in), in)
	}
}

func TestSystems(t *testing.T) {
	names := func(s []System) []string {
		var n []string
		for _, x := range s {
			n = append(n, x.Name)
		}
		return n
	}
	assert.Equal(t, []string{"md-raid0", "uraid-raid0-sync", "uraid-raid0-async", "md-raid10", "uraid-raid10-sync", "uraid-raid10-async"},
		names(Systems([]mapping.Level{mapping.RAID0, mapping.RAID10}, false)))
	assert.Equal(t, []string{"md-raid10", "uraid-raid10-async"}, names(Systems([]mapping.Level{mapping.RAID10}, true)))
	for _, s := range Systems([]mapping.Level{mapping.RAID0, mapping.RAID10}, false) {
		if s.MD {
			l, ok := mdLevel(s.Name)
			assert.True(t, ok)
			assert.Equal(t, s.Level.String(), l)
		} else {
			l, ok := uraidLevel(s.Name)
			assert.True(t, ok)
			assert.Equal(t, s.Level.String(), l, "uraid and md of a level must pair up in Ratios")
		}
	}
}

func TestCreateArgs(t *testing.T) {
	sys := uraidSystem(mapping.RAID10, "async")
	ms := []string{"/dev/ublkb0", "/dev/ublkb1", "/dev/ublkb2", "/dev/ublkb3"}
	assert.Equal(t, []string{"create", "bench", "--level", "10", "--chunk", "512K", "--discard", "async", "--force",
		"--trim-exclusive", "/dev/ublkb0", "/dev/ublkb0", "/dev/ublkb1", "/dev/ublkb2", "/dev/ublkb3"},
		createArgs(sys, ms, append([]Drive{SlowDrive}, same(Fast, 3)...)), "the slow SATA-like member must be named")
	assert.NotContains(t, createArgs(sys, ms, same(Fast, 4)), "--trim-exclusive")
}

// The learned system is the hand-set one without a single TRIM flag, pairing with md by level; a
// gap system adds its --trim-gap to what the hand-set one says.
func TestCreateArgsLearnedAndGap(t *testing.T) {
	ms := []string{"/dev/ublkb0", "/dev/ublkb1", "/dev/ublkb2", "/dev/ublkb3"}
	drives := append([]Drive{SlowDrive}, same(Fast, 3)...)
	l := learnedSystem(mapping.RAID10, "async")
	l.Args = []string{"--queues", "1"}
	assert.Equal(t, "uraid-raid10-async-learned", l.Name)
	assert.Equal(t, []string{"create", "bench", "--level", "10", "--chunk", "512K", "--discard", "async", "--force",
		"--queues", "1", "/dev/ublkb0", "/dev/ublkb1", "/dev/ublkb2", "/dev/ublkb3"}, createArgs(l, ms, drives))
	level, ok := uraidLevel(l.Name)
	assert.True(t, ok)
	assert.Equal(t, "raid10", level)

	g := gapSystem(mapping.RAID10, "async", 20*time.Millisecond)
	assert.Equal(t, "uraid-raid10-async-gap20ms", g.Name)
	assert.Equal(t, []string{"create", "bench", "--level", "10", "--chunk", "512K", "--discard", "async", "--force",
		"--trim-exclusive", "/dev/ublkb0", "--trim-gap", "20ms", "/dev/ublkb0", "/dev/ublkb1", "/dev/ublkb2", "/dev/ublkb3"},
		createArgs(g, ms, drives))
}
