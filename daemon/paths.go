package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"uraid/raid"
)

// DefaultRunDir holds the sockets, pid files and logs of running arrays. URAID_RUN_DIR overrides it,
// so tests can run daemons side by side without root-owned state.
const DefaultRunDir = "/run/uraid"

// RunDir is where running arrays keep their sockets and logs.
func RunDir() string {
	if d := os.Getenv("URAID_RUN_DIR"); d != "" {
		return d
	}
	return DefaultRunDir
}

// CheckName says why name cannot name a running array, or nil: the superblock's rules, and no
// leading '.', which would hide the array's socket and state files under RunDir.
func CheckName(name string) error {
	if err := raid.ValidateName(name); err != nil {
		return err
	}
	if name[0] == '.' {
		return fmt.Errorf("array name %q starts with '.', which would hide its files in %s; pick another name", name, RunDir())
	}
	return nil
}

// SocketPath is the control socket of the array called name.
func SocketPath(name string) string { return filepath.Join(RunDir(), name+".sock") }

// LogPath is where a detached daemon's stderr goes when there is no journal; the daemon rotates
// it at 8 MiB to LogPath(name)+".1".
func LogPath(name string) string { return filepath.Join(RunDir(), name+".log") }

// Running lists the names of arrays that have a control socket, sorted.
func Running() ([]string, error) {
	socks, err := filepath.Glob(filepath.Join(RunDir(), "*.sock"))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(socks))
	for _, s := range socks {
		names = append(names, strings.TrimSuffix(filepath.Base(s), ".sock"))
	}
	return names, nil
}
