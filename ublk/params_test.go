package ublk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uraid/internal/uapi"
)

func TestParamsValidate(t *testing.T) {
	good := Params{Size: 1 << 30, LogicalBlockSize: 512, PhysicalBlockSize: 4096, DiscardGranularity: 4096}
	tests := []struct {
		name   string
		modify func(*Params)
		ok     bool
	}{
		{"good", func(*Params) {}, true},
		{"zero block sizes default to 512", func(p *Params) { p.LogicalBlockSize, p.PhysicalBlockSize = 0, 0 }, true},
		{"logical 4096", func(p *Params) { p.LogicalBlockSize = 4096 }, true},
		{"logical not a power of two", func(p *Params) { p.LogicalBlockSize = 1536 }, false},
		{"logical below 512", func(p *Params) { p.LogicalBlockSize = 256 }, false},
		{"logical above page", func(p *Params) { p.LogicalBlockSize, p.PhysicalBlockSize = 8192, 8192 }, false},
		{"physical below logical", func(p *Params) { p.LogicalBlockSize, p.PhysicalBlockSize = 4096, 512 }, false},
		{"size zero", func(p *Params) { p.Size = 0 }, false},
		{"size not whole blocks", func(p *Params) { p.Size = 1<<30 + 100 }, false},
		{"io_opt not power of two", func(p *Params) { p.IOOpt = 3 << 16 }, false},
		{"chunk power of two", func(p *Params) { p.ChunkSize = 64 << 10 }, true},
		{"chunk not power of two", func(p *Params) { p.ChunkSize = 48 << 10 }, false},
		{"chunk below logical", func(p *Params) { p.LogicalBlockSize, p.ChunkSize = 4096, 2048 }, false},
		{"discard granularity off blocks", func(p *Params) { p.LogicalBlockSize, p.DiscardGranularity = 4096, 6144 }, false},
		{"discard max without granularity", func(p *Params) { p.DiscardGranularity, p.MaxDiscardSize = 0, 1<<20 }, false},
		{"discard alignment beyond granularity", func(p *Params) { p.DiscardAlignment = 4096 }, false},
		{"discard max below granularity", func(p *Params) { p.MaxDiscardSize = 512 }, false},
		{"fua without cache", func(p *Params) { p.FUA = true }, false},
		{"fua with cache", func(p *Params) { p.FUA, p.VolatileCache = true, true }, true},
		{"no discard at all", func(p *Params) { p.DiscardGranularity = 0 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.modify(&p)
			err := p.validate(4096)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalidParams)
			}
		})
	}
}

func TestParamsEncode(t *testing.T) {
	tests := []struct {
		name  string
		p     Params
		maxIO uint32
		want  uapi.Params
	}{
		{
			name:  "basic only",
			p:     Params{Size: 1 << 30},
			maxIO: 512 << 10,
			want: uapi.Params{
				Len: 112, Types: uapi.UBLK_PARAM_TYPE_BASIC,
				Basic: uapi.ParamBasic{LogicalBsShift: 9, PhysicalBsShift: 9, MaxSectors: 1024, DevSectors: 1 << 21},
			},
		},
		{
			name: "everything",
			p: Params{
				Size: 8 << 30, LogicalBlockSize: 4096, PhysicalBlockSize: 4096, IOMin: 64 << 10, IOOpt: 256 << 10,
				ChunkSize: 64 << 10, DiscardGranularity: 64 << 10, DiscardAlignment: 4096, MaxDiscardSize: 1 << 30,
				MaxWriteZeroesSize: 1 << 20, VolatileCache: true, FUA: true, ReadOnly: true, Rotational: true,
			},
			maxIO: 1 << 20,
			want: uapi.Params{
				Len: 112, Types: uapi.UBLK_PARAM_TYPE_BASIC | uapi.UBLK_PARAM_TYPE_DISCARD,
				Basic: uapi.ParamBasic{
					Attrs:          uapi.UBLK_ATTR_READ_ONLY | uapi.UBLK_ATTR_ROTATIONAL | uapi.UBLK_ATTR_VOLATILE_CACHE | uapi.UBLK_ATTR_FUA,
					LogicalBsShift: 12, PhysicalBsShift: 12, IOMinShift: 16, IOOptShift: 18,
					MaxSectors: 2048, ChunkSectors: 128, DevSectors: 16 << 20,
				},
				Discard: uapi.ParamDiscard{
					DiscardAlignment: 4096, DiscardGranularity: 64 << 10, MaxDiscardSectors: 1 << 21,
					MaxWriteZeroesSectors: 2048, MaxDiscardSegments: 1,
				},
			},
		},
		{
			name:  "write zeroes without discard keeps a non-zero granularity",
			p:     Params{Size: 1 << 20, LogicalBlockSize: 4096, MaxWriteZeroesSize: 1 << 50},
			maxIO: 4096,
			want: uapi.Params{
				Len: 112, Types: uapi.UBLK_PARAM_TYPE_BASIC | uapi.UBLK_PARAM_TYPE_DISCARD,
				Basic: uapi.ParamBasic{LogicalBsShift: 12, PhysicalBsShift: 12, MaxSectors: 8, DevSectors: 2048},
				Discard: uapi.ParamDiscard{
					DiscardGranularity: 4096, MaxWriteZeroesSectors: maxSectorsField,
				},
			},
		},
		{
			name:  "unbounded discard is the largest whole-block count",
			p:     Params{Size: 1 << 20, DiscardGranularity: 512},
			maxIO: 4096,
			want: uapi.Params{
				Len: 112, Types: uapi.UBLK_PARAM_TYPE_BASIC | uapi.UBLK_PARAM_TYPE_DISCARD,
				Basic: uapi.ParamBasic{LogicalBsShift: 9, PhysicalBsShift: 9, MaxSectors: 8, DevSectors: 2048},
				Discard: uapi.ParamDiscard{
					DiscardGranularity: 512, MaxDiscardSectors: 0xFFFFFFF8, MaxDiscardSegments: 1,
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.p.validate(4096))
			assert.Equal(t, tt.want, tt.p.encode(tt.maxIO))
		})
	}
}
