package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"uraid/daemon"
	"uraid/mapping"
)

// Scenario (j) counts what a request costs the serving process: CPU time, context switches,
// io_uring_enter calls of the queue threads and the Go runtime's own counters, per request, on
// members that cost next to nothing themselves (memory-backed null_blk), uraid beside the
// reference C ublk server's loop target over one member, which does what uraid does per request:
// one member I/O. Counts, not times: they hold on any machine, emulated or not.

// nullMembers are the null_blk devices bench/guest.sh loads: memory-backed, so that a write is
// kept and read back like a disk's, and 1 GiB each, of which the scenario touches costSpan.
var nullMembers = []string{"/dev/nullb0", "/dev/nullb1", "/dev/nullb2", "/dev/nullb3"}

// costSpan is how much of each member the scenario writes once before it measures (null_blk
// allocates a page on its first write, and reads of a page never written cost less) and of the
// device fio works in.
const costSpan = 256 << 20

// costSystem is one server under count.
type costSystem struct {
	name  string
	level mapping.Level // uraid's
	env   []string      // uraid's added environment
	bin   string        // another uraid build, or "" for the configured one
	peer  bool          // the reference server's loop target over nullMembers[0]
}

var costTests = []struct {
	name  string
	opts  []string
	write bool
}{
	{"randread-4k-qd1", []string{"rw=randread", "bs=4k", "iodepth=1"}, false},
	{"randread-4k-qd32", []string{"rw=randread", "bs=4k", "iodepth=32"}, false},
	{"randwrite-4k-qd32", []string{"rw=randwrite", "bs=4k", "iodepth=32"}, true},
}

// (j) Per-request cost. Every repetition serves each system in turn, the peer between the uraid
// arrays and the order rotating, so that all see the same conditions; each run warms up with a
// second of fio, then reads the counters around each job.
func (r *Runner) cost() error {
	for _, m := range nullMembers {
		if _, err := os.Stat(m); err != nil {
			return fmt.Errorf("null_blk members: %w (load it: tests/vm/vm modprobe null_blk nr_devices=4 memory_backed=1 gb=1)", err)
		}
	}
	for _, m := range nullMembers {
		if err := fillN(m, costSpan+4<<20); err != nil {
			return err
		}
	}
	var systems []costSystem
	for _, l := range r.levels() {
		systems = append(systems, costSystem{name: "uraid-" + l.String(), level: l})
		if len(r.cfg.CostEnv) > 0 {
			systems = append(systems, costSystem{name: "uraid-" + l.String() + "+" + strings.Join(r.cfg.CostEnv, ","), level: l, env: r.cfg.CostEnv})
		}
		if r.cfg.CostAlt != "" {
			systems = append(systems, costSystem{name: "uraid-" + l.String() + "@alt", level: l, bin: r.cfg.CostAlt})
		}
	}
	if r.cfg.PeerUblk == "" {
		r.logf("h: no reference server: measuring uraid alone (build it with bench/peer-ublksrv.sh and pass -peer-ublk)")
	} else if _, err := os.Stat(r.cfg.PeerUblk); err != nil {
		r.logf("h: reference server %s: %v: measuring uraid alone", r.cfg.PeerUblk, err)
	} else {
		// Between the arrays, so that each uraid run has the peer beside it.
		systems = slices.Insert(systems, 1, costSystem{name: PeerSystem, peer: true})
	}
	rt := r.dur(4*time.Second, 2*time.Second)
	reps := max(r.cfg.Reps, r.scale(3, 1))
	for rep := range reps {
		order := slices.Clone(systems)
		k := rep % len(order)
		order = append(order[k:], order[:k]...)
		for _, sys := range order {
			if err := r.costOnce(sys, rep, rt); err != nil {
				return fmt.Errorf("%s: %w", sys.name, err)
			}
		}
	}
	return nil
}

// server is a running server under count: its device and process, and how to read its own
// counters (uraid's status) and stop it.
type server struct {
	dev    string
	pid    int
	status func() (*daemon.Status, error)
	stop   func() error
}

