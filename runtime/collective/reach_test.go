package collective

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// TestReach: a rank reaches its own device directly, a neighbour in the
// driver's table through the B0 window of that column (V3/V4), and any
// other device — or every device on sunda, or without a table — through the
// fabric window.
func TestReach(t *testing.T) {
	const a = 0x40_0000_1000
	table := [][]int{}
	for d := range 16 {
		nb, err := hwarch.ConnectedDevices(16, d, false)
		require.NoError(t, err)
		table = append(table, nb)
	}
	fabric := func(dev int) uint64 { f, _ := hwarch.FabricAddress(dev, a); return f }
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		ranks := make([]Rank, 16)
		for d := range ranks {
			ranks[d] = Rank{Device: d, Runner: &program.Runner{Dev: &bringup.Device{Geometry: geo}}}
		}
		b0 := func(s int) uint64 {
			if len(geo.NeighbourWindows) == 0 {
				return 0
			}
			return geo.NeighbourWindows[s] + a
		}
		tests := []struct {
			name       string
			neighbours [][]int
			from, to   int
			want       uint64
		}{
			{"same device", table, 5, 5, a},
			{"column 0 (up)", table, 0, 12, b0(0)},
			{"column 3 (right)", table, 0, 1, b0(3)},
			{"column 2 (down)", table, 15, 3, b0(2)},
			{"two links away", table, 0, 5, fabric(5)},
			{"no table", nil, 0, 1, fabric(1)},
		}
		for _, tt := range tests {
			t.Run(g.String()+"/"+tt.name, func(t *testing.T) {
				x := &Executor{Ranks: ranks, Neighbours: tt.neighbours}
				got, err := x.reach(tt.from, tt.to, a)
				require.NoError(t, err)
				want := tt.want
				if len(geo.NeighbourWindows) == 0 && want != a {
					want = fabric(tt.to) // sunda has no B0 windows
				}
				assert.Equal(t, want, got, "%#x", got)
				if dev, remote, ok := geo.NeighbourWindow(got); ok {
					assert.Equal(t, tt.to, table[tt.from][dev], "the window's column names the destination")
					assert.Equal(t, uint64(a), remote)
				}
			})
		}
	}
}
