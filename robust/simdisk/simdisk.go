// Package simdisk serves simulated disks as files of a FUSE file system, so that the array's real
// code, io_uring and all, does its member I/O against them. The disks live in a second process
// (Start runs it; the binary's main or TestMain calls ServeChild first): a process must never
// wait on a FUSE server of its own. io_uring issues a request to a file from task work, which the
// kernel may run on any thread of the submitting process, one that the Go runtime believes is
// running Go code; when that thread waits for its own process's FUSE server, a stop of the world
// (every garbage collection) waits for the thread, and the server's goroutines never run again.
//
// A disk keeps what a drive with a volatile write cache keeps: a write is durable only once a
// flush (fsync) that follows it completes, or at once when it is FUA (O_DSYNC, RWF_DSYNC). A power
// loss keeps, of each write not yet durable, each 4 KiB sector or not, independently, by a seeded
// choice: a torn write keeps some sectors. A crash of the serving process alone (Kill) keeps
// everything the disks took. Either way every file descriptor opened before it is dead (EIO), as
// a dead process's would be; the files are opened anew.
//
// Every operation passes the armed Rules first, which may fail it or cut the power before it: the
// robustness harness's faults and failpoints at the member I/O level. The disk process decides
// them on its own and never waits for the process it serves: a cut is reported afterwards.
package simdisk

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Sector is the unit a power loss keeps or drops.
const Sector = 4096

// Kind is what an operation does.
type Kind int

// Kinds of operations.
const (
	Read Kind = iota
	Write
	Flush // fsync, fdatasync
	Punch // fallocate PUNCH_HOLE: a file member's discard
)

func (k Kind) String() string {
	return [...]string{"read", "write", "flush", "punch"}[k]
}

// Op is one operation on a disk, as the filter sees it.
type Op struct {
	Disk     string
	Kind     Kind
	Off, Len int64
	FUA      bool
}

func (o Op) String() string {
	s := fmt.Sprintf("%s %s [%d, +%d)", o.Disk, o.Kind, o.Off, o.Len)
	if o.FUA {
		s += " fua"
	}
	return s
}

// Match picks operations: of Kind, on Disk ("" any), starting at an offset in [From, To) (To 0:
// no end). A flush's offset is 0.
type Match struct {
	Disk     string
	Kind     Kind
	From, To int64
}

func (m Match) matches(op Op) bool {
	return op.Kind == m.Kind && (m.Disk == "" || m.Disk == op.Disk) && op.Off >= m.From && (m.To == 0 || op.Off < m.To)
}

// Rule is armed on the disks: it fails the next N operations it matches (EIO), or, with Cut,
// cuts the power just before the N-th and fails that one.
type Rule struct {
	Match
	N   int
	Cut bool
	// Why names the rule in the Cut it reports.
	Why string
}

// Cut is a power loss a rule made.
type Cut struct {
	Gen uint64 // the generation it started
	Why string
	Op  Op // the operation it cut before
}

// pending is a write or punch not yet durable.
type pending struct {
	seq      uint64
	off, len int64
	data     []byte // nil: a punch
}

// Disk is one simulated disk.
type Disk struct {
	name    string
	ino     uint64
	size    int64
	cur     []byte // what reads see
	durable []byte // what a power loss keeps for certain
	// durSeq is, per sector, the sequence number of the last operation durable there: a pending
	// write older than it is not replayed over it.
	durSeq []uint64
	log    []pending
	// holes says what a punched sector reads as: zeros, or this disk's own filler (a drive
	// returns what it likes for trimmed blocks).
	filler byte
}