func (r *Runner) costOnce(sys costSystem, rep int, rt time.Duration) (err error) {
	for _, m := range nullMembers {
		if err := zeroHead(m, 2<<20); err != nil {
			return err
		}
	}
	var s *server
	if sys.peer {
		s, err = r.startPeer(nullMembers[0])
	} else {
		s, err = r.startURaid(sys.level, sys.env, sys.bin)
	}
	if err != nil {
		return err
	}
	defer func() {
		if serr := s.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	global := []string{"filename=" + s.dev, fmt.Sprintf("size=%d", costSpan)}
	ctx, cancel := fioCtx(time.Second)
	_, err = fio(ctx, global, job{"warm-up", []string{"rw=randread", "bs=4k", "iodepth=32", "runtime=1", "time_based"}})
	cancel()
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, t := range costTests {
		before, err := s.counters(false)
		if err != nil {
			return err
		}
		ctx, cancel := fioCtx(rt)
		res, err := fio(ctx, global, job{t.name, append([]string{secs(rt), "time_based", "lat_percentiles=1"}, t.opts...)})
		cancel()
		if err != nil {
			return err
		}
		after, err := s.counters(true)
		if err != nil {
			return err
		}
		side := res[t.name].Read
		if t.write {
			side = res[t.name].Write
		}
		if side.IOs == 0 {
			return fmt.Errorf("%s: fio completed no I/O", t.name)
		}
		r.recordCost(sys.name, t.name, rep, after.sub(before), side)
	}
	return nil
}

// costCounters is a snapshot of what the serving process has spent.
type costCounters struct {
	cpuTicks int64 // utime+stime of the process, its exited threads included
	switches int64 // voluntary+nonvoluntary context switches, summed over its threads
	threads  map[int]threadCounters
	own      *daemon.CostStatus // uraid's own counters; nil for the peer
}

type threadCounters struct {
	comm               string
	cpuTicks, switches int64
}

// counters reads the process's counters and uraid's own. A status request costs the daemon CPU and
// a switch or two: read before /proc when a window opens and after it when one closes, it falls
// outside the window.
func (s *server) counters(closing bool) (costCounters, error) {
	var c costCounters
	if closing {
		if err := c.readProc(s.pid); err != nil {
			return c, err
		}
	}
	if s.status != nil {
		st, err := s.status()
		if err != nil {
			return c, err
		}
		if st.Cost == nil {
			return c, fmt.Errorf("uraid's status has no cost counters (a daemon older than this benchmark?)")
		}
		c.own = st.Cost
	}
	if !closing {
		return c, c.readProc(s.pid)
	}
	return c, nil
}

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture
// userspace sees.
const clockTick = 100

func (c *costCounters) readProc(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("server process %d: %w", pid, err)
	}
	if c.cpuTicks, err = statTicks(string(b)); err != nil {
		return fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil {
		return err
	}
	c.threads = map[int]threadCounters{}
	for _, t := range tasks {
		tid, err := strconv.Atoi(filepath.Base(t))
		if err != nil {
			continue
		}
		var tc threadCounters
		// A thread may exit between the listing and the read: it is then not counted.
		st, err := os.ReadFile(t + "/stat")
		if err != nil {
			continue
		}
		if tc.cpuTicks, err = statTicks(string(st)); err != nil {
			return fmt.Errorf("%s/stat: %w", t, err)
		}
		status, err := os.ReadFile(t + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch k {
			case "Name":
				tc.comm = strings.TrimSpace(v)
			case "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches":
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return fmt.Errorf("%s/status: %s: %w", t, k, err)
				}
				tc.switches += n
			}
		}
		c.threads[tid] = tc
		c.switches += tc.switches
	}
	return nil
}

