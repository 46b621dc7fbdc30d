package raid

import (
	"fmt"
)

// Metadata is a device's metadata area as it was before a change wrote to it: its superblock and
// the region map after it, up to the data. A create, add or replace that fails before the device
// serves puts it back, so that a refused change leaves the device as it found it.
type Metadata struct {
	b []byte
}

// SaveMetadata reads m's metadata area, from the superblock up to dataOffset.
func SaveMetadata(m *Member, dataOffset int64) (*Metadata, error) {
	b := AlignedBytes(int(dataOffset - SuperblockOffset))
	if _, err := m.File.ReadAt(b, SuperblockOffset); err != nil {
		return nil, fmt.Errorf("member %s: read its metadata area, to put it back should the change fail: %w", m.Path, err)
	}
	return &Metadata{b: b}, nil
}

// Restore writes the saved bytes back to m and makes them durable.
func (s *Metadata) Restore(m *Member) error {
	if _, err := m.File.WriteAt(s.b, SuperblockOffset); err != nil {
		return fmt.Errorf("member %s: put its metadata area back: %w", m.Path, err)
	}
	if err := m.File.Sync(); err != nil {
		return fmt.Errorf("member %s: put its metadata area back: sync: %w", m.Path, err)
	}
	return nil
}
