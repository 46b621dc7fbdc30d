package array

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"uraid/internal/plant"
	"uraid/internal/verify"
	"uraid/raid"
	"uraid/region"
	"uraid/ublk"
)

// The array's region map (package region): write intent, so that after a crash only the regions
// being written are resynced, and trimmed regions, which a check skips and a rebuild trims
// instead of copying. Every member carries the same map between its superblock and its data; the
// map's flusher goroutine writes it.
//
// Order of things for a write: the regions it touches must be dirty on every member's disk before
// any copy is written. A write to a region already dirty there (the common case) goes at once; the
// first write to a clean region parks its request until the flusher's next metadata write, which
// covers every write that arrived meanwhile, and is resumed on its queue goroutine after it.

// mapAreaOffset is where a member's region map starts: right after its superblock.
const mapAreaOffset = raid.SuperblockOffset + raid.SuperblockSize

// A region goes back to in sync once no write has ended in it for mapIdle (as md's default bitmap
// delay): much shorter, and a region written every few seconds bounces between dirty and clean,
// each bounce a metadata write that a write waits for; much longer, and more regions are resynced
// after a crash. Lazy work (cleans, trims) reaches the disk every half of it: it is not urgent, a
// region dirty on disk costs only a resync after a crash, one not yet marked trimmed only a copy
// in a rebuild.
const mapIdle = region.DefaultIdle

// maxPendingTrims bounds the discards whose completion the map waits to hear of (and the
// engine's list of watched discards, Config.MaxWatched). A discard that finds the list full is
// forgotten: its regions stay less trimmed than they could be.
const maxPendingTrims = 8192

// regions is the array's region map and what serves it.
//
// Lock order: mu is never held while calling into the discard engine, a member's I/O or a
// request's Resume.
type regions struct {
	a *Array

	mu   sync.Mutex
	cond sync.Cond // on mu: the sync lock's writes drained
	m    *region.Map
	// trims are the discards whose word from the engine the map waits for, by watch key - 1
	// (startTrim, trimDone); freeTrims the unused keys - 1. Both are allocated up front.
	trims     []region.Trim
	freeTrims []uint32
	// waiting lists writes parked until the map generation they need is durable; locked is the
	// region the sync worker holds against writes (-1: none) and lockWaiters the writes that
	// arrived for it. Both are linked through tagState.mapNext.
	waiting     *tagState
	locked      int
	lockWaiters *tagState
	// holding holds back every write, as locked does those of one region: a grow resizes the
	// map with none in flight (holdWrites).
	holding   bool
	flushErr  error      // the last metadata write's failure, for status
	fineMaps  [][]uint64 // discarded blocks per region (fineTrim); nil until the first
	fineBytes int64

	// resync is true while some region needs resync: reads then look up whether they must come
	// from the copy a resync copies from. Read without mu on the read path.
	resync atomic.Bool

	kick     chan struct{} // wakes the flusher: a write waits for a flush
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	start    time.Time     // zero of the clock Clean is given
	idle     time.Duration // a region idle this long is clean again (Options.MapIdle)
	began    bool          // begin wrote the whole map: the array serves

	// flushMu serializes metadata writes (the map allows one in flight) between the flusher,
	// begin and stop; it guards blocks and buf.
	flushMu sync.Mutex
	blocks  []region.Block
	buf     []byte // aligned scratch for one block, O_DIRECT-safe
}

// loadRegions reads the map from every member in slots and merges the copies. An array whose
// members carry no map (made before region maps, or wiped) gets a new one: every region in sync
// when the superblocks say the array stopped cleanly, every region dirty (a full resync) when not.
func loadRegions(a *Array, sb *raid.Superblock) (*regions, error) {
	area := int64(sb.DataOffset) - mapAreaOffset
	rs, err := region.ChooseRegionSize(a.Map().Size(), area)
	if err != nil {
		return nil, err
	}
	g := region.Geometry{ArrayUUID: sb.ArrayUUID, ArraySize: a.Map().Size(), RegionSize: rs}
	var areas [][]byte
	for i, mem := range a.members {
		if mem == nil || !a.writable(i) {
			continue
		}
		buf := raid.AlignedBytes(int(g.AreaBytes()))
		if _, err := mem.File.ReadAt(buf, mapAreaOffset); err != nil {
			return nil, fmt.Errorf("member %s: read region map: %w", mem.Path, err)
		}
		areas = append(areas, buf)
	}
	m, rep, err := region.Load(sb.ArrayUUID, a.Map().Size(), areas)
	switch {
	case errors.Is(err, region.ErrNotMap):
		// Without a map nothing says what was written while a member was away, or what was
		// being written when the array stopped uncleanly: then every region must be resynced.
		initial := region.InSync
		if sb.State == raid.StateDirty || a.Degraded() {
			initial = region.Dirty
		}
		if m, err = region.New(g, initial); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("region map: %w", err)
	default:
		for _, p := range rep.Problems {
			a.log.Warn("region map damaged: its regions count as dirty", "err", p)
		}
	}
	return newRegions(a, m), nil
}

