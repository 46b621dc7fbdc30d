package region

import "fmt"

// BeginWrite records a write of [off, off+n) that is about to be issued,
// and says whether it may be: it returns 0 when every region the write
// touches is already dirty on disk, so the write may go to the members at
// once. Otherwise the regions are now dirty in memory and it returns the
// generation of the flush that will carry them: the caller holds the write
// until Durable() >= that generation, starting a flush if none is in
// flight (Urgent then says one is needed). Every write that arrives while
// a flush is in flight waits for the same next flush, so one metadata
// write covers them all.
//
// The write counts as in flight in every region it touches until EndWrite,
// whatever becomes of it: no region leaves Dirty while a write to it is in
// flight, and no discard that arrives meanwhile trims it. It also cancels
// any discard in progress over those regions.
//
// A write to a region already dirty on disk — the hot path — costs O(1)
// per region touched and allocates nothing. It fails only for a range
// outside the array or past MaxWrites in flight, and then changes nothing.
func (m *Map) BeginWrite(off, n int64) (uint64, error) {
	first, last, err := m.span(off, n)
	if err != nil {
		return 0, fmt.Errorf("begin write: %w", err)
	}
	if m.writes >= MaxWrites {
		return 0, fmt.Errorf("%w: begin write: %d writes in flight already", ErrProtocol, m.writes)
	}
	m.writes++
	var wait uint64
	for r := first; r <= last; r++ {
		m.inflight[r]++
		m.armed[r] = 0
		if m.degraded {
			m.setResync(r)
		}
		if get(m.mem, r) != Dirty {
			m.setState(r, Dirty)
		}
		if testBit(m.onDisk, r) && get(m.flight, r) == Dirty {
			continue
		}
		// Not dirty on every member for certain. A flush in flight that
		// makes it so is enough; otherwise the next flush must carry it.
		b := r / RegionsPerBlock
		g := m.gen + 1
		if m.blk[b].flying && get(m.flight, r) == Dirty {
			g = m.gen
		} else {
			m.markUrgent(b)
		}
		wait = max(wait, g)
	}
	return wait, nil
}

// EndWrite records that the write of [off, off+n) begun with BeginWrite is
// over: ok when it completed on every copy, false when it failed on some
// copy or was not sent to one. A failed write leaves its regions needing
// resync: they stay Dirty, on disk and in memory, until Resynced (or
// trimmed whole on every copy). So does
// any write that ends while the array is degraded. A region whose last
// write ended becomes a candidate for Clean.
//
// Call it once per BeginWrite with the same range, after the write has
// completed on every copy it was sent to: keep the range with the request.
// It allocates nothing; a range with no write begun in some region fails
// with ErrProtocol and changes nothing. Any other mismatch — a part of a
// begun range, or a range begun by other writes — the map cannot see, and
// it would let a region be cleaned with a write in flight.
func (m *Map) EndWrite(off, n int64, ok bool) error {
	first, last, err := m.span(off, n)
	if err != nil {
		return fmt.Errorf("end write: %w", err)
	}
	for r := first; r <= last; r++ {
		if m.inflight[r] == 0 {
			return fmt.Errorf("%w: end write [%d, +%d): no write begun in region %d", ErrProtocol, off, n, r)
		}
	}
	m.writes--
	for r := first; r <= last; r++ {
		m.inflight[r]--
		if !ok || m.degraded {
			m.setResync(r)
		}
		if m.inflight[r] == 0 {
			m.touched[r] = m.clean.epoch
			m.enqueue(r)
		}
	}
	return nil
}
