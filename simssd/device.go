package simssd

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"uraid/internal/clock"
)

// BlockSize is the unit the device stores data in; discarding part of a
// block zeroes that part (or, with Config.TrimGarbage, fills it with
// garbage).
const BlockSize = 4096

// ErrOutOfRange means an access beyond the end of the device.
var ErrOutOfRange = errors.New("access beyond the end of the simulated device")

// Config describes a device. The zero value of every latency is "instant".
type Config struct {
	Size int64 // bytes

	// TrimLatency is what an isolated TRIM takes. BackToBackLatency is
	// what it takes instead when it starts less than BackToBackWindow after
	// the previous TRIM ended, the penalty measured on some drives (about
	// 1 ms isolated against 100 ms back to back).
	TrimLatency       time.Duration
	BackToBackLatency time.Duration
	BackToBackWindow  time.Duration
	// Jitter adds a uniform random [0, Jitter) to every TRIM, drawn from
	// Seed so that runs repeat.
	Jitter time.Duration
	// Seed seeds the jitter and the bytes of TrimGarbage.
	Seed uint64

	// TrimGarbage makes trimmed bytes read back as garbage instead of
	// zeros, as drives without deterministic zeroes after TRIM may return:
	// the bytes Garbage(Seed, off, ...) gives, the same on every read until
	// the block is written again. Garbage depends on the block number and
	// the seed only: give each device its own seed and they disagree on the
	// bytes of the same trimmed block, which a mirror check must cope with.
	TrimGarbage bool

	ReadLatency  time.Duration
	WriteLatency time.Duration

	// Exclusive makes reads and writes wait while a TRIM runs and a TRIM
	// wait for the reads and writes in progress, like a SATA drive where
	// TRIM is not a queued command. Without it the device is NVMe-like.
	Exclusive bool

	// Record keeps every TRIM received, for Trims.
	Record bool

	// Clock is where the device reads the time and spends its latencies (nil: the wall clock,
	// as the benchmarks need); tests give it clock.Virtual, so latencies cost nothing.
	Clock clock.Clock
}

// Trim is one TRIM the device received.
type Trim struct {
	Off, Len int64
	Start    time.Time
	Latency  time.Duration
}

// Device is a simulated SSD; it implements the discard engine's Issuer.
type Device struct {
	cfg   Config
	clock clock.Clock

	// io makes TRIMs exclusive with reads and writes when cfg.Exclusive.
	io sync.RWMutex

	// trimMu serializes TRIMs: the drive runs one at a time. It guards
	// cfg.TrimLatency (SetTrimLatency) and everything below it up to
	// dataMu.
	trimMu  sync.Mutex
	lastEnd time.Time
	rng     *rand.Rand
	trims   []Trim

	dataMu sync.Mutex
	// blocks holds the blocks that have data; a block absent from it reads
	// as zeros, or as garbage if it is in trimmed. trimmed is used only
	// with cfg.TrimGarbage, and no block is in both. Both guarded by dataMu.
	blocks  map[int64]*[BlockSize]byte
	trimmed map[int64]struct{}

	// The gate (Hold, Release) stops TRIMs at their start for as long as
	// a test wants. gateMu guards the fields below it.
	gateMu sync.Mutex
	// holding is set between Hold and Release.
	holding bool
	// A TRIM that finds the gate held takes the next ticket and passes
	// once admitted exceeds it: ReleaseN admits in arrival order, and
	// Release admits every ticket handed out.
	tickets, admitted uint64
	// moved is closed, and replaced, whenever the gate or its queue
	// changes: it wakes held TRIMs and WaitHeld.
	moved chan struct{}

	trimCalls    atomic.Int64 // Discard calls in progress, waiting or running
	maxTrimCalls atomic.Int64
	trimCount    atomic.Int64
	reads        atomic.Int64
	writes       atomic.Int64
	stalled      atomic.Int64
}

