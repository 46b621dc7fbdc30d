package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// member is one simssd process serving a simulated SSD, or one nbdkit
// process serving an NBD device (nbd set).
type member struct {
	cmd  *exec.Cmd
	path string
	nbd  bool
}

// startMembers starts one simssd per drive, all at once since each takes
// a while to start under emulation, and waits for their devices.
func (r *Runner) startMembers(drives []Drive) ([]*member, error) {
	ms := make([]*member, len(drives))
	errs := make([]error, len(drives))
	var wg sync.WaitGroup
	nbds := 0
	for i, d := range drives {
		if d.NBD {
			index := nbds
			nbds++
			wg.Add(1)
			go func() {
				defer wg.Done()
				ms[i], errs[i] = startNBDMember(r.cfg.MemberSize, d, index)
			}()
			continue
		}
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

// NBDTools are the programs an NBD member needs, from Debian's nbdkit and
// nbd-client packages.
var NBDTools = []string{"nbdkit", "nbd-client"}

// startNBDMember serves a RAM disk of size bytes with nbdkit on a Unix
// socket and connects /dev/nbdINDEX to it. The nbd module must be loaded
// (bench/guest.sh loads it).
func startNBDMember(size int64, d Drive, index int) (*member, error) {
	dev := fmt.Sprintf("/dev/nbd%d", index)
	sock := fmt.Sprintf("/tmp/bench-nbd%d.sock", index)
	os.Remove(sock)
	// Filters apply in the order given, the first outermost: noparallel
	// serializes whole requests, each TRIM's delay included.
	args := []string{"-f", "-U", sock}
	if d.Exclusive {
		args = append(args, "--filter=noparallel")
	}
	args = append(args, "--filter=delay", "memory", fmt.Sprintf("size=%d", size),
		fmt.Sprintf("delay-trim=%dms", d.TrimLatency.Milliseconds()))
	if d.Exclusive {
		args = append(args, "serialize=requests")
	}
	cmd := exec.Command("nbdkit", args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nbdkit: %w", err)
	}
	m := &member{cmd: cmd, path: dev, nbd: true}
	fail := func(err error) (*member, error) {
		stopMembers([]*member{m})
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("nbdkit %s: no socket %s after 60s", strings.Join(args, " "), sock))
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := run(ctx, "nbd-client", "-unix", sock, dev, "-b", "4096"); err != nil {
		return fail(fmt.Errorf("%w (is the nbd module loaded? tests/vm/vm modprobe nbd)", err))
	}
	sizeAttr := "/sys/block/" + filepath.Base(dev) + "/size"
	for {
		if b, err := os.ReadFile(sizeAttr); err == nil && strings.TrimSpace(string(b)) != "0" {
			return m, nil
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("%s: no size after 60s", dev))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stopMembers(ms []*member) {
	for _, m := range ms {
		if m.nbd {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			run(ctx, "nbd-client", "-d", m.path)
			cancel()
		}
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