// statTicks is utime+stime from a /proc stat line, whose second field (the command, in
// parentheses) may hold spaces.
func statTicks(line string) (int64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command field in %q", line)
	}
	f := strings.Fields(line[i+1:])
	// After the command: state is field 3, utime 14 and stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command, want at least 13", len(f))
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// sub is what was spent between b and c. Threads that started in between count from zero;
// threads that ended in between are in cpuTicks (the process keeps its exited threads' times) but
// not in switches.
func (c costCounters) sub(b costCounters) costCounters {
	d := costCounters{cpuTicks: c.cpuTicks - b.cpuTicks, threads: map[int]threadCounters{}}
	for tid, t := range c.threads {
		if o, ok := b.threads[tid]; ok {
			t.cpuTicks -= o.cpuTicks
			t.switches -= o.switches
		}
		d.threads[tid] = t
		d.switches += t.switches
	}
	if c.own != nil && b.own != nil {
		own := *c.own
		own.Queues = slices.Clone(c.own.Queues)
		for i := range own.Queues {
			for _, q := range b.own.Queues {
				if q.Queue == own.Queues[i].Queue {
					own.Queues[i].IOUringEnters -= q.IOUringEnters
				}
			}
		}
		own.Runtime.GCCPUSeconds -= b.own.Runtime.GCCPUSeconds
		own.Runtime.SchedLatencyCount -= b.own.Runtime.SchedLatencyCount
		own.Runtime.SchedLatencySeconds -= b.own.Runtime.SchedLatencySeconds
		d.own = &own
	}
	return d
}

// recordCost adds one job's counts, divided by its requests.
func (r *Runner) recordCost(system, test string, rep int, d costCounters, side fioSide) {
	n := float64(side.IOs)
	add := func(metric, unit string, v float64) {
		r.add(Result{Scenario: "j-cost", Case: test, System: system, Metric: metric, Unit: unit, Better: "lower"}, v)
	}
	cpu := float64(d.cpuTicks) * 1e6 / clockTick / n
	sw := float64(d.switches) / n
	add("cpu_per_req", "us", cpu)
	add("switches_per_req", "switches", sw)
	r.add(Result{Scenario: "j-cost", Case: test, System: system, Metric: "iops", Unit: "iops", Better: "higher"}, side.IOPS)
	add("lat_p50", "us", latP50(side))
	line := fmt.Sprintf("h %s %s rep %d: %d I/Os, %.0f iops, p50 %.0f us; per request: CPU %.1f us, %.3f switches",
		system, test, rep, side.IOs, side.IOPS, latP50(side), cpu, sw)
	if o := d.own; o != nil {
		var enters uint64
		var each []string
		for _, q := range o.Queues {
			enters += q.IOUringEnters
			each = append(each, fmt.Sprintf("q%d %.3f", q.Queue, float64(q.IOUringEnters)/n))
		}
		add("enters_per_req", "calls", float64(enters)/n)
		waits := float64(o.Runtime.SchedLatencyCount) / n
		add("sched_waits_per_req", "waits", waits)
		mean := 0.0
		if o.Runtime.SchedLatencyCount > 0 {
			mean = o.Runtime.SchedLatencySeconds * 1e6 / float64(o.Runtime.SchedLatencyCount)
		}
		add("sched_latency_mean", "us", mean)
		add("gc_cpu_per_req", "us", o.Runtime.GCCPUSeconds*1e6/n)
		r.add(Result{Scenario: "j-cost", Case: test, System: system, Metric: "goroutines", Unit: "goroutines", Better: "lower"},
			float64(o.Runtime.Goroutines))
		line += fmt.Sprintf(", %.3f io_uring_enter (%s), %.3f sampled scheduler waits of %.1f us mean, GC %.2f us; GOMAXPROCS %d, %d goroutines",
			float64(enters)/n, strings.Join(each, ", "), waits, mean, o.Runtime.GCCPUSeconds*1e6/n, o.Runtime.GOMAXPROCS, o.Runtime.Goroutines)
	}
	r.logf("%s", line)
	r.logf("h %s %s rep %d: threads (CPU us, switches per request): %s", system, test, rep, topThreads(d, n))
}

