package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/dma"
)

func build(t *testing.T, k Kind, g hwarch.Generation, n int) *Topology {
	t.Helper()
	topo, err := Build(k, g, n, DefaultParams(g))
	require.NoError(t, err)
	return topo
}

// TestTorusNeighbourTable: the driver's table, column = SENG index
// (driver-facts §6; trainium-facts §4): device 0 → 12, 3, 4, 1 and 5 → 1,
// 4, 9, 6; the second group of 16 keeps its upper bits.
func TestTorusNeighbourTable(t *testing.T) {
	topo := build(t, KindTorus2D, hwarch.Cayman, 32)
	assert.Equal(t, []int{12, 3, 4, 1}, topo.Neighbours[0])
	assert.Equal(t, []int{1, 4, 9, 6}, topo.Neighbours[5])
	assert.Equal(t, []int{28, 19, 20, 17}, topo.Neighbours[16])
	for s, want := range topo.Neighbours[0] {
		got, ok := topo.Neighbour(0, s)
		require.True(t, ok)
		assert.Equal(t, want, got)
	}
	_, ok := topo.Neighbour(0, 4)
	assert.False(t, ok, "there is no B0_4")
}

// TestPaths: hop counts per topology, deterministic.
func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		gen      hwarch.Generation
		n        int
		src, dst int
		hops     int
	}{
		{KindTorus2D, hwarch.Cayman, 16, 0, 1, 1},
		{KindTorus2D, hwarch.Cayman, 16, 0, 5, 2},
		{KindTorus2D, hwarch.Cayman, 16, 0, 10, 4},
		{KindTorus2D, hwarch.Cayman, 16, 0, 0, 0},
		{KindUltraServer, hwarch.Cayman, 64, 0, 16, 1},
		{KindUltraServer, hwarch.Cayman, 64, 0, 32, 2},
		{KindRing, hwarch.Sunda, 12, 0, 6, 6},
		{KindRing, hwarch.Sunda, 12, 0, 11, 1},
		{KindChain, hwarch.Sunda, 6, 0, 5, 5},
		{KindSwitch, hwarch.Mariana, 32, 0, 1, 2},
		{KindSwitch, hwarch.Mariana, 32, 0, 31, 2},
		{KindFullyConnected, hwarch.Mariana, 8, 2, 7, 1},
		{KindStar, hwarch.Mariana, 8, 2, 7, 2},
	} {
		t.Run(fmt.Sprintf("%s/%d/%d-%d", tc.kind, tc.n, tc.src, tc.dst), func(t *testing.T) {
			topo := build(t, tc.kind, tc.gen, tc.n)
			p, err := topo.Path(tc.src, tc.dst)
			require.NoError(t, err)
			assert.Len(t, p, tc.hops)
			x := tc.src
			for _, id := range p {
				require.Equal(t, x, topo.Links[id].From, "a path is a chain of links")
				x = topo.Links[id].To
			}
			if len(p) > 0 {
				assert.Equal(t, tc.dst, x)
			}
			again, _ := topo.Path(tc.src, tc.dst)
			assert.Equal(t, p, again)
		})
	}
}

// TestSwitchServers: inside a server the path crosses the in-server
// switch, across servers the inter-server one.
func TestSwitchServers(t *testing.T) {
	topo := build(t, KindSwitch, hwarch.Mariana, 32)
	in, err := topo.Path(0, 15)
	require.NoError(t, err)
	out, err := topo.Path(0, 16)
	require.NoError(t, err)
	assert.Equal(t, "in-server", topo.Links[in[0]].Group)
	assert.Equal(t, "inter-server", topo.Links[out[0]].Group)
	assert.Contains(t, topo.LinkName(out[0]), "neuron0:1→l2-sw")
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		n    int
	}{{KindTorus2D, 12}, {KindUltraServer, 32}, {KindTorus2D, 0}, {KindFullyConnected, 2000}, {Kind(99), 4}} {
		_, err := Build(tc.kind, hwarch.Cayman, tc.n, DefaultParams(hwarch.Cayman))
		assert.Error(t, err, "%s with %d devices", tc.kind, tc.n)
	}
	_, err := Build(KindRing, hwarch.Sunda, 4, DefaultParams(hwarch.Sunda))
	require.NoError(t, err)
	topo := build(t, KindRing, hwarch.Sunda, 4)
	_, err = topo.Path(0, 9)
	assert.ErrorIs(t, err, ErrNoPath)
}