// newRegionMap is the map of a new array: no region holds data of the array's user yet, so every
// region counts as trimmed: a check has nothing to compare there and a rebuild nothing to copy.
func newRegionMap(a *Array, sb *raid.Superblock) (*regions, error) {
	rs, err := region.ChooseRegionSize(a.Map().Size(), int64(sb.DataOffset)-mapAreaOffset)
	if err != nil {
		return nil, err
	}
	m, err := region.New(region.Geometry{ArrayUUID: sb.ArrayUUID, ArraySize: a.Map().Size(), RegionSize: rs}, region.Trimmed)
	if err != nil {
		return nil, err
	}
	return newRegions(a, m), nil
}

func newRegions(a *Array, m *region.Map) *regions {
	g := &regions{
		a: a, m: m, locked: -1,
		trims:     make([]region.Trim, maxPendingTrims),
		freeTrims: make([]uint32, maxPendingTrims),
		kick:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		blocks:    make([]region.Block, 0, m.Blocks()),
		buf:       raid.AlignedBytes(region.BlockSize),
	}
	g.cond.L = &g.mu
	for i := range g.freeTrims {
		g.freeTrims[i] = uint32(len(g.freeTrims) - 1 - i) // key 1 first
	}
	g.resync.Store(m.Resyncs() > 0)
	g.start = time.Now()
	g.idle = mapIdle
	if a.opts.MapIdle > 0 {
		g.idle = a.opts.MapIdle
	}
	go g.run()
	return g
}

// begin writes every block of the map that differs from the members' copies: the whole map when
// it is new (a new array, or one that had none). The daemon calls it before the device serves;
// a write that comes first is not lost (the flusher writes the blocks it needs) but the map on
// disk is whole only from here on.
func (g *regions) begin() error {
	g.began = true
	return g.flush(region.FlushChanged)
}

// run is the flusher: urgent metadata writes as soon as a write waits for one, lazy ones every
// half of idle.
func (g *regions) run() {
	defer close(g.done)
	tick := time.NewTicker(g.idle / 2)
	defer tick.Stop()
	for {
		select {
		case <-g.quit:
			return
		case <-g.kick:
			g.flushLogged(region.FlushUrgent)
		case <-tick.C:
			g.lazy(g.idle)
			g.flushLogged(region.FlushChanged)
		}
	}
}

func (g *regions) flushLogged(mode region.FlushMode) {
	if err := g.flush(mode); err != nil {
		g.a.log.Error("region map not written", "err", err)
	}
}

