package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// fioSide is fio's figures for one direction of one job.
type fioSide struct {
	IOPS  float64 `json:"iops"`
	BW    float64 `json:"bw"` // KiB/s
	IOs   int64   `json:"total_ios"`
	Clat  fioLat  `json:"clat_ns"`
	Lat   fioLat  `json:"lat_ns"`
	Trims int64   `json:"-"`
}

type fioLat struct {
	Percentile map[string]float64 `json:"percentile"`
}

type fioJob struct {
	Name  string  `json:"jobname"`
	Read  fioSide `json:"read"`
	Write fioSide `json:"write"`
	Trim  fioSide `json:"trim"`
}

type fioOutput struct {
	Jobs []fioJob `json:"jobs"`
}

// p99 is the 99th percentile completion latency in microseconds.
func (s fioSide) p99() float64 { return s.Clat.Percentile["99.000000"] / 1000 }

// latP99 is the 99th percentile total latency, submission and completion,
// in microseconds; it needs fio's lat_percentiles. A device that completes
// a request within io_uring_enter, as md over RAM disks does, shows its
// time in the submission, not in the completion latency p99 reads.
func (s fioSide) latP99() float64 { return s.Lat.Percentile["99.000000"] / 1000 }

// job is one fio job: its name and options without the dashes. A job with
// "stonewall" starts once every job before it has finished; jobs without it
// run beside the one before.
type job struct {
	name string
	opts []string
}

// fio runs the jobs in one invocation, since starting fio costs seconds
// under emulation, and returns their figures by job name. The global
// options apply to every job.
func fio(ctx context.Context, global []string, jobs ...job) (map[string]fioJob, error) {
	out, err := run(ctx, "fio", fioArgs(global, jobs)...)
	if err != nil {
		return nil, err
	}
	return parseFio(out, jobs)
}

// fioUntil runs the jobs as fio does, each with no end of its own
// (time_based, a runtime far longer than any scenario), until stop is
// closed: then fio is interrupted (SIGINT), on which it ends its jobs and
// still prints their figures. fio stopped that way exits 128, which is no
// failure here; one that ends before stop, or fails to print, is.
func fioUntil(stop <-chan struct{}, global []string, jobs ...job) (map[string]fioJob, error) {
	args := fioArgs(append(slices.Clone(global), "time_based", "runtime=3600"), jobs)
	cmd := exec.Command("fio", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return nil, fmt.Errorf("fio %s: ended before it was stopped: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	case <-stop:
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		return nil, fmt.Errorf("fio: interrupt: %w", err)
	}
	select {
	case <-exited:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-exited
		return nil, errors.New("fio: still running 3 minutes after SIGINT")
	}
	res, err := parseFio(out.String(), jobs)
	if err != nil {
		return nil, fmt.Errorf("%w (fio's stderr: %s)", err, strings.TrimSpace(errb.String()))
	}
	return res, nil
}

// fioArgs is fio's command line for the jobs.
func fioArgs(global []string, jobs []job) []string {
	args := []string{"--output-format=json", "--ioengine=io_uring", "--direct=1", "--group_reporting=0"}
	for _, g := range global {
		args = append(args, "--"+g)
	}
	for _, j := range jobs {
		args = append(args, "--name="+j.name)
		for _, o := range j.opts {
			args = append(args, "--"+o)
		}
	}
	return args
}

// parseFio reads fio's JSON output and checks that it reports every job.
func parseFio(out string, jobs []job) (map[string]fioJob, error) {
	// fio may print notes before its JSON.
	if i := strings.Index(out, "{"); i > 0 {
		out = out[i:]
	}
	var o fioOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		return nil, fmt.Errorf("fio output: %w", err)
	}
	res := map[string]fioJob{}
	for _, j := range o.Jobs {
		res[j.Name] = j
	}
	for _, j := range jobs {
		if _, ok := res[j.name]; !ok {
			return nil, fmt.Errorf("fio reported no job %q", j.name)
		}
	}
	return res, nil
}

func fioCtx(runtime time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), runtime+3*time.Minute)
}

func secs(d time.Duration) string { return fmt.Sprintf("runtime=%d", int(d.Seconds())) }
