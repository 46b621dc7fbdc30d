package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// needMeasure skips a measurement unless URAID_MEASURE=1 asks for it: its timings mean
// something only on a quiet host, and it takes minutes.
func needMeasure(t *testing.T) {
	t.Helper()
	uraidBin(t)
	if os.Getenv("URAID_MEASURE") != "1" {
		t.Skip("a measurement: set URAID_MEASURE=1")
	}
}

// TestE2EMeasureResyncReadLatency measures, and does not judge (timings in a shared guest say
// little), what a resync costs a user's 4 KiB random reads at QD1: the p99 read latency while a
// resync runs, against the same reads once it is done, over a raid1 of two dm-delay devices on
// loop devices (writes take 25 ms once the resync is due, so that it surely outlasts the reads;
// reads are not delayed), in several runs. It runs only with URAID_MEASURE=1.
func TestE2EMeasureResyncReadLatency(t *testing.T) {
	needMeasure(t)
	const runs = 3
	var during, after []float64
	for run := range runs {
		t.Run(fmt.Sprint(run), func(t *testing.T) { // its cleanups free the dm names for the next
			dm := delayedMembers(t, 2, syncMemberSize)
			members := dm.paths
			a := newMirrorArray(t, "ms", "1", members)
			writer := testCommand(t, "fio", "--name=dirty", "--filename="+a.dev, "--rw=randwrite", "--bs=4k",
				"--ioengine=io_uring", "--iodepth=8", "--direct=1", "--time_based", "--runtime=600")
			require.NoError(t, writer.Start())
			st := a.status()
			require.Eventually(t, func() bool {
				st = a.status()
				return st.Regions.Dirty >= st.Regions.Regions*3/4
			}, slow*2*time.Minute, 50*time.Millisecond)
			require.NoError(t, writer.Process.Signal(os.Interrupt))
			_ = writer.Wait() // fio exits 128 after a signal
			a.kill(a.status().PID)
			uraid(t, "stop", a.name)
			dm.setDelay(25 * time.Millisecond)
			a.dev = strings.TrimSpace(uraid(t, append([]string{"assemble", a.name}, members...)...))

			// The reads begin as the resync does: it keeps to its floor while they run.
			d := readP99(t, a.dev)
			st = a.status()
			require.Equal(t, "resync", st.Sync.Action, "the resync ended during the reads: the figure would mix both")
			resynced := st.Sync.DoneBytes
			a.waitSync("resync")
			b := readP99(t, a.dev)
			t.Logf("run %d: 4K QD1 read p99 %.0f us during the resync (%d MiB resynced meanwhile), %.0f us after: %.2fx",
				run, d, resynced>>20, b, d/b)
			during, after = append(during, d), append(after, b)
			uraid(t, "stop", a.name)
		})
	}
	logSpread(t, runs, "during resync", during, "after", after)
}

// TestE2EMeasureRebuildReadLatency measures, and does not judge, what a rebuild costs a user's
// 4 KiB random reads at QD1: the p99 read latency while a rebuild copies onto a new member,
// against the same reads on the degraded array just before it began (the same one copy serves
// them both times), over a raid1 of dm-delay devices filled whole, so that every region is live;
// writes take 25 ms from the rebuild's start on, so that it surely outlasts the reads (reads are
// not delayed). It runs only with URAID_MEASURE=1.
func TestE2EMeasureRebuildReadLatency(t *testing.T) {
	needMeasure(t)
	const runs = 3
	var during, before []float64
	for run := range runs {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			dm := delayedMembers(t, 3, syncMemberSize) // two for the array, one blank to rebuild onto
			members := dm.paths[:2]
			a := newMirrorArray(t, "mb", "1", members)
			sh(t, "fio", "--name=fill", "--filename="+a.dev, "--rw=write", "--bs=1M", "--ioengine=io_uring",
				"--iodepth=4", "--direct=1")
			uraid(t, "fail", a.name, members[1])
			uraid(t, "remove", a.name, members[1])
			dm.setDelay(25 * time.Millisecond)
			b := readP99(t, a.dev)
			uraid(t, "add", a.name, dm.paths[2])
			d := readP99(t, a.dev)
			st := (&rebuildArray{t: t, name: a.name}).status()
			require.NotNil(t, st.Sync)
			require.Equal(t, "rebuild", st.Sync.Action, "the rebuild ended during the reads: the figure would mix both")
			copied := st.Sync.DoneBytes
			a.waitSync("rebuild")
			t.Logf("run %d: 4K QD1 read p99 %.0f us during the rebuild (%d MiB copied meanwhile), %.0f us degraded before it: %.2fx",
				run, d, copied>>20, b, d/b)
			during, before = append(during, d), append(before, b)
			uraid(t, "stop", a.name)
		})
	}
	logSpread(t, runs, "during rebuild", during, "degraded before it", before)
}

// logSpread reports the median and range of the p99 figures of runs measurements under and
// without a job, and of their ratios, run by run; it fails the test if a run is missing.
func logSpread(t *testing.T, runs int, with string, under []float64, without string, base []float64) {
	t.Helper()
	if len(under) < runs || len(base) < runs {
		t.Fatalf("%d of %d runs measured", min(len(under), len(base)), runs)
	}
	ratios := make([]float64, runs)
	for i := range ratios {
		ratios[i] = under[i] / base[i]
	}
	spread := func(v []float64) (float64, float64, float64) {
		v = slices.Sorted(slices.Values(v))
		return v[runs/2], v[0], v[runs-1]
	}
	um, ulo, uhi := spread(under)
	bm, blo, bhi := spread(base)
	rm, rlo, rhi := spread(ratios)
	t.Logf("p99 %s: median %.0f us (%.0f-%.0f); %s: median %.0f us (%.0f-%.0f); ratio median %.2fx (%.2f-%.2f)",
		with, um, ulo, uhi, without, bm, blo, bhi, rm, rlo, rhi)
}

// readP99 runs 4 KiB random reads at QD1 on dev for a few seconds and returns their p99
// completion latency in microseconds.
func readP99(t *testing.T, dev string) float64 {
	t.Helper()
	out, err := testCommand(t, "fio", "--name=lat", "--filename="+dev, "--rw=randread", "--bs=4k",
		"--ioengine=psync", "--direct=1", "--time_based", "--runtime=5", "--output-format=json").Output()
	require.NoError(t, err, "%s", out)
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var res struct {
		Jobs []struct {
			Read struct {
				ClatNs struct {
					Percentile map[string]float64 `json:"percentile"`
				} `json:"clat_ns"`
			} `json:"read"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Len(t, res.Jobs, 1)
	p, ok := res.Jobs[0].Read.ClatNs.Percentile["99.000000"]
	require.True(t, ok, "%s", out)
	return p / 1e3
}
