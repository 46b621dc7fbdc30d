package ublkbench

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Env says where and how the figures were taken.
type Env struct {
	Kernel    string `json:"kernel"`    // uname -r
	NProc     int    `json:"nproc"`     // CPUs the guest sees
	CPU       string `json:"cpu"`       // model name from /proc/cpuinfo (QEMU's under TCG)
	Backing   string `json:"backing"`   // the backing file and its filesystem
	SizeMiB   int64  `json:"size_mib"`  // of the backing file and of fio's range
	Runtime   int    `json:"runtime_s"` // per job, after the ramp
	Ramp      int    `json:"ramp_s"`
	Reps      int    `json:"reps"`
	Queues    int    `json:"ublk_queues"`
	Depth     int    `json:"ublk_depth"`
	LoopDIO   bool   `json:"loop_direct_io"` // the loop device really did direct I/O
	FioEngine string `json:"fio_engine"`
}

// Report is everything one run produced: docs/bench/ublk.json.
type Report struct {
	Env     Env       `json:"env"`
	Results []Result  `json:"results"`
	Summary []Summary `json:"summary"`
	// Profile is the server's CPU profile (pprof format) when the run
	// took one; it is written to a file of its own, not into the JSON.
	Profile []byte `json:"-"`
}

// Prefixes of the lines that carry data in a run's console output, which
// also carries the guest's boot messages and progress.
const (
	envPrefix    = "ublkbench env "
	resultPrefix = "ublkbench result "
	// The profile is base64 on one line, which a console passes intact.
	profilePrefix = "ublkbench cpuprofile "
)

// EmitEnv and EmitResult print the lines ParseLog reads back.
func EmitEnv(w io.Writer, e Env) error { return emit(w, envPrefix, e) }

// EmitResult prints one result line.
func EmitResult(w io.Writer, r Result) error { return emit(w, resultPrefix, r) }

// EmitProfile prints a CPU profile as one line.
func EmitProfile(w io.Writer, prof []byte) error {
	_, err := fmt.Fprintf(w, "%s%s\n", profilePrefix, base64.StdEncoding.EncodeToString(prof))
	return err
}

func emit(w io.Writer, prefix string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", prefix, b)
	return err
}

// ParseLog reads a run's console output back into a Report and summarizes
// it over ws. Lines may carry a console's carriage returns and text before
// the prefix; other lines are ignored. A log with no env line or no
// results is an error, since it means the run never started measuring.
func ParseLog(log []byte, ws []Workload) (Report, error) {
	var r Report
	var haveEnv bool
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 64<<20) // the profile line is long
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if i := strings.Index(line, envPrefix); i >= 0 {
			if err := json.Unmarshal([]byte(line[i+len(envPrefix):]), &r.Env); err != nil {
				return Report{}, fmt.Errorf("log line %d: env: %w", n, err)
			}
			haveEnv = true
		} else if i := strings.Index(line, resultPrefix); i >= 0 {
			var res Result
			if err := json.Unmarshal([]byte(line[i+len(resultPrefix):]), &res); err != nil {
				return Report{}, fmt.Errorf("log line %d: result: %w", n, err)
			}
			r.Results = append(r.Results, res)
		} else if i := strings.Index(line, profilePrefix); i >= 0 {
			p, err := base64.StdEncoding.DecodeString(line[i+len(profilePrefix):])
			if err != nil {
				return Report{}, fmt.Errorf("log line %d: profile: %w", n, err)
			}
			r.Profile = p
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, err
	}
	if !haveEnv || len(r.Results) == 0 {
		return Report{}, fmt.Errorf("log has %d env lines and %d results: the run did not measure (see the log for why)", map[bool]int{true: 1}[haveEnv], len(r.Results))
	}
	s, err := Summarize(r.Results, ws)
	if err != nil {
		return Report{}, err
	}
	r.Summary = s
	return r, nil
}

// Table renders the summary as a Markdown table: medians of both targets
// and their ratio for IOPS, bandwidth and p50/p99 latency.
func Table(ss []Summary) string {
	var b strings.Builder
	b.WriteString("| workload | ublk IOPS | loop IOPS | IOPS ratio | ublk MiB/s | loop MiB/s | ublk p50 µs | loop p50 µs | p50 ratio | ublk p99 µs | loop p99 µs | p99 ratio |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range ss {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | **%.2f** | %.1f | %.1f | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n",
			s.Workload, s.Ublk.IOPS, s.Loop.IOPS, s.Ratio.IOPS, s.Ublk.MiBps, s.Loop.MiBps,
			s.Ublk.P50usec, s.Loop.P50usec, s.Ratio.P50usec,
			s.Ublk.P99usec, s.Loop.P99usec, s.Ratio.P99usec)
	}
	return b.String()
}
