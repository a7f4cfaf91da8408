package fabric

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestRoutesRunsAreDense: a next-hop table kept as runs gives every hop the
// dense table gives, on every kind of topology (the Gen2 UltraServer's
// spread over its second-level switches included), whatever block of
// destinations it is routed in; a topology past denseRoutes devices keeps
// runs, a few per device.
func TestRoutesRunsAreDense(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		gen  hwarch.Generation
		n    int
	}{
		{KindTorus2D, hwarch.Cayman, 16}, {KindUltraServer, hwarch.Cayman, 64}, {KindSwitch, hwarch.Mariana, 64},
		{KindTrn3Gen1, hwarch.Mariana, 64}, {KindTrn3Gen2, hwarch.Mariana, 144}, {KindStar, hwarch.Mariana, 5},
		{KindFullyConnected, hwarch.Mariana, 5}, {KindRing, hwarch.Sunda, 7}, {KindSwitch, hwarch.Mariana, 2048},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.kind, tc.n), func(t *testing.T) {
			top := build(t, tc.kind, tc.gen, tc.n)
			var adjust func(int, [][]int32)
			if tc.kind == KindTrn3Gen2 {
				adjust = top.spreadGen2()
			}
			dense := *top
			dense.routeIn(adjust, tc.n, false)
			require.NotNil(t, dense.next.dense)
			if tc.n > denseRoutes {
				require.NotNil(t, top.next.runs, "past denseRoutes devices the table is runs")
				assert.Less(t, len(top.next.runs[0]), 8, "a device's row is a few runs")
			}
			for _, block := range []int{1, 7, routeBlock} {
				r := *top
				r.routeIn(adjust, block, true)
				for x := range top.Nodes {
					for dst := range tc.n {
						if got, want := r.hop(x, dst), dense.hop(x, dst); got != want {
							t.Fatalf("block %d: hop from %s towards device %d: link %d, dense table %d", block, top.Nodes[x].Name, dst, got, want)
						}
					}
				}
				assert.NoError(t, r.Connected())
			}
		})
	}
}

// TestRoutesSameOverWorkers: the next-hop table does not depend on how
// many processors share out its searches (one, or three over blocks that
// do not divide evenly), dense or in runs.
func TestRoutesSameOverWorkers(t *testing.T) {
	for _, n := range []int{1024, 2048} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			top := build(t, KindSwitch, hwarch.Mariana, n)
			tables := make([]Topology, 2)
			for i, procs := range []int{1, 3} {
				was := runtime.GOMAXPROCS(procs)
				tables[i] = *top
				tables[i].route(nil)
				runtime.GOMAXPROCS(was)
			}
			for x := range top.Nodes {
				for dst := range n {
					if a, b := tables[0].next.hop(x, dst), tables[1].next.hop(x, dst); a != b {
						t.Fatalf("hop from %s towards device %d: link %d with one processor, %d with three", top.Nodes[x].Name, dst, a, b)
					}
				}
			}
		})
	}
}

// TestRoutesConnectedRuns: a table of runs finds a device with no path as
// the dense one does (a one-way link: neuron1 cannot reach neuron0, whose
// only link leads away).
func TestRoutesConnectedRuns(t *testing.T) {
	one := &Topology{Kind: KindStar, Devices: 3, Nodes: []Node{{Name: "neuron0"}, {Name: "neuron1"}, {Name: "neuron2"}}}
	one.link(0, 1, "link", LinkParams{Bandwidth: 1e9})
	one.link(1, 2, "link", LinkParams{Bandwidth: 1e9})
	one.link(2, 1, "link", LinkParams{Bandwidth: 1e9})
	for _, runs := range []bool{false, true} {
		one.routeIn(nil, 2, runs)
		assert.ErrorContains(t, one.Connected(), "no path from neuron1 to neuron0", "runs %v", runs)
	}
}
