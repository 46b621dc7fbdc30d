package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// An array name ends up in file names and in /dev/disk paths: keep it plain.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

// CheckName says why name cannot name an array, or nil.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("array name %q: use 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// SocketPath is the control socket of the array called name.
func SocketPath(name string) string { return filepath.Join(RunDir(), name+".sock") }

// LogPath is where a detached daemon's stderr goes.
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