// topThreads names the threads that switched or worked most, with their share per request.
func topThreads(d costCounters, n float64) string {
	type th struct {
		tid int
		threadCounters
	}
	var ts []th
	for tid, t := range d.threads {
		if t.cpuTicks > 0 || t.switches > 0 {
			ts = append(ts, th{tid, t})
		}
	}
	slices.SortFunc(ts, func(a, b th) int { return int(b.switches - a.switches) })
	var out []string
	queue := map[int]int{}
	if d.own != nil {
		for _, q := range d.own.Queues {
			queue[q.TID] = q.Queue + 1
		}
	}
	for i, t := range ts {
		if i == 6 {
			break
		}
		name := fmt.Sprintf("%s/%d", t.comm, t.tid)
		if q := queue[t.tid]; q > 0 {
			name += fmt.Sprintf("(queue %d)", q-1)
		}
		out = append(out, fmt.Sprintf("%s %.1f/%.3f", name, float64(t.cpuTicks)*1e6/clockTick/n, float64(t.switches)/n))
	}
	return strings.Join(out, ", ")
}

// startURaid creates a uraid array of level over nullMembers.
func (r *Runner) startURaid(level mapping.Level, env []string, bin string) (*server, error) {
	sys := uraidSystem(level, "sync")
	sys.Env, sys.Bin = env, bin
	a, err := r.create(sys, nullMembers, nil)
	if err != nil {
		return nil, err
	}
	s := &server{dev: a.dev, stop: func() error { return r.stop(a) }}
	s.status = func() (*daemon.Status, error) {
		out, err := run(context.Background(), r.cfg.URaid, "detail", "--json", a.name)
		if err != nil {
			return nil, err
		}
		var st daemon.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return nil, fmt.Errorf("uraid detail --json: %w", err)
		}
		return &st, nil
	}
	st, err := s.status()
	if err == nil && st.PID == 0 {
		err = fmt.Errorf("uraid detail --json names no daemon pid")
	}
	if err != nil {
		r.stop(a)
		return nil, err
	}
	s.pid = st.PID
	return s, nil
}

var (
	peerDevID = regexp.MustCompile(`dev id (\d+)`)
	peerPID   = regexp.MustCompile(`daemon pid (\d+)`)
)

// startPeer serves member through the reference server's loop target with uraid's queue layout
// for a 2-CPU guest (two queues of depth 128).
func (r *Runner) startPeer(member string) (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := run(ctx, r.cfg.PeerUblk, "add", "-t", "loop", "-q", "2", "-d", "128", "-f", member)
	if err != nil {
		return nil, err
	}
	m := peerDevID.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("ublk add printed no device id: %q", out)
	}
	id := m[1]
	s := &server{dev: "/dev/ublkb" + id, stop: func() error {
		_, err := run(context.Background(), r.cfg.PeerUblk, "del", "-n", id)
		return err
	}}
	if p := peerPID.FindStringSubmatch(out); p != nil {
		s.pid, _ = strconv.Atoi(p[1])
	}
	if s.pid == 0 {
		lst, err := run(ctx, r.cfg.PeerUblk, "list", "-n", id)
		if p := peerPID.FindStringSubmatch(lst); err == nil && p != nil {
			s.pid, _ = strconv.Atoi(p[1])
		}
	}
	if s.pid == 0 {
		s.stop()
		return nil, fmt.Errorf("ublk add/list named no daemon pid: %q", out)
	}
	if err := waitBlock(s.dev); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitBlock waits for a block device node to appear.
func waitBlock(dev string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st unix.Stat_t
		err := unix.Stat(dev, &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear: %v", dev, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fillN writes the first n bytes of dev once (n < 0: all of it, whole mebibytes).
func fillN(dev string, n int64) error {
	f, err := os.OpenFile(dev, os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	defer unix.Munmap(buf)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	if n < 0 {
		size, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			return fmt.Errorf("fill %s: %w", dev, err)
		}
		n = size / int64(len(buf)) * int64(len(buf))
	}
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("fill %s: %w", dev, err)
		}
	}
	return nil
}