// diskFS is a mounted file system of disks, in the disk process.
type diskFS struct {
	dir string
	srv *fuse.Server
	rng *rand.Rand

	// mu: every operation holds it shared while it works on a disk; a power loss or a kill holds
	// it alone, so that it cuts between operations.
	mu    sync.RWMutex
	disks map[string]*Disk
	byIno map[uint64]*Disk
	gen   uint64 // file handles of older generations are dead
	// down: cut, and no successor yet (Resume): the process that was served is dead, so a file
	// it opens now must be dead too, not a live one of the next generation.
	down   bool
	seq    uint64
	rules  []Rule
	cuts   chan Cut // the power losses rules made, for the process served
	nextFh uint64
	fhs    map[uint64]fh
	fhMu   sync.Mutex

	stats    Stats
	devMinor int
}

type fh struct {
	d   *Disk
	gen uint64
}

// Stats counts what the disks did.
type Stats struct {
	Reads, Writes, Flushes, Punches, FUA int64
	PowerLosses, Kills                   int64
	DroppedSectors, KeptSectors          int64
	Failed                               int64
}

// mount mounts an empty file system of disks at a new directory under parent; seed drives the
// power losses' choices. The disk process's own.
func mount(parent string, seed uint64) (*diskFS, error) {
	dir, err := os.MkdirTemp(parent, "simdisk-")
	if err != nil {
		return nil, err
	}
	fs := &diskFS{dir: dir, rng: rand.New(rand.NewPCG(seed, 0x5eed)), disks: map[string]*Disk{}, byIno: map[uint64]*Disk{}, fhs: map[uint64]fh{},
		cuts: make(chan Cut, 64)}
	srv, err := fuse.NewServer(&rawFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), fs: fs}, dir, &fuse.MountOptions{
		DirectMount: true, MaxWrite: 1 << 20, FsName: "simdisk", Name: "simdisk", DisableXAttrs: true,
		MaxBackground: 64,
	})
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("mount simulated disks (FUSE) at %s: %w", dir, err)
	}
	fs.srv = srv
	var st syscall.Stat_t
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		os.Remove(dir)
		return nil, err
	}
	if syscall.Stat(dir, &st) == nil {
		fs.devMinor = int(st.Dev&0xff) | int(st.Dev>>12&^0xff) // the connection's number
	}
	return fs, nil
}

// Close unmounts the file system. Files still open on it fail from here on.
func (fs *diskFS) Close() error {
	fs.mu.Lock()
	fs.gen++
	fs.mu.Unlock()
	err := fs.srv.Unmount()
	if err != nil {
		// Something holds a file open, or waits on the file system: abort the connection, so that
		// whatever waits fails instead of holding up this process's exit for ever, and detach.
		fs.abort()
		_ = syscall.Unmount(fs.dir, syscall.MNT_DETACH)
	}
	os.Remove(fs.dir)
	return err
}

// abort aborts the FUSE connection of the mount.
func (fs *diskFS) abort() { abortConn(fs.dir, fs.devMinor) }

// abortConn aborts the FUSE connection of the mount at dir, number minor (0: from dir), through
// fusectl (mounted if it is not).
func abortConn(dir string, minor int) {
	var st syscall.Stat_t
	if minor == 0 {
		if syscall.Stat(dir, &st) != nil {
			return
		}
		minor = int(st.Dev&0xff) | int(st.Dev>>12&^0xff)
	}
	const ctl = "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, fmt.Sprint(minor))); err != nil {
		_ = syscall.Mount("none", ctl, "fusectl", 0, "")
	}
	_ = os.WriteFile(filepath.Join(ctl, fmt.Sprint(minor), "abort"), []byte("1"), 0)
}

func (fs *diskFS) has(name string) bool {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.disks[name] != nil
}

// Add makes a disk of size bytes, zero-filled. filler is what its punched sectors read as.
func (fs *diskFS) Add(name string, size int64, filler byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d := &Disk{name: name, ino: uint64(len(fs.disks) + 2), size: size, cur: make([]byte, size), durable: make([]byte, size),
		durSeq: make([]uint64, (size+Sector-1)/Sector), filler: filler}
	fs.disks[name] = d
	fs.byIno[d.ino] = d
}