// lazy cleans regions idle for at least idle. (Regions whose discards completed on every copy
// are marked trimmed as the engine says so: trimDone.)
//
// A region is clean on disk only once what was written to it is durable on every copy: its writes
// may still sit in the members' volatile caches, and a power loss that keeps one copy's and drops
// the other's would leave copies that differ in a region no resync copies (md writes its bitmap
// with a preflush for the same reason). So the members are flushed first, and then only regions
// idle since before the flush are cleaned: a write that ends after it touches its region too
// recently. A member whose flush fails is failed by the engine's error path soon enough; until
// then nothing is cleaned.
func (g *regions) lazy(idle time.Duration) {
	g.mu.Lock()
	dirty := g.m.Count(region.Dirty) > 0
	g.mu.Unlock()
	now := time.Since(g.start)
	clean := true
	if dirty && !plant.Is("clean") {
		if err := g.a.Flush(); err != nil {
			g.a.log.Warn("region map: no region cleaned: members not flushed", "err", err)
			clean = false
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if clean {
		g.m.Clean(now, idle)
	}
	g.resync.Store(g.m.Resyncs() > 0)
}

// writeWhole writes a whole copy of the map to every member and to m, a device about to join.
func (g *regions) writeWhole(m *raid.Member) error {
	return g.flushTo(region.FlushAll, m)
}

// rejoin is called when every member is in service again after the array was degraded: the map
// goes whole to every member, then it may clean again. settled (nil: none) lists the regions a
// rebuild just made agree on every copy, durably: they need no resync. Every other region that
// needs one keeps needing it.
func (g *regions) rejoin(settled []bool) error {
	if err := g.flushTo(region.FlushAll, nil); err != nil {
		return err
	}
	g.mu.Lock()
	g.m.SetDegraded(false)
	for r := g.m.NextResync(0); r >= 0; r = g.m.NextResync(r + 1) {
		if r < len(settled) && settled[r] {
			g.m.Resynced(r)
		}
	}
	g.resync.Store(g.m.Resyncs() > 0)
	g.mu.Unlock()
	return g.flush(region.FlushChanged)
}

// flush writes what mode asks of the map to every active member, durably, then lets the writes
// that waited for it go.
func (g *regions) flush(mode region.FlushMode) error { return g.flushTo(mode, nil) }

// flushTo is flush, writing also to extra (a device about to join) when it is not nil.
func (g *regions) flushTo(mode region.FlushMode, extra *raid.Member) error {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	return g.flushLocked(mode, extra)
}

// flushLocked is flushTo with flushMu held.
func (g *regions) flushLocked(mode region.FlushMode, extra *raid.Member) error {
	for {
		g.mu.Lock()
		gen, blocks, err := g.m.Flush(mode, g.blocks[:0])
		g.mu.Unlock()
		if err != nil || gen == 0 {
			return err
		}
		hit(FailpointMapFlush)
		wrote := 0
		g.a.membersMu.Lock()
		members := append([]*raid.Member(nil), g.a.members...)
		shadows := append([]*raid.Member(nil), g.a.shadowMembers...)
		g.a.membersMu.Unlock()
		if extra != nil {
			if err := g.writeBlocks(extra, blocks); err != nil {
				g.mu.Lock()
				_ = g.m.FlushFailed(gen)
				g.mu.Unlock()
				return fmt.Errorf("member %s: write region map: %w", extra.Path, err)
			}
			extra = nil // once: later rounds carry only what changed since
		}
		for _, sh := range shadows {
			if sh != nil {
				_ = g.writeBlocks(sh, blocks) // a replacement's failure shows in its writes
			}
		}
		for i, mem := range members {
			if mem == nil || !g.a.writable(i) {
				continue
			}
			if err := g.writeBlocks(mem, blocks); err != nil {
				// A member that cannot take its metadata is out of the array, as for a
				// failed data write.
				g.a.fail(i, fmt.Errorf("write region map: %w", err))
				continue
			}
			wrote++
		}
		g.mu.Lock()
		if wrote == 0 {
			err = fmt.Errorf("region map generation %d reached no member", gen)
			g.flushErr = err
			_ = g.m.FlushFailed(gen)
			// No member takes the map: the writes waiting for it would wait forever. They fail.
			lost := g.waiting
			g.waiting = nil
			for t := lost; t != nil; t = t.mapNext {
				t.mapLost = true
			}
			g.mu.Unlock()
			resumeTags(lost)
			return err
		}
		if g.a.Degraded() {
			g.m.SetDegraded(true)
		}
		_ = g.m.Flushed(gen)
		g.flushErr = nil
		durable := g.m.Durable()
		var ready *tagState
		for p := &g.waiting; *p != nil; {
			t := *p
			if t.mapGen <= durable {
				*p = t.mapNext
				t.mapNext = ready
				ready = t
				continue
			}
			p = &t.mapNext
		}
		again := g.m.Urgent()
		g.mu.Unlock()
		resumeTags(ready)
		if !again {
			return nil
		}
		mode = region.FlushUrgent
	}
}

// writeBlocks writes the flush's blocks to one member, each durable before the call returns.
func (g *regions) writeBlocks(m *raid.Member, blocks []region.Block) error {
	for _, b := range blocks {
		copy(g.buf, b.Data)
		n, err := unix.Pwritev2(int(m.File.Fd()), [][]byte{g.buf}, mapAreaOffset+b.Offset, unix.RWF_DSYNC)
		if err == nil && n != len(g.buf) {
			err = fmt.Errorf("short write of %d of %d bytes", n, len(g.buf))
		}
		if err != nil {
			return os.NewSyscallError("pwritev2", err)
		}
	}
	return nil
}

// stop ends the flusher and writes the map one last time. clean (a clean stop: the device is
// gone, every write ended and every discard drained, which told the map of every completed
// discard) first cleans every idle region, so that the next assemble resyncs nothing.
func (g *regions) stop(clean bool) error {
	g.stopOnce.Do(func() {
		close(g.quit)
		<-g.done
	})
	if !g.began {
		return nil // never served: leave the members as they were
	}
	if clean {
		g.lazy(0)
	}
	return g.flush(region.FlushChanged)
}

// resumeTags resumes a list of parked requests, unlinking each before its Resume.
func resumeTags(t *tagState) {
	for t != nil {
		next := t.mapNext
		t.mapNext = nil
		t.req.Resume()
		t = next
	}
}

// beginWrite records the write of r in the map (once per request) and reports whether its
// member writes may be issued: false parks it, to be resumed once the map says its regions are
// dirty on every member, or the sync worker has let go of its region. Queue goroutine.
func (g *regions) beginWrite(r *ublk.Request, t *tagState) bool {
	if t.mapBegun {
		return true
	}
	g.mu.Lock()
	if g.holding || g.locked >= 0 && g.touchesLocked(r.Offset, r.Length) {
		t.mapNext = g.lockWaiters
		g.lockWaiters = t
		g.mu.Unlock()
		return false
	}
	g.fineWrite(r.Offset, r.Length)
	gen, err := g.m.BeginWrite(r.Offset, r.Length)
	if err != nil {
		// Outside the array or too many writes at once: neither can come from a queue the array
		// sized itself, so it is a bug worth a loud failure of this one request.
		g.mu.Unlock()
		g.a.log.Error("region map refused a write; the request fails", "err", err)
		t.mapFailed = true
		return true
	}
	t.mapBegun = true
	if gen == 0 || plant.Is("map") {
		g.mu.Unlock()
		return true
	}
	t.mapGen = gen
	t.mapNext = g.waiting
	g.waiting = t
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default: // a flush is coming anyway
	}
	return false
}

// endWrite records that the write of r is over: ok when every copy it was sent to took it and it
// was sent to every copy. Queue goroutine.
func (g *regions) endWrite(r *ublk.Request, t *tagState, ok bool) {
	if !t.mapBegun {
		return
	}
	t.mapBegun = false
	g.mu.Lock()
	if err := g.m.EndWrite(r.Offset, r.Length, ok); err != nil {
		g.a.log.Error("region map: end of write not recorded", "err", err)
	}
	if !ok {
		g.resync.Store(true)
	}
	if g.locked >= 0 || g.holding {
		g.cond.Broadcast() // the sync worker or a grow may be waiting for writes to end
	}
	g.mu.Unlock()
}

// touchesLocked reports whether [off, off+n) touches the locked region; mu held.
func (g *regions) touchesLocked(off, n int64) bool {
	roff, rn := g.m.Span(g.locked)
	return off < roff+rn && roff < off+n
}

// startTrim records the arrival of a discard of [off, off+n) before it is queued on the members,
// and returns the key to watch it by (Discard.Watch), 0 for none: the map marks its whole regions
// trimmed once the engine says every piece of it was trimmed (trimDone). A discard that covers no
// region whole, comes while the array is degraded, finds the list full, or reaches not every
// member that holds its bytes (watch false: a member out of service skipped its piece) is not
// watched: no region becomes trimmed by it. Queue goroutine.
func (g *regions) startTrim(off, n int64, watch bool) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, err := g.m.StartTrim(off, n)
	if err != nil {
		return 0
	}
	g.fineTrim(off, n)
	if first, end := t.Regions(); first == end || !watch || len(g.freeTrims) == 0 {
		return 0
	}
	i := g.freeTrims[len(g.freeTrims)-1]
	g.freeTrims = g.freeTrims[:len(g.freeTrims)-1]
	g.trims[i] = t
	return uint64(i) + 1
}

