package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// TestChunksRead: the ready-time table New computes gives, for every
// chunk count of a descriptor's largest write and past it, and for a chunk
// other than the configured one (ideal endpoints: one chunk of the
// write), exactly AtRate(k·c, engine bandwidth) — the division the aware
// model made per chunk before the table, so no time it books moves.
func TestChunksRead(t *testing.T) {
	for _, chunk := range []int{64, 1000, 4096, udma.MaxTransfer, 1 << 20} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			p := DefaultParams(hwarch.Cayman)
			p.ChunkBytes = chunk
			s, err := New(Config{Generation: hwarch.Cayman, Devices: 16, Kind: KindTorus2D, Params: &p, Ready: true, TimingOnly: true})
			require.NoError(t, err)
			c := uint64(chunk)
			for k := range uint64(udma.MaxTransfer/chunk + 3) {
				require.Equal(t, uint64(simkernel.AtRate(k*c, s.engineBW)), s.chunksRead(k, c), "%d chunks of %d bytes", k, c)
			}
			for _, other := range []uint64{1, 7, c + 1} {
				for k := range uint64(4) {
					require.Equal(t, uint64(simkernel.AtRate(k*other, s.engineBW)), s.chunksRead(k, other), "%d chunks of %d bytes", k, other)
				}
			}
		})
	}
}