func TestParseKindAndModel(t *testing.T) {
	for k := KindAuto; k < numKinds; k++ {
		got, err := ParseKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	_, err := ParseKind("hypercube")
	assert.ErrorIs(t, err, ErrUnknownKind)
	for _, m := range []Model{Aware, Free} {
		got, err := ParseModel(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err = ParseModel("fast")
	assert.ErrorIs(t, err, ErrUnknownModel)
}

// TestPodPortBudget: get_max_links_per_pod_port bounds the inter-server
// link group (cayman 1 × 4 ports < 5 links; mariana 2 × 4 ≥ 5), and
// get_mesh_max_folds bounds the folds.
func TestPodPortBudget(t *testing.T) {
	p := DefaultParams(hwarch.Mariana).WithSoc(2, 16)
	require.NoError(t, p.Validate(KindSwitch))
	assert.ErrorIs(t, DefaultParams(hwarch.Cayman).WithSoc(1, 8).Validate(KindSwitch), ErrParams)
	p.Folds = 17
	assert.ErrorIs(t, p.Validate(KindSwitch), ErrParams)
	p.Folds, p.ChunkBytes = 16, 0
	assert.ErrorIs(t, p.Validate(KindSwitch), ErrParams)
}

// TestLatencyBound: a latency past units.MaxLatencyPS (10 s, a
// collective's whole device time) on any link class, the switch, the
// endpoint or an EFA link is refused naming it; at the bound it is
// accepted. (A --link-latency of 4e15 ns once overflowed time inside a
// run and halted a DMA queue with no word of why.)
func TestLatencyBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(p *Params, ps uint64)
	}{
		{"xy link latency", func(p *Params, ps uint64) { p.XY.Latency = ps }},
		{"inter-server link latency", func(p *Params, ps uint64) { p.InterServer.Latency = ps }},
		{"inter-rack link latency", func(p *Params, ps uint64) { p.InterRack.Latency = ps }},
		{"second-level link latency", func(p *Params, ps uint64) { p.SecondLevel.Latency = ps }},
		{"switch latency", func(p *Params, ps uint64) { p.Switch = ps }},
		{"endpoint delay", func(p *Params, ps uint64) { p.Endpoint = ps }},
		{"EFA.NICLatency", func(p *Params, ps uint64) { p.EFA.NICLatency = ps }},
		{"EFA.SpineLatency", func(p *Params, ps uint64) { p.EFA.SpineLatency = ps }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams(hwarch.Mariana)
			tc.set(&p, units.MaxLatencyPS)
			require.NoError(t, p.Validate(KindSwitch))
			tc.set(&p, units.MaxLatencyPS+1)
			err := p.Validate(KindSwitch)
			require.ErrorIs(t, err, ErrParams)
			assert.Contains(t, err.Error(), tc.name)
		})
	}
}

// TestModels checks the two models' formulas on a two-hop star path
// (docs/fabric.md §Models) and that the aware model's links are FIFOs.
func TestModels(t *testing.T) {
	p := DefaultParams(hwarch.Mariana)
	p.Link = LinkParams{Bandwidth: 100e9, Latency: 400 * ns}
	p.Switch, p.Endpoint, p.ChunkBytes = 100*ns, 50*ns, 4096
	const n = 4 * 4096 // 4 chunks, 40.96 ns each on a link
	chunk := dma.TransferTime(4096, 100e9)
	for _, m := range []Model{Aware, Free} {
		t.Run(m.String(), func(t *testing.T) {
			p.Model = m
			s, err := New(Config{Generation: hwarch.Mariana, Devices: 4, Kind: KindStar, Params: &p, Ready: true})
			require.NoError(t, err)
			path, err := s.path(0, 3)
			require.NoError(t, err)
			inj, lands := s.timing(path, n, 1000, 1000, nil)
			switch m {
			case Free:
				assert.Equal(t, 1000+4*chunk, inj)
				assert.Equal(t, 1000+4*chunk+2*400*ns+100*ns+50*ns, lands, "hops·α + n/B + δ, the switch's forwarding once")
			case Aware:
				assert.Equal(t, 1000+4*chunk, inj)
				// The last chunk leaves hop 0 at 4 chunk times, crosses the
				// switch, then hop 1 (free by then): one more chunk time.
				assert.Equal(t, 1000+4*chunk+400*ns+100*ns+chunk+400*ns+50*ns, lands, "store and forward per chunk")
				// A second transfer on the same first link queues behind.
				path2, _ := s.path(0, 2)
				inj2, _ := s.timing(path2, 4096, 1000, 1000, nil)
				assert.Equal(t, 1000+5*chunk, inj2, "FIFO: behind the four chunks")
			}
		})
	}
}

// TestWordsAnyCase: every word parser of the package reads its words by
// units.Word — any case, surrounding space ignored; ParseKind and
// LookupSystem compared with strings.EqualFold, which refused " ring "
// that ParseModel and ParseEFANetwork took.
func TestWordsAnyCase(t *testing.T) {
	for _, tc := range []struct {
		in    string
		parse func(string) (any, error)
		want  any
	}{
		{" RING ", func(s string) (any, error) { return ParseKind(s) }, KindRing},
		{"Trn3-Gen2", func(s string) (any, error) { return ParseKind(s) }, KindTrn3Gen2},
		{" TRN2-48XL", func(s string) (any, error) {
			spec, err := LookupSystem(s)
			return spec.Name, err
		}, "trn2-48xl"},
		{"FREE ", func(s string) (any, error) { return ParseModel(s) }, Free},
		{" Ideal", func(s string) (any, error) { return ParseEndpoints(s) }, EndpointsIdeal},
		{"FAT-TREE", func(s string) (any, error) { return ParseEFANetwork(s) }, FatTree},
	} {
		got, err := tc.parse(tc.in)
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}
