package discard

// TryWrite is WaitWrite for a caller that must not block, such as a ublk queue goroutine whose
// other requests would stall behind it. It removes [off, off+n) from member i's queued discards
// at once and reports whether the write may go ahead now; false means a TRIM in flight overlaps
// the range, and the caller must call WaitWrite (which then only waits) from a goroutine that
// may block, before writing.
func (e *Engine) TryWrite(i int, off, n int64) (bool, error) {
	m, err := e.member(i, "try write")
	if err != nil || n <= 0 || m.outstanding.Load() == 0 {
		return true, err
	}
	m.mu.Lock()
	parts, cut := m.q.Cancel(off, n, nil)
	if cut > 0 {
		m.publish()
		m.cond.Broadcast() // queue space
	}
	clear := !m.q.OverlapsInFlight(off, n)
	m.mu.Unlock()
	for _, p := range parts {
		p.Tag.settle(p.Bytes, nil)
	}
	return clear, nil
}

// TryRead is WaitRead for a caller that must not block: it reports whether a read of
// [off, off+n) from member i may go ahead now, that is no queued or in-flight discard touches the
// range. On false the caller calls WaitRead from a goroutine that may block.
func (e *Engine) TryRead(i int, off, n int64) (bool, error) {
	m, err := e.member(i, "try read")
	if err != nil || n <= 0 || m.outstanding.Load() == 0 {
		return true, err
	}
	m.mu.Lock()
	clear := !m.q.Overlaps(off, n)
	m.mu.Unlock()
	return clear, nil
}
