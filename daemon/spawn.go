package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readyFDEnv names the environment variable through which a detached daemon finds its readiness
// pipe. The pipe carries one line: "ready DEVICE" or "error MESSAGE".
const readyFDEnv = "URAID_READY_FD"

// Spawn starts exe with args as a daemon detached from the terminal (its own session, stdin from
// /dev/null, stdout and stderr to the journal where there is one, else appended to LogPath(name),
// which the daemon rotates) and waits until it reports ready, fails, or exits. It returns the
// device path the daemon reported.
func Spawn(name, exe string, args []string, timeout time.Duration) (string, error) {
	if err := os.MkdirAll(RunDir(), 0o755); err != nil {
		return "", fmt.Errorf("start daemon: %w", err)
	}
	logf, logEnv, where, err := daemonOutput(name)
	if err != nil {
		return "", fmt.Errorf("start daemon: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("start daemon: %w", err)
	}
	defer pr.Close()

	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw} // fd 3 in the child
	cmd.Env = append(append(os.Environ(), readyFDEnv+"=3"), logEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return "", fmt.Errorf("start daemon: %w", err)
	}
	// Our copy of the write end must go, or a child that dies without a word never gives us EOF.
	pw.Close()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()

	select {
	case line := <-lines:
		switch {
		case strings.HasPrefix(line, "ready "):
			return strings.TrimPrefix(line, "ready "), nil
		case strings.HasPrefix(line, "error "):
			<-exited
			return "", errors.New(strings.TrimPrefix(line, "error "))
		}
		err := <-exited
		return "", fmt.Errorf("daemon exited before it was ready (%v); see %s", err, where)
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		return "", fmt.Errorf("daemon not ready after %v; killed it; see %s", timeout, where)
	}
}

// Notifier tells whoever started this daemon how its start went: the process that ran Spawn, and
// systemd when NOTIFY_SOCKET is set (Type=notify units).
type Notifier struct {
	pipe io.WriteCloser
}

// NewNotifier picks up the readiness channels this process was given, if any.
func NewNotifier() *Notifier {
	n := &Notifier{}
	if s := os.Getenv(readyFDEnv); s != "" {
		if fd, err := strconv.Atoi(s); err == nil {
			n.pipe = os.NewFile(uintptr(fd), "ready")
		}
		os.Unsetenv(readyFDEnv)
	}
	return n
}

// Ready reports that device is usable.
func (n *Notifier) Ready(device string) {
	n.send("ready " + device)
	sdNotify("READY=1\nSTATUS=serving " + device)
}

// Failed reports that the daemon could not start, and why.
func (n *Notifier) Failed(err error) {
	n.send("error " + strings.ReplaceAll(err.Error(), "\n", "; "))
}

// Stopping tells systemd the daemon is shutting down.
func (n *Notifier) Stopping() { sdNotify("STOPPING=1") }

func (n *Notifier) send(line string) {
	if n.pipe == nil {
		return
	}
	_, _ = io.WriteString(n.pipe, line+"\n") // the starter may have given up; nothing more to do
	n.pipe.Close()
	n.pipe = nil
}
