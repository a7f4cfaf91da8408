package dma

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/bringup"
)

func TestVringSplitsAt64KiB(t *testing.T) {
	tests := []struct {
		n     uint64
		pairs []int
	}{
		{1, []int{1}},
		{4, []int{4}},
		{udma.MaxTransfer, []int{udma.MaxTransfer}},
		{udma.MaxTransfer + 1, []int{udma.MaxTransfer, 1}},
		{3*udma.MaxTransfer + 12, []int{udma.MaxTransfer, udma.MaxTransfer, udma.MaxTransfer, 12}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			v := NewVring("v")
			require.NoError(t, v.AddTransfer(0x1000, 0x9000_0000, tt.n))
			require.Len(t, v.pairs, len(tt.pairs))
			var off uint64
			for i, p := range v.pairs {
				assert.Equal(t, tt.pairs[i], int(p.len))
				assert.Equal(t, 0x1000+off, p.src)
				assert.Equal(t, 0x9000_0000+off, p.dst)
				off += uint64(p.len)
			}
			assert.Equal(t, tt.n, v.Bytes())
		})
	}
	v := NewVring("bad")
	assert.Error(t, v.AddTransfer(1, 2, 0))
	assert.Error(t, v.AddTransfer(^uint64(0)-2, 0, 16))
	assert.Error(t, v.AddEventAccel(2, 0x100))
	require.NoError(t, v.AddEventAccel(0x100, 0x200))
	assert.Equal(t, 1, v.Descriptors())
}

func TestBAR4Offset(t *testing.T) {
	tests := []struct {
		g      hwarch.Generation
		mode   hwarch.Mode
		ch     []uint64
		addr   uint64
		want   uint64
		wantOK bool
	}{
		{hwarch.Sunda, hwarch.ModeSilicon, []uint64{16 << 30, 16 << 30}, 0x10_0000_0010, 16<<30 + 0x10, true},
		{hwarch.Cayman, hwarch.ModeSilicon, []uint64{24 << 30, 24 << 30, 24 << 30, 24 << 30}, 0x8040_0000_0000, 3 * 64 << 30, true},
		{hwarch.Cayman, hwarch.ModeSilicon, []uint64{24 << 30, 24 << 30, 24 << 30, 24 << 30}, 24 << 30, 0, false},
		{hwarch.Mariana, hwarch.ModeQEMU, []uint64{4 << 30, 4 << 30, 4 << 30, 4 << 30}, 0x8000_0000_0008, 8<<30 + 8, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%#x", tt.g, tt.mode, tt.addr), func(t *testing.T) {
			m := &DMA{dev: &bringup.Device{Mode: tt.mode, HBMChannelBytes: tt.ch}, geo: hwarch.MustGeometry(tt.g)}
			got, err := m.BAR4Offset(tt.addr)
			if !tt.wantOK {
				require.ErrorIs(t, err, ErrNotDevice)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
