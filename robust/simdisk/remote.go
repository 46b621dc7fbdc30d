package simdisk

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv, set in the disk process's environment, holds its mount's parent directory and seed.
const childEnv = "URAID_SIMDISK_CHILD"

// Disks are the simulated disks as the process they serve sees them: a FUSE mount served by a
// disk process of their own, which this one controls. Every method but Path and Dir asks the disk
// process and waits for its answer; the disk process never waits for this one.
type Disks struct {
	dir      string
	devMinor int
	cmd      *exec.Cmd
	exited   chan struct{}

	mu  sync.Mutex // one request at a time on ctl
	ctl net.Conn
	enc *gob.Encoder
	dec *gob.Decoder

	onCut func(Cut)
}

// request is one call to the disk process; response its answer.
type request struct {
	Op       string
	Name     string
	Off, Len int64
	Size     int64
	Filler   byte
	Data     []byte
	Rule     Rule
}

type response struct {
	Err   string
	Data  []byte
	Gen   uint64
	Cut   bool
	Stats Stats
}

// live lists the Disks not yet closed, for AbortAll.
var live sync.Map // *Disks -> struct{}

// Start runs a disk process (this binary again: its main or TestMain must call ServeChild
// before anything else) that mounts an empty file system of disks at a new directory under
// parent; seed drives its power losses' choices. onCut, if not nil, hears of every power loss a
// rule makes, on a goroutine of its own, after the fact.
func Start(parent string, seed uint64, onCut func(Cut)) (*Disks, error) {
	return startWith(parent, seed, onCut, nil)
}

func startWith(parent string, seed uint64, onCut func(Cut), env []string) (*Disks, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("simulated disks: find this binary to run the disk process: %w", err)
	}
	ctl, ctlChild, err := socketPair()
	if err != nil {
		return nil, err
	}
	ev, evChild, err := socketPair()
	if err != nil {
		ctl.Close()
		ctlChild.Close()
		return nil, err
	}
	// A test binary that does not serve lists no tests and exits: Start then fails at once.
	cmd := exec.Command(exe, "-test.list=^$")
	cmd.Env = append(append(os.Environ(), env...), childEnv+"="+parent+":"+strconv.FormatUint(seed, 10))
	cmd.ExtraFiles = []*os.File{ctlChild, evChild} // fds 3 and 4
	// The disk process's log (slog on its stderr; it writes nothing else) joins this process's:
	// passed through as it is, since another process's lines cannot go through this one's
	// logger, and wherever this process points os.Stderr (the harness: its log file) they land
	// among its own.
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The death signal comes when the thread that started the child exits, not the process:
	// a thread Go later hands to a goroutine that locks it and returns (the ublk queue's does)
	// exits with it, and the disks died under a run. The child is started from a thread locked
	// to a goroutine that lives as long as the child.
	started, exited := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		started <- cmd.Start()
		if cmd.Process != nil {
			cmd.Wait()
		}
		close(exited)
	}()
	if err := <-started; err != nil {
		ctl.Close()
		ev.Close()
		return nil, fmt.Errorf("simulated disks: start the disk process: %w", err)
	}
	ctlChild.Close()
	evChild.Close()
	d := &Disks{cmd: cmd, exited: exited, onCut: onCut}
	d.ctl, err = net.FileConn(ctl)
	ctl.Close()
	if err != nil {
		cmd.Process.Kill()
		return nil, err
	}
	d.enc, d.dec = gob.NewEncoder(d.ctl), gob.NewDecoder(d.ctl)
	// The hello: a binary that does not serve says nothing, and is stopped.
	hello := make(chan error, 1)
	var r response
	go func() { hello <- d.dec.Decode(&r) }()
	select {
	case err = <-hello:
	case <-time.After(time.Minute):
		err = errors.New("no answer in a minute")
	}
	if err == nil && r.Err != "" {
		err = errors.New(r.Err)
	}
	if err != nil {
		cmd.Process.Kill()
		d.ctl.Close()
		ev.Close()
		return nil, fmt.Errorf("simulated disks: the disk process (%s) did not start serving: %v "+
			"(its main or TestMain must call simdisk.ServeChild first)", exe, err)
	}
	d.dir, d.devMinor = string(r.Data), int(r.Gen)
	evConn, err := net.FileConn(ev)
	ev.Close()
	if err == nil {
		go d.readCuts(evConn)
	}
	live.Store(d, struct{}{})
	return d, nil
}

func socketPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("simulated disks: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "simdisk"), os.NewFile(uintptr(fds[1]), "simdisk-child"), nil
}

func (d *Disks) readCuts(c net.Conn) {
	defer c.Close()
	dec := gob.NewDecoder(c)
	for {
		var cut Cut
		if dec.Decode(&cut) != nil {
			return
		}
		if d.onCut != nil {
			d.onCut(cut)
		}
	}
}

// call sends one request and waits for its answer. A disk process that is gone is a failure of
// the run, not of the array: it panics with what it knows.
func (d *Disks) call(q request) response {
	d.mu.Lock()
	defer d.mu.Unlock()
	var r response
	err := d.enc.Encode(&q)
	if err == nil {
		err = d.dec.Decode(&r)
	}
	if err != nil {
		// How it ended says who ended it: a signal from outside, or its own exit (its log
		// has its panic).
		how := "still running"
		select {
		case <-d.exited:
			how = d.cmd.ProcessState.String()
		case <-time.After(time.Second):
		}
		panic(fmt.Sprintf("simulated disks: the disk process does not answer %s: %v (the process: %s)", q.Op, err, how))
	}
	if r.Err != "" {
		panic(fmt.Sprintf("simulated disks: %s: %s", q.Op, r.Err))
	}
	return r
}

// Dir is the mount point; a disk named n is the file Dir()/n.
func (d *Disks) Dir() string { return d.dir }

// Path is the file of disk name.
func (d *Disks) Path(name string) string { return filepath.Join(d.dir, name) }

// Add makes a disk of size bytes, zero-filled. filler is what its punched sectors read as.
func (d *Disks) Add(name string, size int64, filler byte) {
	d.call(request{Op: "add", Name: name, Size: size, Filler: filler})
}

// Arm adds a rule; Disarm takes every rule away.
func (d *Disks) Arm(r Rule) { d.call(request{Op: "arm", Rule: r}) }

func (d *Disks) Disarm() { d.call(request{Op: "disarm"}) }

// PowerLoss cuts the power (see diskFS.PowerLoss) and returns the new generation.
func (d *Disks) PowerLoss() uint64 { return d.call(request{Op: "powerloss"}).Gen }

// Kill is the death of the process served, the power on (see diskFS.Kill); it returns the new
// generation.
func (d *Disks) Kill() uint64 { return d.call(request{Op: "kill"}).Gen }

// CutIf kills the process served (kill) or cuts the power only if the generation is still gen
// (see diskFS.CutIf): the harness's own cut must not be taken for one a rule made first.
func (d *Disks) CutIf(gen uint64, kill bool) (uint64, bool) {
	r := d.call(request{Op: "cutif", Off: int64(gen), Len: map[bool]int64{false: 0, true: 1}[kill]})
	return r.Gen, r.Cut
}

// Resume lets the successor of the process a cut ended open the disks (see diskFS.Resume).
func (d *Disks) Resume() { d.call(request{Op: "resume"}) }

// Gen is the generation: one more for every power loss and kill, the rules' included.
func (d *Disks) Gen() uint64 { return d.call(request{Op: "gen"}).Gen }

// Stats returns the counts so far.
func (d *Disks) Stats() Stats { return d.call(request{Op: "stats"}).Stats }

// Snapshot returns a copy of what disk name's reads see now.
func (d *Disks) Snapshot(name string) []byte { return d.call(request{Op: "snapshot", Name: name}).Data }

// ReadAt reads disk name's current contents at off into b, bypassing the file system and rules.
func (d *Disks) ReadAt(name string, b []byte, off int64) {
	copy(b, d.call(request{Op: "read", Name: name, Off: off, Len: int64(len(b))}).Data)
}

// WriteAt writes b to disk name at off durably, bypassing the file system: a test's hand on a
// member (a copy made to differ).
func (d *Disks) WriteAt(name string, b []byte, off int64) {
	d.call(request{Op: "write", Name: name, Off: off, Data: b})
}

// Abort aborts the mount's FUSE connection: every operation waiting on it fails, and every one
// after it; the disk process stays, for Stats. For a run that must end while requests hang.
func (d *Disks) Abort() { abortConn(d.dir, d.devMinor) }

