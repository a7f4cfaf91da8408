package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSpinesIdleCountsLeavesAsLayoutPlacesThem: SpinesIdle counts the
// leaves without placing the NICs, and agrees with leafLayout on whether
// there is more than one, on both networks over a range of shapes; on a
// rail network whose rails each fit one leaf it names that shape too.
func TestSpinesIdleCountsLeavesAsLayoutPlacesThem(t *testing.T) {
	for _, net := range []EFANetwork{RailOptimised, FatTree} {
		for _, ports := range []int{1, 2, 3, 4, 16, 64} {
			for _, nodes := range []int{2, 3, 4, 5, 8, 17, 64, 65} {
				for _, devices := range []int{1, 2, 4, 16} {
					e := EFAParams{Network: net, LeafPorts: ports, DevicesPerNIC: 1, Spines: 1}
					names, _ := leafLayout(e, nodes, devices)
					why := e.SpinesIdle(nodes, devices)
					oneLeaf := len(names) < 2
					railFits := net == RailOptimised && nodes <= ports
					assert.Equal(t, oneLeaf || railFits, why != "", "%s, %d ports, %d nodes of %d: %q", net, ports, nodes, devices, why)
					if oneLeaf {
						assert.Contains(t, why, "so the network has no spines")
					}
				}
			}
		}
	}
}
