package ublkbench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ThreadCPU is the CPU time, in clock ticks, of this process's threads
// grouped by name with any numeric suffix dropped: Go's threads, and the
// kernel's io_uring workers (iou-wrk-PID, iou-sqp-PID), which run as
// threads of the process that owns the ring. A Go profile sees only the
// first; the second shows when the kernel punts ring I/O to a worker
// instead of doing it inline.
type ThreadCPU map[string]uint64

// readThreadCPU reads /proc/self/task/*/stat.
func readThreadCPU() (ThreadCPU, error) {
	dirs, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		return nil, err
	}
	t := ThreadCPU{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // the thread exited
		}
		name, ticks, err := parseTaskStat(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s/stat: %w", d, err)
		}
		t[name] += ticks
	}
	return t, nil
}

// parseTaskStat returns the name (without a trailing -NUMBER) and
// utime+stime of one /proc/PID/task/TID/stat line. The name is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseTaskStat(s string) (string, uint64, error) {
	open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || shut < open {
		return "", 0, fmt.Errorf("no name in %.80q", s)
	}
	name := s[open+1 : shut]
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	// After the name: state(3) ppid ... utime(14) stime(15), counting
	// from 1 with pid and name as fields 1 and 2.
	f := strings.Fields(s[shut+1:])
	if len(f) < 13 {
		return "", 0, fmt.Errorf("%d fields after the name, want at least 13", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	k, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("utime %q stime %q are not numbers", f[11], f[12])
	}
	return name, u + k, nil
}

// Since is the CPU each group used after before was taken, largest
// first, as "name ticks" strings.
func (t ThreadCPU) Since(before ThreadCPU) []string {
	type g struct {
		name  string
		ticks uint64
	}
	var gs []g
	for n, v := range t {
		if d := v - min(v, before[n]); d > 0 {
			gs = append(gs, g{n, d})
		}
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].ticks != gs[j].ticks {
			return gs[i].ticks > gs[j].ticks
		}
		return gs[i].name < gs[j].name
	})
	out := make([]string, len(gs))
	for i, x := range gs {
		out[i] = fmt.Sprintf("%s %d", x.name, x.ticks)
	}
	return out
}
