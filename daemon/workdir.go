package daemon

import (
	"fmt"
	"os"
	"path/filepath"
)

// leaveWorkingDir makes absolute the paths a daemon goes on using, RunDir (URAID_RUN_DIR) and
// those in paths (resolved in place), and then moves the process to /, so that a daemon does not
// keep the directory it was started from busy for as long as it serves (an unmount of it would
// fail). Run and Recover call it before anything else touches a path: members are opened and
// log files chosen before, so that their relative paths mean what the caller meant.
func leaveWorkingDir(paths ...[]string) error {
	if d := os.Getenv("URAID_RUN_DIR"); d != "" && !filepath.IsAbs(d) {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("URAID_RUN_DIR %s: %w", d, err)
		}
		os.Setenv("URAID_RUN_DIR", abs)
	}
	for _, ps := range paths {
		for i, p := range ps {
			if p == "" || filepath.IsAbs(p) {
				continue
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			ps[i] = abs
		}
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("leave the working directory: %w", err)
	}
	return nil
}