// Close unmounts the disks and ends the disk process. Files still open on them fail from here on.
func (d *Disks) Close() error {
	defer live.Delete(d)
	d.mu.Lock()
	err := d.enc.Encode(&request{Op: "close"})
	var r response
	if err == nil {
		err = d.dec.Decode(&r)
	}
	d.mu.Unlock()
	if err == nil && r.Err != "" {
		err = errors.New(r.Err)
	}
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.kill()
	}
	d.ctl.Close()
	return err
}

// kill ends the disk process at once: its FUSE connection dies with it, so that whatever waits on
// the disks fails; the dead mount is detached.
func (d *Disks) kill() {
	d.cmd.Process.Kill()
	<-d.exited
	_ = syscall.Unmount(d.dir, syscall.MNT_DETACH)
	os.Remove(d.dir)
}

// AbortAll ends every disk process still running. A process must not exit, nor stop for a
// goroutine dump, while one of its threads waits on disks that nobody will serve: a test binary
// calls it before it exits, and from its watchdog.
func AbortAll() {
	live.Range(func(k, _ any) bool {
		k.(*Disks).kill()
		live.Delete(k)
		return true
	})
}

// ServeChild makes this process a disk process when Start ran it, and then never returns; it
// returns at once in any other process. A binary that uses Start calls it first in its main or
// TestMain.
func ServeChild() {
	env := os.Getenv(childEnv)
	if env == "" {
		return
	}
	os.Exit(serveChild(env))
}

func serveChild(env string) int {
	ctl, err := net.FileConn(os.NewFile(3, "simdisk-ctl"))
	if err != nil {
		slog.Error("simdisk: disk process: no control socket", "err", err)
		return 2
	}
	enc, dec := gob.NewEncoder(ctl), gob.NewDecoder(ctl)
	i := len(env) - 1
	for i >= 0 && env[i] != ':' {
		i--
	}
	seed, err := strconv.ParseUint(env[i+1:], 10, 64)
	var fs *diskFS
	if err == nil {
		fs, err = mount(env[:max(i, 0)], seed)
	}
	if err != nil {
		enc.Encode(&response{Err: err.Error()})
		return 2
	}
	enc.Encode(&response{Data: []byte(fs.dir), Gen: uint64(fs.devMinor)})
	if ev, err := net.FileConn(os.NewFile(4, "simdisk-events")); err == nil {
		go func() {
			e := gob.NewEncoder(ev)
			for c := range fs.cuts {
				if e.Encode(&c) != nil {
					return
				}
			}
		}()
	}
	for {
		var q request
		if err := dec.Decode(&q); err != nil {
			// The process served is gone (io.EOF) or broke the protocol: the disks go with it.
			if !errors.Is(err, io.EOF) {
				slog.Error("simdisk: disk process: control request unreadable; closing the disks", "err", err)
			}
			fs.Close()
			return 0
		}
		var r response
		switch q.Op {
		case "add":
			fs.Add(q.Name, q.Size, q.Filler)
		case "arm":
			fs.Arm(q.Rule)
		case "disarm":
			fs.Disarm()
		case "powerloss":
			r.Gen = fs.PowerLoss()
		case "kill":
			r.Gen = fs.Kill()
		case "cutif":
			r.Gen, r.Cut = fs.CutIf(uint64(q.Off), q.Len == 1)
		case "resume":
			fs.Resume()
		case "gen":
			r.Gen = fs.Gen()
		case "stats":
			r.Stats = fs.Stats()
		case "snapshot", "read", "write":
			if !fs.has(q.Name) {
				r.Err = fmt.Sprintf("no disk %q", q.Name)
				break
			}
			switch q.Op {
			case "snapshot":
				r.Data = fs.Snapshot(q.Name)
			case "read":
				r.Data = make([]byte, q.Len)
				fs.ReadAt(q.Name, r.Data, q.Off)
			default:
				fs.WriteAt(q.Name, q.Data, q.Off)
			}
		case "close":
			if err := fs.Close(); err != nil {
				r.Err = err.Error()
			}
			enc.Encode(&r)
			return 0
		default:
			r.Err = fmt.Sprintf("unknown request %q", q.Op)
		}
		if err := enc.Encode(&r); err != nil {
			fs.Close()
			return 0
		}
	}
}