// Arm adds a rule; Disarm takes every rule away.
func (fs *diskFS) Arm(r Rule) {
	fs.mu.Lock()
	fs.rules = append(fs.rules, r)
	fs.mu.Unlock()
}

func (fs *diskFS) Disarm() {
	fs.mu.Lock()
	fs.rules = nil
	fs.mu.Unlock()
}

// Gen is the generation: one more for every power loss and kill.
func (fs *diskFS) Gen() uint64 {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.gen
}

// decide applies the rules to op: nil lets it go; an error fails it, after a cut if a rule said so.
func (fs *diskFS) decide(op Op) error {
	fs.mu.Lock()
	var cut *Rule
	failed := false
	for i := range fs.rules {
		r := &fs.rules[i]
		if r.N <= 0 || !r.matches(op) {
			continue
		}
		r.N--
		if !r.Cut {
			failed = true
			break
		}
		if r.N == 0 {
			cut = r
			break
		}
	}
	if failed {
		fs.stats.Failed++
	}
	fs.mu.Unlock()
	if cut != nil {
		gen := fs.PowerLoss()
		select {
		case fs.cuts <- Cut{Gen: gen, Why: cut.Why, Op: op}:
		default: // nobody reads them: the generation still tells
		}
		return syscall.EIO
	}
	if failed {
		return syscall.EIO
	}
	return nil
}

// Stats returns the counts so far.
func (fs *diskFS) Stats() Stats {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.stats
}

// PowerLoss cuts the power: of each disk, what is durable stays, and of each write not yet
// durable each sector stays or goes by the seeded choice; every file open so far is dead, and
// none opens until Resume. It returns the new generation.
func (fs *diskFS) PowerLoss() uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.powerLoss()
}

// CutIf cuts the power (or kills the process served) only if the generation is still gen, and
// returns the generation after it and whether it cut: no when a rule cut the disks first.
func (fs *diskFS) CutIf(gen uint64, kill bool) (uint64, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.gen != gen {
		return fs.gen, false
	}
	if kill {
		return fs.kill(), true
	}
	return fs.powerLoss(), true
}

func (fs *diskFS) powerLoss() uint64 {
	fs.gen++
	fs.down = true
	fs.stats.PowerLosses++
	for _, name := range fs.names() {
		d := fs.disks[name]
		for _, p := range d.log {
			for s := p.off / Sector; s*Sector < p.off+p.len; s++ {
				if d.durSeq[s] > p.seq {
					continue // a later durable write covers it
				}
				if fs.rng.IntN(2) == 0 {
					fs.stats.DroppedSectors++
					continue
				}
				fs.stats.KeptSectors++
				lo, hi := max(p.off, s*Sector), min(p.off+p.len, (s+1)*Sector)
				if p.data == nil {
					d.fillHole(d.durable, lo, hi)
				} else {
					copy(d.durable[lo:hi], p.data[lo-p.off:hi-p.off])
				}
				d.durSeq[s] = p.seq
			}
		}
		d.log = d.log[:0]
		copy(d.cur, d.durable)
	}
	return fs.gen
}

// Kill is the death of the process serving the array, the power on: the disks keep all they
// took (what is not durable stays in their caches, a later power loss may still lose it), and
// every file open so far is dead, and none opens until Resume. It returns the new generation.
func (fs *diskFS) Kill() uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.kill()
}

func (fs *diskFS) kill() uint64 {
	fs.gen++
	fs.down = true
	fs.stats.Kills++
	return fs.gen
}

// Resume lets the successor of the process a power loss or a kill ended open the disks: until
// then every open fails, as the dead process's would.
func (fs *diskFS) Resume() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.down = false
}

// Snapshot returns a copy of what disk name's reads see now.
func (fs *diskFS) Snapshot(name string) []byte {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return append([]byte(nil), fs.disks[name].cur...)
}

// ReadAt reads disk name's current contents at off, bypassing the file system (and its filter).
func (fs *diskFS) ReadAt(name string, b []byte, off int64) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	copy(b, fs.disks[name].cur[off:])
}

