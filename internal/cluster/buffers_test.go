package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
)

// TestBufferCapacityIsAllocatable: BufferCapacity is exactly the largest
// per-rank buffer area a brought-up device gives each of its ranks — a
// cluster of that many bytes a rank is built, one page more is refused by
// the allocator — on every generation, with one rank a device and with
// every NeuronCore a rank (ranks sharing an HBM channel share its pool).
// The scenario's buffer_bytes and fabric sweep's -e are refused past it
// before bring-up; the scenario's bound was a channel's whole size (36 GiB
// on Trn3), which no rank can have.
func TestBufferCapacityIsAllocatable(t *testing.T) {
	for _, c := range []struct {
		g        hwarch.Generation
		revision uint8
		rpd      int
		want     uint64 // MiB
	}{
		{hwarch.Sunda, 0, 1, 15344},
		{hwarch.Sunda, 0, 2, 15344},
		{hwarch.Cayman, 0, 1, 23536},
		{hwarch.Cayman, 0, 8, 11768},
		{hwarch.Mariana, 0, 1, 35824},
		{hwarch.Mariana, 0, 4, 35824},
		{hwarch.Mariana, 0, 8, 17912},
		{hwarch.Mariana, hwarch.RevisionEMU, 1, 35824},
		{hwarch.Cayman, hwarch.RevisionQEMU, 1, 3056}, // the driver sizes a channel BAR4 / 4 under QEMU
	} {
		t.Run(fmt.Sprintf("%s-%#x-%d", c.g, c.revision, c.rpd), func(t *testing.T) {
			most, err := cluster.BufferCapacity(c.g, c.revision, c.rpd)
			require.NoError(t, err)
			assert.Equal(t, c.want<<20, most)
			build := func(bytes uint64) error {
				_, err := cluster.New(cluster.Config{Generation: c.g, Revision: c.revision, Devices: 1, Switch: switchOf(c.g), TimingOnly: true,
					RanksPerDevice: c.rpd, BufferBytes: bytes})
				return err
			}
			require.NoError(t, build(most), "the capacity is allocated")
			err = build(most + 4096)
			require.Error(t, err, "a page more is not")
			assert.Contains(t, err.Error(), "out of device memory")
		})
	}
	_, err := cluster.BufferCapacity(hwarch.Sunda, 0, 3)
	assert.ErrorIs(t, err, cluster.ErrConfig, "more ranks than NeuronCores")
}
