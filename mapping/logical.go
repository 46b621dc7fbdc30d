package mapping

// LogicalAt returns the array offset whose data member i holds at offset off
// of its data space, or -1 if that byte holds no array data (past the member's
// used space, an unused slot, or an i that is not a member). It is the exact
// inverse of Write: every extent Write returns maps back, byte for byte, to
// the logical range it serves. A reshape uses it to ask what the old layout
// keeps in the member bytes the new layout is about to overwrite.
func (m *Map) LogicalAt(i int, off int64) int64 { return m.logicalAt(i, off) }
