package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestSystemShapes builds every system of the catalogue and checks its
// shape: devices and switches, each device's out-links per link group,
// every device reaching every other, and the hop counts (links crossed)
// between devices of the same server and of other servers.
func TestSystemShapes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		devices    int
		switches   int
		perGroup   map[string]int // directed links leaving each device, by group
		serverSize int
		sameHops   [2]int // min, max hops to a device of the same server
		otherHops  [2]int // to a device of another server
		links      int
	}{
		{"trn1-32xl", 16, 0, map[string]int{"xy": 4}, 16, [2]int{1, 4}, [2]int{0, 0}, 64},
		{"trn2-48xl", 16, 0, map[string]int{"xy": 4}, 16, [2]int{1, 4}, [2]int{0, 0}, 64},
		{"trn2-ultraserver", 64, 0, map[string]int{"xy": 4, "z": 2}, 16, [2]int{1, 4}, [2]int{1, 6}, 64 * 6},
		// 64 × (in-server + inter-server) both ways + 32 inter-rack pairs both ways.
		{"trn3-gen1", 64, 5, map[string]int{"in-server": 1, "inter-server": 1, "inter-rack": 1}, 16, [2]int{2, 2}, [2]int{1, 2}, 64*4 + 64},
		{"trn3-gen2", 144, 38, map[string]int{"in-server": 1, "inter-server": 2}, 4, [2]int{2, 2}, [2]int{2, 2}, 144 * 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := LookupSystem(tc.name)
			require.NoError(t, err)
			topo, err := Build(spec.Kind, spec.Generation, spec.Devices, DefaultParams(spec.Generation))
			require.NoError(t, err)
			require.NoError(t, topo.Connected())
			assert.Equal(t, tc.devices, topo.Devices)
			switches := 0
			for _, n := range topo.Nodes {
				if n.Kind == NodeSwitch {
					switches++
				}
			}
			assert.Equal(t, tc.switches, switches, "switches")
			assert.Len(t, topo.Links, tc.links, "directed links")
			for d := range topo.Devices {
				got := map[string]int{}
				for _, id := range topo.Nodes[d].Ports {
					got[topo.Links[id].Group]++
				}
				require.Equal(t, tc.perGroup, got, "device %d's links by group", d)
			}
			same, other := [2]int{1 << 30, 0}, [2]int{1 << 30, 0}
			for a := range topo.Devices {
				for b := range topo.Devices {
					if a == b {
						continue
					}
					p, err := topo.Path(a, b)
					require.NoError(t, err, "%d → %d", a, b)
					require.Equal(t, b, topo.Links[p[len(p)-1]].To)
					r := &other
					if a/tc.serverSize == b/tc.serverSize {
						r = &same
					}
					r[0], r[1] = min(r[0], len(p)), max(r[1], len(p))
				}
			}
			assert.Equal(t, tc.sameHops, same, "hops inside a server")
			if tc.otherHops != [2]int{0, 0} {
				assert.Equal(t, tc.otherHops, other, "hops between servers")
			}
		})
	}
}

// TestTrn3Gen1Paths: inside a server the in-server switch carries the
// write, across servers the inter-server switch, and the inter-rack peer is
// one direct link away.
func TestTrn3Gen1Paths(t *testing.T) {
	topo, err := Build(KindTrn3Gen1, hwarch.Mariana, 64, DefaultParams(hwarch.Mariana))
	require.NoError(t, err)
	groups := func(a, b int) []string {
		p, err := topo.Path(a, b)
		require.NoError(t, err)
		var g []string
		for _, id := range p {
			g = append(g, topo.Links[id].Group)
		}
		return g
	}
	assert.Equal(t, []string{"in-server", "in-server"}, groups(0, 15))
	assert.Equal(t, []string{"inter-server", "inter-server"}, groups(0, 16))
	assert.Equal(t, []string{"inter-rack"}, groups(0, 32))
	assert.Equal(t, []string{"inter-rack"}, groups(63, 31))
	assert.Equal(t, []string{"inter-server", "inter-server"}, groups(0, 33))
	assert.Equal(t, DefaultInterRack, topo.Links[topo.Nodes[0].Ports[2]].Params)
}

