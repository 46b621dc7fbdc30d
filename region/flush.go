package region

import "fmt"

// FlushMode says which blocks Flush writes.
type FlushMode uint8

// Flush modes.
const (
	// FlushUrgent writes the blocks that waiting writes need, and no
	// others, so that they wait as little as possible.
	FlushUrgent FlushMode = iota
	// FlushChanged writes every block that changed, and the header if the
	// cursor changed: lazy cleans and trims, checkpoints.
	FlushChanged
	// FlushAll writes the header and every map block: a new map, or a
	// member that joins and must carry a whole copy.
	FlushAll
)

// Block is one block a flush writes: Data (BlockSize bytes) goes at byte
// Offset of the map area on every member. Data belongs to the Map; it stays
// unchanged until Flushed or FlushFailed, and must not be modified.
type Block struct {
	Offset int64
	Data   []byte
}

// Flush starts a metadata write: it encodes the blocks mode asks for,
// appends them to dst, and returns the generation they carry. The caller
// writes every block to every member in the array, durably (FUA, or
// followed by a flush of the member's cache), then calls Flushed with the
// generation; writes waiting for it may then go. One flush at a time: the
// caller serializes them. It returns generation 0 and dst unchanged when
// there is nothing to write. It allocates nothing when dst has room for
// every block (Blocks() of them).
//
// A write that arrives while the flush is in flight and needs a region
// made dirty waits for the next flush; when Flushed returns, Urgent says
// whether one is needed now.
func (m *Map) Flush(mode FlushMode, dst []Block) (uint64, []Block, error) {
	if m.inFlight {
		return 0, dst, fmt.Errorf("%w: flush: generation %d is still being written", ErrProtocol, m.gen)
	}
	header := mode == FlushAll || mode == FlushChanged && m.header.changed
	work := header || mode == FlushUrgent && m.urgent > 0 || mode == FlushChanged && m.changed > 0
	if !work {
		return 0, dst, nil
	}
	m.gen++
	m.inFlight = true
	m.flying = m.flying[:0]
	if header {
		encodeHeader(m.header.buf, m.g, m.gen, m.cursor)
		m.header.changed = false
		m.header.flying = true
		dst = append(dst, Block{Offset: 0, Data: m.header.buf})
	}
	for b := range m.blk {
		k := &m.blk[b]
		switch mode {
		case FlushUrgent:
			if !k.urgent {
				continue
			}
		case FlushChanged:
			if !k.changed {
				continue
			}
		}
		words := m.flight[b*wordsPerBlock : (b+1)*wordsPerBlock]
		copy(words, m.mem[b*wordsPerBlock:])
		encodeMapBlock(k.buf, m.g, b, m.gen, words)
		if k.changed {
			m.changed--
		}
		if k.urgent {
			m.urgent--
		}
		k.changed, k.urgent, k.flying = false, false, true
		m.flying = append(m.flying, b)
		dst = append(dst, Block{Offset: int64(1+b) * BlockSize, Data: k.buf})
	}
	return m.gen, dst, nil
}

// Flushed records that the flush of generation gen is on every member in
// the array. A member whose metadata write failed is no longer in it: fail
// it and tell the map SetDegraded(true) first, then call Flushed.
func (m *Map) Flushed(gen uint64) error {
	if !m.inFlight || gen != m.gen {
		return m.flushErr("flushed", gen)
	}
	for _, b := range m.flying {
		words := m.flight[b*wordsPerBlock : (b+1)*wordsPerBlock]
		bm := m.onDisk[b*wordsPerBlock/2 : (b+1)*wordsPerBlock/2]
		for i := range bm {
			bm[i] = packLow(dirtyBits(words[2*i])) | packLow(dirtyBits(words[2*i+1]))<<32
		}
		m.blk[b].flying = false
	}
	m.header.flying = false
	m.inFlight = false
	m.durable = gen
	return nil
}

// FlushFailed records that the flush of generation gen could not be made
// durable on the members: each of its blocks may hold the old bytes, the
// new ones, or a torn mix. Its blocks go into the next flush again, and the
// writes waiting for gen wait for that one.
func (m *Map) FlushFailed(gen uint64) error {
	if !m.inFlight || gen != m.gen {
		return m.flushErr("flush failed", gen)
	}
	for _, b := range m.flying {
		words := m.flight[b*wordsPerBlock : (b+1)*wordsPerBlock]
		bm := m.onDisk[b*wordsPerBlock/2 : (b+1)*wordsPerBlock/2]
		for i := range bm {
			// Dirty for certain only where the old and the new bytes both say so.
			bm[i] &= packLow(dirtyBits(words[2*i])) | packLow(dirtyBits(words[2*i+1]))<<32
		}
		m.blk[b].flying = false
		m.markUrgent(b)
	}
	if m.header.flying {
		m.header.flying = false
		m.header.changed = true
	}
	m.inFlight = false
	return nil
}

func (m *Map) flushErr(what string, gen uint64) error {
	if !m.inFlight {
		return fmt.Errorf("%w: %s %d: no flush in flight", ErrProtocol, what, gen)
	}
	return fmt.Errorf("%w: %s %d: the flush in flight is %d", ErrProtocol, what, gen, m.gen)
}

// packLow gathers the even bits of x (the low bits of its two-bit fields)
// into its low 32 bits.
func packLow(x uint64) uint64 {
	x &= lowBits
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0f0f0f0f0f0f0f0f
	x = (x | x>>4) & 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	x = (x | x>>16) & 0x00000000ffffffff
	return x
}

// Urgent reports that some write waits for a flush that has not started:
// start one (FlushUrgent) as soon as none is in flight.
func (m *Map) Urgent() bool { return m.urgent > 0 }

// Changed reports that some block or the header differs from what was last
// written, urgent or not.
func (m *Map) Changed() bool { return m.changed > 0 || m.header.changed }

// Flushing reports whether a flush is in flight.
func (m *Map) Flushing() bool { return m.inFlight }

// Gen is the generation of the last flush started (or, after Load, the
// newest found on disk).
func (m *Map) Gen() uint64 { return m.gen }

// Durable is the generation of the last flush completed. A write that
// BeginWrite told to wait for generation g may go once Durable() >= g.
func (m *Map) Durable() uint64 { return m.durable }

// Blocks is the number of blocks in the map area: the header and the map
// blocks, the most one flush writes.
func (m *Map) Blocks() int { return 1 + m.blocks }
