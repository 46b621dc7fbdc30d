package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// member is one simssd process serving a simulated SSD.
type member struct {
	cmd  *exec.Cmd
	path string
}

// startMembers starts one simssd per drive, all at once since each takes
// a while to start under emulation, and waits for their devices.
func (r *Runner) startMembers(drives []Drive) ([]*member, error) {
	ms := make([]*member, len(drives))
	errs := make([]error, len(drives))
	var wg sync.WaitGroup
	for i, d := range drives {
		args := []string{"--size", fmt.Sprint(r.cfg.MemberSize), "--seed", fmt.Sprint(i + 1),
			"--trim-latency", d.TrimLatency.String(), "--b2b-latency", d.B2BLatency.String(),
			"--b2b-window", d.B2BWindow.String()}
		if d.Exclusive {
			args = append(args, "--exclusive")
		}
		if d.MaxDiscard != "" {
			args = append(args, "--max-discard", d.MaxDiscard)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = startMember(r.cfg.SimSSD, args)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		var started []*member
		for _, m := range ms {
			if m != nil {
				started = append(started, m)
			}
		}
		stopMembers(started)
		return nil, err
	}
	return ms, nil
}

func startMember(bin string, args []string) (*member, error) {
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start simssd: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- strings.TrimSpace(s.Text())
	}()
	select {
	case p := <-line:
		if !strings.HasPrefix(p, "/dev/") {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("simssd %s: no device (printed %q)", strings.Join(args, " "), p)
		}
		return &member{cmd: cmd, path: p}, nil
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("simssd %s: no device after 60s", strings.Join(args, " "))
	}
}

func stopMembers(ms []*member) {
	for _, m := range ms {
		m.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, m := range ms {
		done := make(chan struct{})
		go func() { m.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			m.cmd.Process.Kill()
			<-done
		}
	}
}

func paths(ms []*member) []string {
	var p []string
	for _, m := range ms {
		p = append(p, m.path)
	}
	return p
}