// TestTrn3Gen2Spread: writes between servers use both second-level
// switches, half the pairs each; each second-level link is
// Params.SecondLevel, by default half the inter-server bundle.
func TestTrn3Gen2Spread(t *testing.T) {
	p := DefaultParams(hwarch.Mariana)
	topo, err := Build(KindTrn3Gen2, hwarch.Mariana, 144, p)
	require.NoError(t, err)
	through := map[string]int{}
	for a := range topo.Devices {
		for b := range topo.Devices {
			if a/Gen2ServerSize == b/Gen2ServerSize {
				continue
			}
			path, err := topo.Path(a, b)
			require.NoError(t, err)
			require.Len(t, path, 2)
			through[topo.Nodes[topo.Links[path[0]].To].Name]++
		}
	}
	pairs := 144 * (144 - Gen2ServerSize)
	assert.Equal(t, map[string]int{"l2-sw0": pairs / 2, "l2-sw1": pairs / 2}, through)
	assert.Equal(t, LinkParams{p.InterServer.Bandwidth / 2, p.InterServer.Latency}, p.SecondLevel, "by default half the inter-server bundle to each switch")
	for _, l := range topo.Links {
		if l.Group == "inter-server" {
			assert.Equal(t, p.SecondLevel, l.Params)
		}
	}
}

// TestSystemRefusals: the UltraServers have one shape; an unknown system
// name is refused naming the accepted ones; the pod-port budget bounds the
// Trn3 kinds as it does the switch.
func TestSystemRefusals(t *testing.T) {
	for _, tc := range []struct {
		k Kind
		n int
	}{{KindTrn3Gen1, 32}, {KindTrn3Gen1, 128}, {KindTrn3Gen2, 64}, {KindTrn3Gen2, 288}} {
		_, err := Build(tc.k, hwarch.Mariana, tc.n, DefaultParams(hwarch.Mariana))
		assert.ErrorIs(t, err, ErrTopology, "%s of %d", tc.k, tc.n)
	}
	_, err := LookupSystem("trn4")
	assert.ErrorIs(t, err, ErrUnknownSystem)
	assert.ErrorContains(t, err, "trn3-gen2")
	p := DefaultParams(hwarch.Mariana).WithSoc(1, 8)
	for _, k := range []Kind{KindTrn3Gen1, KindTrn3Gen2} {
		assert.ErrorIs(t, p.Validate(k), ErrParams, "%s: 5 inter-server links over 4 ports × 1", k)
	}
	p = DefaultParams(hwarch.Mariana)
	p.InterRack.Bandwidth = 0
	assert.ErrorIs(t, p.Validate(KindTrn3Gen1), ErrParams)
	assert.NoError(t, p.Validate(KindTrn3Gen2), "Gen2 has no inter-rack links")
	p = DefaultParams(hwarch.Mariana)
	p.SecondLevel.Bandwidth = 0
	assert.ErrorContains(t, p.Validate(KindTrn3Gen2), "second-level link bandwidth 0")
	assert.NoError(t, p.Validate(KindTrn3Gen1), "Gen1 has no second-level links")
}

// TestSystemsBuildAsSystems: each system of the catalogue builds as a
// timing-only system through New, with the devices the runtime could not
// address as one mesh past 64 kept by index.
func TestSystemsBuildAsSystems(t *testing.T) {
	for _, spec := range Systems {
		t.Run(spec.Name, func(t *testing.T) {
			cfg := spec.Config()
			cfg.TimingOnly, cfg.Ready = true, true
			s, err := New(cfg)
			require.NoError(t, err)
			assert.Len(t, s.Devices(), spec.Devices)
			assert.Equal(t, spec.Kind, s.Topology().Kind)
		})
	}
}

// TestGenerationRefusal: the switched kinds are Trn3's and refused on the
// other generations, naming the generation; every other kind, and the
// switched ones on mariana, are not refused.
func TestGenerationRefusal(t *testing.T) {
	for k := KindAuto; k < numKinds; k++ {
		for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman, hwarch.Mariana} {
			got := k.GenerationRefusal(g)
			if k == KindUltraServer {
				if g == hwarch.Cayman {
					assert.Empty(t, got, "%s on %s", k, g)
				} else {
					assert.Contains(t, got, "an ultraserver topology is Trn2's", "%s on %s", k, g)
				}
				continue
			}
			switched := k == KindSwitch || k == KindTrn3Gen1 || k == KindTrn3Gen2
			if !switched || g == hwarch.Mariana {
				assert.Empty(t, got, "%s on %s", k, g)
				continue
			}
			assert.Contains(t, got, "a "+k.String()+" topology is Trn3's", "%s on %s", k, g)
			assert.Contains(t, got, g.String()+" ("+g.Product()+") devices are joined by direct links", "%s on %s", k, g)
		}
	}
}
