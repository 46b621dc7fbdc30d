package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// Test hooks, read from the daemon's environment and documented in docs/cli.md. They exist so
// that the guest suite can reproduce what it cannot otherwise time: a kernel without reissue, a
// daemon dying at a given point of a recovery, a queue that fails. None is for production.
const (
	// envNoReissue=1 creates devices without UBLK_F_USER_RECOVERY_REISSUE, as on a kernel
	// that lacks it.
	envNoReissue = "URAID_TEST_NO_REISSUE"
	// envPause=POINT makes a daemon stop at POINT and wait there to be killed, after writing
	// "POINT PID" to RunDir()/NAME.paused. Points: pauseMembers (a recovery: members opened,
	// before the device is touched), pauseFetching (a recovery: the new queues fetch, the device
	// is not live again yet), pauseGrown (a grow: the larger size is on the members, the kernel
	// not told yet).
	envPause = "URAID_TEST_PAUSE"
	// envHooks=1 makes the control socket take POST /debug/fail-queue, which fails queue 0 of
	// the device as a broken ring would.
	envHooks = "URAID_TEST_HOOKS"
)

// Points where envPause can stop a recovering daemon.
const (
	pauseMembers  = "recover-members"
	pauseFetching = "recover-fetching"
	pauseGrown    = "grow-committed"
)

// PausedPath is where a daemon stopped by envPause says so.
func PausedPath(name string) string { return filepath.Join(RunDir(), name+".paused") }

// pauseAt stops the daemon of name at point, for good, if the environment asks for it, and says
// so on log.
func pauseAt(log *slog.Logger, name, point string) {
	if os.Getenv(envPause) != point {
		return
	}
	_ = os.WriteFile(PausedPath(name), []byte(fmt.Sprintf("%s %d\n", point, os.Getpid())), 0o600)
	log.Warn("paused at a test hook's point, waiting to be killed", "point", point, "hook", envPause)
	select {}
}
