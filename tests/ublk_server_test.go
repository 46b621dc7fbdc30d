package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"uraid/tests/internal/ublkfile"
	"uraid/ublk"
	"uraid/ublk/filetarget"
)

// ublkServerEnv, when set in the environment, turns this test binary into
// the ublkfile server; its value is the server's arguments, one per line.
const ublkServerEnv = "URAID_TEST_UBLKFILE_ARGS"

func init() {
	if args, ok := os.LookupEnv(ublkServerEnv); ok {
		os.Exit(ublkfile.Main(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
}

// ublkServer is a running ublkfile server process.
type ublkServer struct {
	t    testing.TB
	cmd  *exec.Cmd
	ID   int
	Path string // /dev/ublkbID
	// ZeroCopy is how the device moves data, as the server reported it.
	ZeroCopy ublk.ZeroCopyStatus
	// BatchIO is whether it uses the batch I/O commands, likewise.
	BatchIO ublk.BatchIOStatus
	lines   chan string
	done    chan struct{} // closed when the process has been reaped
	mu      sync.Mutex
	err     error // exit status, after done
	stderr  strings.Builder
}

// slow scales timeouts: the guest runs under TCG, and the race detector
// slows everything down again.
const slow = 10

// startUblkServer starts a server on file and waits until its device is up.
func startUblkServer(t testing.TB, file string, flags ...string) *ublkServer {
	t.Helper()
	args := append(flags, file)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), ublkServerEnv+"="+strings.Join(args, "\n"))
	s := &ublkServer{t: t, cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		err := cmd.Wait()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(slow * 10 * time.Second):
				_ = cmd.Process.Kill()
				<-s.done
			}
		}
	})

	line := s.expect("ready", slow*10*time.Second)
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		t.Fatalf("ublk server: bad ready line %q", line)
	}
	id, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("ublk server: bad ready line %q", line)
	}
	// Two JSON values, whose strings may hold spaces.
	dec := json.NewDecoder(strings.NewReader(f[2]))
	if err := errors.Join(dec.Decode(&s.ZeroCopy), dec.Decode(&s.BatchIO)); err != nil {
		t.Fatalf("ublk server: bad ready line %q: %v", line, err)
	}
	s.ID, s.Path = id, ublk.BlockPath(uint32(id))
	return s
}

// expect waits for the next line, which must start with word.
func (s *ublkServer) expect(word string, timeout time.Duration) string {
	s.t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			<-s.done
			s.t.Fatalf("ublk server exited (%v) before %q; stderr:\n%s", s.exitErr(), word, s.errText())
		}
		if !strings.HasPrefix(line, word) {
			s.t.Fatalf("ublk server said %q, want %q", line, word)
		}
		return line
	case <-time.After(timeout):
		s.t.Fatalf("ublk server: no %q after %v; stderr:\n%s", word, timeout, s.errText())
	}
	return ""
}

// Stats asks the server for its target's counters.
func (s *ublkServer) Stats() filetarget.Stats {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		s.t.Fatal(err)
	}
	line := s.expect("stats", slow*5*time.Second)
	var st filetarget.Stats
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "stats ")), &st); err != nil {
		s.t.Fatalf("ublk server: bad stats line %q: %v", line, err)
	}
	return st
}

// Stop stops the server with SIGTERM and checks it removed its device.
func (s *ublkServer) Stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	s.expect("stopped", slow*10*time.Second)
	<-s.done
	if err := s.exitErr(); err != nil {
		s.t.Fatalf("ublk server: %v; stderr:\n%s", err, s.errText())
	}
}

// Kill kills the server with SIGKILL, as a crash would, and reaps it.
func (s *ublkServer) Kill() {
	s.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatal(err)
	}
	// Drain stdout so the reaper goroutine can finish.
	go func() {
		for range s.lines {
		}
	}()
	<-s.done
}

func (s *ublkServer) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *ublkServer) errText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
