package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// URAID_CPUPROFILE=PATH makes `uraid serve` (also when create or assemble
// start it in the background) write a CPU profile of its first
// URAID_CPUPROFILE_SECONDS seconds (default 30) to PATH.PID, for finding
// where the data path spends its time under a benchmark. The daemon never
// exits on its own, so the profile is taken over a fixed window rather than
// at exit. Other subcommands ignore the variable.
func init() {
	path := os.Getenv("URAID_CPUPROFILE")
	if path == "" || len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	// The daemon moves to / once it starts: a relative path means the directory it started in.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	secs := 30
	if s := os.Getenv("URAID_CPUPROFILE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "uraid: URAID_CPUPROFILE_SECONDS=%q is not a positive number of seconds; profiling %ds\n", s, secs)
		} else {
			secs = n
		}
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		fmt.Fprintf(os.Stderr, "uraid: CPU profile: %v\n", err)
		return
	}
	go func() {
		time.Sleep(time.Duration(secs) * time.Second)
		pprof.StopCPUProfile()
		out := fmt.Sprintf("%s.%d", path, os.Getpid())
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "uraid: CPU profile: %v\n", err)
		}
	}()
}

// URAID_TRACE=PATH does the same with an execution trace (runtime/trace) of the daemon's first
// URAID_TRACE_SECONDS seconds (default 10), written to PATH.PID: which thread ran what and when,
// to find which one wakes which per request (go tool trace -d=parsed PATH.PID).
func init() {
	path := os.Getenv("URAID_TRACE")
	if path == "" || len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	secs := 10
	if s := os.Getenv("URAID_TRACE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "uraid: URAID_TRACE_SECONDS=%q is not a positive number of seconds; tracing %ds\n", s, secs)
		} else {
			secs = n
		}
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		fmt.Fprintf(os.Stderr, "uraid: trace: %v\n", err)
		return
	}
	go func() {
		time.Sleep(time.Duration(secs) * time.Second)
		trace.Stop()
		out := fmt.Sprintf("%s.%d", path, os.Getpid())
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "uraid: trace: %v\n", err)
		}
	}()
}
