package ublkbench

import (
	"fmt"
	"strings"
	"time"
)

// Workload is one fio job run against each target.
type Workload struct {
	Name    string // fio job name, also the key in results
	RW      string // fio rw=
	BS      string // fio bs=
	IODepth int    // fio iodepth=
}

// Workloads are the jobs of one repetition. The QD1 jobs show the latency
// of one round trip through the server; the QD32 ones whether it keeps up
// when the kernel hands it many requests at once; the sequential ones the
// cost of copying large buffers.
var Workloads = []Workload{
	{"randread-4k-qd1", "randread", "4k", 1},
	{"randread-4k-qd32", "randread", "4k", 32},
	{"randwrite-4k-qd1", "randwrite", "4k", 1},
	{"randwrite-4k-qd32", "randwrite", "4k", 32},
	{"read-1m-qd8", "read", "1m", 8},
	{"write-1m-qd8", "write", "1m", 8},
}

// Write reports whether the workload writes; its figures are then fio's
// write side.
func (w Workload) Write() bool { return strings.Contains(w.RW, "write") }

// FioArgs are the arguments of one fio invocation that runs every workload
// in turn against dev: each job is a stonewall so that they never overlap,
// and time-based so that a slow target costs figures, not minutes.
func FioArgs(dev string, size int64, runtime, ramp time.Duration, ws []Workload) []string {
	args := []string{
		"--output-format=json",
		"--filename=" + dev,
		"--ioengine=io_uring",
		"--direct=1",
		fmt.Sprintf("--size=%d", size),
		"--time_based",
		fmt.Sprintf("--runtime=%d", int(runtime.Seconds())),
		fmt.Sprintf("--ramp_time=%d", int(ramp.Seconds())),
		"--randrepeat=0",
		"--norandommap",
		"--group_reporting=0",
	}
	for _, w := range ws {
		args = append(args,
			"--name="+w.Name, "--stonewall",
			"--rw="+w.RW, "--bs="+w.BS, fmt.Sprintf("--iodepth=%d", w.IODepth))
	}
	return args
}