// trimDone is the discard engine's word on the discard startTrim watched as key
// (discard.Config.OnTrimmed), once per key, from an engine goroutine or the queue goroutine that
// queued the discard.
//
// The guarantee the map's Trimmed state rests on: trimmed is true only once every piece of the
// discard was trimmed, with no TRIM over it failing, on every member it was queued on, and a
// piece was queued on every member that holds the discarded bytes (startTrim watches no discard
// that skipped a member; the engine says false for a piece it dropped or never queued). Only then
// does EndTrim run, and it marks a region trimmed only if no write to it was in flight when the
// discard arrived (StartTrim, before the discard was queued) and none began since: a request's
// write begins in the map (beginWrite) before the engine admits it (BeginWrite), so a write that
// took a piece of the discard away, which the engine counts as settled, or that lands after its
// TRIM, has disarmed the region by the time this runs. (The sync worker's copies, which the map
// does not count, write what another copy held once no TRIM was pending over it.) Nor
// does a discard that arrived before the array last degraded, or that ends while it is degraded,
// trim anything. Trimmed reaches the disk with a later flush, never before this call.
func (g *regions) trimDone(key uint64, trimmed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := key - 1
	if i >= uint64(len(g.trims)) || g.trims[i] == (region.Trim{}) {
		// Not a key startTrim gave out, or told twice: an engine bug, and one a region must not
		// be trimmed over.
		if verify.On {
			panic(fmt.Sprintf("array: discard watch %d told, not watched", key))
		}
		return
	}
	t := g.trims[i]
	g.trims[i] = region.Trim{}
	g.freeTrims = append(g.freeTrims, uint32(i))
	if trimmed {
		g.m.EndTrim(t)
	}
}

