package raid

import (
	"fmt"

	"uraid/mapping"
)

// MapOf builds the layout planner for an array whose members each hold sb.DataSize bytes of data.
func MapOf(sb *Superblock) (*mapping.Map, error) {
	g, err := mappingGeometry(sb.Level, sb.Layout, int64(sb.ChunkSize), int(sb.Members), int64(sb.DataSize))
	if err != nil {
		return nil, err
	}
	return mapping.New(g)
}

func mappingGeometry(level Level, layout Layout, chunk int64, members int, dataSize int64) (mapping.Geometry, error) {
	g := mapping.Geometry{ChunkBytes: chunk, MemberBytes: make([]int64, members)}
	for i := range g.MemberBytes {
		g.MemberBytes[i] = dataSize
	}
	switch level {
	case LevelLinear:
		g.Level = mapping.Linear
	case LevelRAID0:
		g.Level = mapping.RAID0
	case LevelRAID1:
		g.Level = mapping.RAID1
	case LevelRAID10:
		g.Level = mapping.RAID10
	default:
		return g, fmt.Errorf("level %v: not linear, 0, 1 or 10", level)
	}
	switch layout {
	case LayoutNone:
		if level == LevelRAID10 {
			g.Layout = mapping.Near2
		}
	case LayoutN2:
		g.Layout = mapping.Near2
	case LayoutF2:
		g.Layout = mapping.Far2
	case LayoutO2:
		g.Layout = mapping.Offset2
	default:
		return g, fmt.Errorf("layout %v: not n2, f2 or o2", layout)
	}
	return g, nil
}
