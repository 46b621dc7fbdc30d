package ublkbench

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Figures are what one fio job measured in its direction.
type Figures struct {
	IOPS    float64 `json:"iops"`
	MiBps   float64 `json:"mib_s"`
	P50usec float64 `json:"p50_us"` // completion latency percentiles
	P99usec float64 `json:"p99_us"`
}

// fio's JSON, only the fields read here.
type fioSide struct {
	IOPS float64 `json:"iops"`
	BW   float64 `json:"bw"` // KiB/s
	Clat struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

type fioJob struct {
	Name  string  `json:"jobname"`
	Error int     `json:"error"`
	Read  fioSide `json:"read"`
	Write fioSide `json:"write"`
}

type fioOutput struct {
	Jobs []fioJob `json:"jobs"`
}

// ParseFio reads the JSON of one fio run of the workloads and returns the
// figures of each by name. fio may print notes before its JSON; they are
// skipped. A workload missing from the output, or one that fio reports an
// error for or that did no I/O, is an error: a zero in the results would
// read as a measurement.
func ParseFio(out []byte, ws []Workload) (map[string]Figures, error) {
	s := string(out)
	i := strings.Index(s, "{")
	if i < 0 {
		return nil, fmt.Errorf("fio output has no JSON: %.200q", s)
	}
	var o fioOutput
	if err := json.Unmarshal([]byte(s[i:]), &o); err != nil {
		return nil, fmt.Errorf("fio output: %w", err)
	}
	jobs := map[string]fioJob{}
	for _, j := range o.Jobs {
		jobs[j.Name] = j
	}
	res := map[string]Figures{}
	for _, w := range ws {
		j, ok := jobs[w.Name]
		if !ok {
			return nil, fmt.Errorf("fio reported no job %q", w.Name)
		}
		if j.Error != 0 {
			return nil, fmt.Errorf("fio job %q failed with error %d", w.Name, j.Error)
		}
		side := j.Read
		if w.Write() {
			side = j.Write
		}
		if side.IOPS <= 0 {
			return nil, fmt.Errorf("fio job %q did no I/O", w.Name)
		}
		res[w.Name] = Figures{
			IOPS:    side.IOPS,
			MiBps:   side.BW / 1024,
			P50usec: side.Clat.Percentile["50.000000"] / 1000,
			P99usec: side.Clat.Percentile["99.000000"] / 1000,
		}
	}
	return res, nil
}