// needsResync reports whether [off, off+n) must be read from the copy a resync copies from, so
// that reads of a region whose copies may differ are repeatable.
func (g *regions) needsResync(off, n int64) bool {
	if !g.resync.Load() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.RangeNeedsResync(off, n)
}

// degraded tells the map that a member is out: no region it leaves dirty is cleaned until the
// member is back and resynced.
func (g *regions) degraded() {
	g.mu.Lock()
	g.m.SetDegraded(true)
	g.mu.Unlock()
}

// RegionCounts is how many regions are in each state.
type RegionCounts struct {
	Regions     int   `json:"regions"`
	RegionBytes int64 `json:"region_bytes"`
	InSync      int   `json:"in_sync"`
	Dirty       int   `json:"dirty"`
	Trimmed     int   `json:"trimmed"`
	// NeedResync counts regions whose copies may differ and that a resync must copy.
	NeedResync int `json:"need_resync"`
}

func (g *regions) counts() RegionCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	return RegionCounts{
		Regions: g.m.Regions(), RegionBytes: g.m.RegionSize(),
		InSync: g.m.Count(region.InSync), Dirty: g.m.Count(region.Dirty), Trimmed: g.m.Count(region.Trimmed),
		NeedResync: g.m.Resyncs(),
	}
}

// lock holds region r against writes for the sync worker: writes that arrive park, and lock
// returns once the writes in flight there have ended, with the region's span.
func (g *regions) lock(r int) (off, n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.locked = r
	for g.m.InFlight(r) > 0 {
		g.cond.Wait()
	}
	return g.m.Span(r)
}

// unlock lets the writes that waited for the locked region go.
func (g *regions) unlock() {
	g.mu.Lock()
	g.locked = -1
	t := g.lockWaiters
	g.lockWaiters = nil
	g.mu.Unlock()
	resumeTags(t)
}

// holdWrites parks every write that arrives from now on and waits until none is in flight: the
// writes a flush must let go first are let go by the flusher, which holdWrites does not stop.
func (g *regions) holdWrites() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holding = true
	for g.m.Writes() > 0 {
		g.cond.Wait()
	}
}

// releaseWrites lets the writes holdWrites parked go; each is admitted again, so one that
// touches a region the sync worker holds waits for it.
func (g *regions) releaseWrites() {
	g.mu.Lock()
	g.holding = false
	t := g.lockWaiters
	g.lockWaiters = nil
	g.mu.Unlock()
	resumeTags(t)
}

func (g *regions) needResync() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Resyncs() > 0
}

func (g *regions) nextResync(from int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.ResyncFrom(from)
}