// WriteAt writes b to disk name at off durably, bypassing the file system: a test's hand on a
// member (a copy made to differ).
func (fs *diskFS) WriteAt(name string, b []byte, off int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d := fs.disks[name]
	fs.seq++
	copy(d.cur[off:], b)
	copy(d.durable[off:], b)
	for s := off / Sector; s*Sector < off+int64(len(b)); s++ {
		d.durSeq[s] = fs.seq
	}
}

func (fs *diskFS) names() []string {
	n := make([]string, 0, len(fs.disks))
	for k := range fs.disks {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func (d *Disk) fillHole(img []byte, lo, hi int64) {
	for i := lo; i < hi; i++ {
		img[i] = d.filler
	}
}

// do runs one operation: the rules, then the disk, for a handle of the current generation only.
func (fs *diskFS) do(h uint64, op Op, data []byte) (n int, err error) {
	fs.fhMu.Lock()
	f, ok := fs.fhs[h]
	fs.fhMu.Unlock()
	if !ok {
		return 0, syscall.EBADF
	}
	op.Disk = f.d.name
	fs.mu.RLock()
	gen := fs.gen
	fs.mu.RUnlock()
	if f.gen != gen {
		return 0, syscall.EIO
	}
	if err := fs.decide(op); err != nil {
		return 0, err
	}
	// Exclusive: a disk's image, log and counters change here, and this is a test's disk.
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.gen != fs.gen {
		return 0, syscall.EIO // the power went meanwhile
	}
	d := f.d
	if op.Off < 0 || op.Off > d.size {
		return 0, syscall.EINVAL
	}
	end := min(op.Off+op.Len, d.size)
	switch op.Kind {
	case Read:
		fs.stats.Reads++
		return copy(data, d.cur[op.Off:end]), nil
	case Write:
		fs.stats.Writes++
		if op.FUA {
			fs.stats.FUA++
		}
		fs.seq++
		n := copy(d.cur[op.Off:end], data)
		if op.FUA {
			copy(d.durable[op.Off:end], data)
			for s := op.Off / Sector; s*Sector < end; s++ {
				d.durSeq[s] = fs.seq
			}
		} else {
			d.log = append(d.log, pending{seq: fs.seq, off: op.Off, len: int64(n), data: append([]byte(nil), data[:n]...)})
		}
		return n, nil
	case Punch:
		fs.stats.Punches++
		fs.seq++
		d.fillHole(d.cur, op.Off, end)
		d.log = append(d.log, pending{seq: fs.seq, off: op.Off, len: end - op.Off})
		return 0, nil
	case Flush:
		fs.stats.Flushes++
		fs.seq++
		for _, p := range d.log {
			// What reads see now is what the flush makes durable: later writes, FUA ones
			// included, over the logged ones.
			copy(d.durable[p.off:p.off+p.len], d.cur[p.off:p.off+p.len])
			for s := p.off / Sector; s*Sector < p.off+p.len; s++ {
				d.durSeq[s] = fs.seq
			}
		}
		d.log = d.log[:0]
		return 0, nil
	}
	return 0, syscall.ENOSYS
}

func (fs *diskFS) open(ino uint64) (uint64, fuse.Status) {
	fs.mu.RLock()
	d, ok := fs.byIno[ino]
	gen, down := fs.gen, fs.down
	fs.mu.RUnlock()
	switch {
	case !ok:
		return 0, fuse.ENOENT
	case down:
		return 0, fuse.EIO
	}
	fs.fhMu.Lock()
	defer fs.fhMu.Unlock()
	fs.nextFh++
	fs.fhs[fs.nextFh] = fh{d: d, gen: gen}
	return fs.nextFh, fuse.OK
}

func (fs *diskFS) release(h uint64) {
	fs.fhMu.Lock()
	delete(fs.fhs, h)
	fs.fhMu.Unlock()
}