// New returns an empty device (all zeros).
func New(cfg Config) (*Device, error) {
	if cfg.Size <= 0 {
		return nil, fmt.Errorf("simssd: size %d bytes, need a positive size", cfg.Size)
	}
	if cfg.TrimLatency < 0 || cfg.BackToBackLatency < 0 || cfg.BackToBackWindow < 0 || cfg.Jitter < 0 ||
		cfg.ReadLatency < 0 || cfg.WriteLatency < 0 {
		return nil, errors.New("simssd: negative latency")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Device{
		cfg:     cfg,
		clock:   clk,
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		blocks:  make(map[int64]*[BlockSize]byte),
		trimmed: make(map[int64]struct{}),
		moved:   make(chan struct{}),
	}, nil
}

// Size is the device size in bytes.
func (d *Device) Size() int64 { return d.cfg.Size }

func (d *Device) check(op string, off, n int64) error {
	if off < 0 || n < 0 || off > d.cfg.Size-n {
		return fmt.Errorf("simssd %s [%d, +%d): %w (size %d)", op, off, n, ErrOutOfRange, d.cfg.Size)
	}
	return nil
}

// ReadAt reads len(p) bytes at off.
func (d *Device) ReadAt(p []byte, off int64) (int, error) {
	if err := d.check("read", off, int64(len(p))); err != nil {
		return 0, err
	}
	if d.cfg.Exclusive {
		d.shareIO()
		defer d.io.RUnlock()
	}
	d.clock.Sleep(d.cfg.ReadLatency)
	d.reads.Add(1)
	d.dataMu.Lock()
	defer d.dataMu.Unlock()
	for done := 0; done < len(p); {
		pos := off + int64(done)
		b, in := pos/BlockSize, int(pos%BlockSize)
		n := min(len(p)-done, BlockSize-in)
		if blk := d.blocks[b]; blk != nil {
			copy(p[done:done+n], blk[in:])
		} else if _, ok := d.trimmed[b]; ok {
			garbage(d.cfg.Seed, b, in, p[done:done+n])
		} else {
			clear(p[done : done+n])
		}
		done += n
	}
	return len(p), nil
}

// shareIO takes the device for a read or write, counting the ones that had
// to wait for a TRIM.
func (d *Device) shareIO() {
	if !d.io.TryRLock() {
		d.stalled.Add(1)
		d.io.RLock()
	}
}

// WriteAt writes p at off.
func (d *Device) WriteAt(p []byte, off int64) (int, error) {
	if err := d.check("write", off, int64(len(p))); err != nil {
		return 0, err
	}
	if d.cfg.Exclusive {
		d.shareIO()
		defer d.io.RUnlock()
	}
	d.clock.Sleep(d.cfg.WriteLatency)
	d.writes.Add(1)
	d.dataMu.Lock()
	defer d.dataMu.Unlock()
	for done := 0; done < len(p); {
		pos := off + int64(done)
		b, in := pos/BlockSize, int(pos%BlockSize)
		done += copy(d.block(b)[in:], p[done:])
	}
	return len(p), nil
}

// block returns block b's data for writing, materializing it: zeros, or
// the garbage it reads as if trimmed. dataMu held.
func (d *Device) block(b int64) *[BlockSize]byte {
	blk := d.blocks[b]
	if blk != nil {
		return blk
	}
	blk = new([BlockSize]byte)
	if _, ok := d.trimmed[b]; ok {
		garbage(d.cfg.Seed, b, 0, blk[:])
		delete(d.trimmed, b)
	}
	d.blocks[b] = blk
	return blk
}

// Discard trims n bytes at off: it passes the gate (see Hold), takes the
// configured latency, then the bytes read as zeros, or as garbage with
// Config.TrimGarbage.
func (d *Device) Discard(off, n int64) error {
	if err := d.check("discard", off, n); err != nil {
		return err
	}
	calls := d.trimCalls.Add(1)
	defer d.trimCalls.Add(-1)
	for {
		m := d.maxTrimCalls.Load()
		if calls <= m || d.maxTrimCalls.CompareAndSwap(m, calls) {
			break
		}
	}
	d.passGate()
	d.trimMu.Lock()
	defer d.trimMu.Unlock()
	if d.cfg.Exclusive {
		d.io.Lock()
		defer d.io.Unlock()
	}
	start := d.clock.Now()
	lat := d.cfg.TrimLatency
	if !d.lastEnd.IsZero() && start.Sub(d.lastEnd) < d.cfg.BackToBackWindow {
		lat = d.cfg.BackToBackLatency
	}
	if d.cfg.Jitter > 0 {
		lat += time.Duration(d.rng.Int64N(int64(d.cfg.Jitter)))
	}
	d.clock.Sleep(lat)
	d.trim(off, n)
	d.lastEnd = d.clock.Now()
	d.trimCount.Add(1)
	if d.cfg.Record {
		d.trims = append(d.trims, Trim{Off: off, Len: n, Start: start, Latency: d.lastEnd.Sub(start)})
	}
	return nil
}

// trim makes [off, off+n) read as zeros, or as garbage with TrimGarbage,
// freeing whole blocks.
func (d *Device) trim(off, n int64) {
	d.dataMu.Lock()
	defer d.dataMu.Unlock()
	for pos, end := off, off+n; pos < end; {
		b, in := pos/BlockSize, pos%BlockSize
		step := min(end-pos, BlockSize-in)
		pos += step
		blk := d.blocks[b]
		switch {
		case step == BlockSize:
			delete(d.blocks, b)
			if d.cfg.TrimGarbage {
				d.trimmed[b] = struct{}{}
			}
		case !d.cfg.TrimGarbage:
			if blk != nil {
				clear(blk[in : in+step])
			}
		default:
			if _, ok := d.trimmed[b]; ok {
				continue // all garbage already
			}
			garbage(d.cfg.Seed, b, int(in), d.block(b)[in:in+step])
		}
	}
}

// SetTrimLatency changes Config.TrimLatency from the next TRIM on, e.g. to
// let a slow drive's queue drain quickly once a test has what it needs.
func (d *Device) SetTrimLatency(lat time.Duration) error {
	if lat < 0 {
		return fmt.Errorf("simssd: TRIM latency %v, need zero or more", lat)
	}
	d.trimMu.Lock()
	d.cfg.TrimLatency = lat
	d.trimMu.Unlock()
	return nil
}

// Trims returns a copy of the TRIMs received so far (with Config.Record).
func (d *Device) Trims() []Trim {
	d.trimMu.Lock()
	defer d.trimMu.Unlock()
	return append([]Trim(nil), d.trims...)
}

// Counters is what the device has seen.
type Counters struct {
	Trims, Reads, Writes int64
	// MaxConcurrentTrims is the most Discard calls ever in progress at
	// once: more than one means the caller queued TRIMs on a drive that
	// runs them one at a time.
	MaxConcurrentTrims int64
	// Stalled counts reads and writes that waited for a TRIM (Exclusive).
	Stalled int64
	// Held is how many TRIMs wait at the gate now (see Hold); they count
	// among the Discard calls in progress.
	Held int64
}

// Counters returns the device counters.
func (d *Device) Counters() Counters {
	return Counters{
		Trims:              d.trimCount.Load(),
		Reads:              d.reads.Load(),
		Writes:             d.writes.Load(),
		MaxConcurrentTrims: d.maxTrimCalls.Load(),
		Stalled:            d.stalled.Load(),
		Held:               int64(d.heldNow()),
	}
}