func (g *regions) stillNeedsResync(r int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.NeedsResync(r)
}

// resynced records that region r's copies agree; its data is durable on every copy.
func (g *regions) resynced(r int) {
	g.mu.Lock()
	g.m.Resynced(r)
	g.mu.Unlock()
}

// resyncDone says the resync found nothing more to do.
func (g *regions) resyncDone() {
	g.mu.Lock()
	g.resync.Store(g.m.Resyncs() > 0)
	g.mu.Unlock()
}

func (g *regions) span(r int) (off, n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Span(r)
}

func (g *regions) regionCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Regions()
}

func (g *regions) trimmed(r int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.State(r) == region.Trimmed
}

// setCursor checkpoints the sync worker; it reaches the disk with a lazy flush.
func (g *regions) setCursor(c region.Cursor) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.m.SetCursor(c); err != nil {
		g.a.log.Error("region map: sync checkpoint not recorded", "err", err)
	}
}

// Discarded bytes, to the block. A region is trimmed in the map only when a discard covered it
// whole; a check must also leave out the smaller discarded extents inside live regions (the free
// space between a filesystem's files, after fstrim), whose contents each drive returns its own
// way. fine keeps them in memory, per region a bitmap of fineUnit blocks discarded and not
// written since, within a budget: past it, or after a restart, such blocks are compared like any
// other and may count as mismatches.
const (
	fineUnit   = 4096
	fineBudget = 64 << 20 // bytes of bitmaps
)

// fineTrim records the blocks [off, off+n) covers whole as discarded; mu held.
func (g *regions) fineTrim(off, n int64) {
	lo, hi := (off+fineUnit-1)/fineUnit, (off+n)/fineUnit
	per := g.m.RegionSize() / fineUnit
	for b := lo; b < hi; {
		r := int(b / per)
		bm := g.fine(r, true)
		end := min(hi, int64(r+1)*per)
		if bm == nil {
			b = end
			continue
		}
		for ; b < end; b++ {
			i := b - int64(r)*per
			bm[i>>6] |= 1 << (i & 63)
		}
	}
}

// fineWrite forgets the discarded blocks a write of [off, off+n) touches; mu held.
func (g *regions) fineWrite(off, n int64) {
	if g.fineBytes == 0 {
		return
	}
	lo, hi := off/fineUnit, (off+n+fineUnit-1)/fineUnit
	per := g.m.RegionSize() / fineUnit
	for b := lo; b < hi; {
		r := int(b / per)
		end := min(hi, int64(r+1)*per)
		if bm := g.fine(r, false); bm != nil {
			for i := b - int64(r)*per; i < end-int64(r)*per; i++ {
				bm[i>>6] &^= 1 << (i & 63)
			}
		}
		b = end
	}
}

// fine returns region r's bitmap, making it if make and the budget allows; mu held.
func (g *regions) fine(r int, make_ bool) []uint64 {
	if g.fineMaps == nil {
		if !make_ {
			return nil
		}
		g.fineMaps = make([][]uint64, g.m.Regions())
	}
	if bm := g.fineMaps[r]; bm != nil || !make_ {
		return bm
	}
	words := (g.m.RegionSize()/fineUnit + 63) / 64
	if g.fineBytes+words*8 > fineBudget {
		return nil
	}
	g.fineBytes += words * 8
	g.fineMaps[r] = make([]uint64, words)
	return g.fineMaps[r]
}

// differing counts the bytes in which a and b, two copies of the array's bytes from logical on,
// differ, leaving out blocks discarded and not written since the array started.
func (g *regions) differing(logical int64, a, b []byte) int64 {
	if bytes.Equal(a, b) {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	per := g.m.RegionSize() / fineUnit
	var d int64
	for i := 0; i < len(a); {
		pos := logical + int64(i)
		end := min(len(a), i+int(fineUnit-pos%fineUnit))
		if !bytes.Equal(a[i:end], b[i:end]) {
			blk := pos / fineUnit
			r := int(blk / per)
			skip := false
			if bm := g.fine(r, false); bm != nil && end-i == fineUnit {
				k := blk - int64(r)*per
				skip = bm[k>>6]&(1<<(k&63)) != 0
			}
			if !skip {
				for k := i; k < end; k++ {
					if a[k] != b[k] {
						d++
					}
				}
			}
		}
		i = end
	}
	return d
}
