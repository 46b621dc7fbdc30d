package raid

import (
	"uraid/mapping"
)

// MapOf builds the layout planner for an array whose members each hold sb.DataSize bytes of data.
func MapOf(sb *Superblock) (*mapping.Map, error) {
	return mapping.New(mappingGeometry(sb.Level, sb.Layout, int64(sb.ChunkSize), int(sb.Members), int64(sb.DataSize)))
}

func mappingGeometry(level mapping.Level, layout mapping.Layout, chunk int64, members int, dataSize int64) mapping.Geometry {
	g := mapping.Geometry{Level: level, Layout: layout, ChunkBytes: chunk, MemberBytes: make([]int64, members)}
	for i := range g.MemberBytes {
		g.MemberBytes[i] = dataSize
	}
	return g
}
