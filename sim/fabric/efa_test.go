package fabric

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// efaParams are the generation's defaults with EFA parameters changed by
// mut.
func efaParams(g hwarch.Generation, mut func(*EFAParams)) Params {
	p := DefaultParams(g)
	if mut != nil {
		mut(&p.EFA)
	}
	return p
}

// groupsOf returns the link groups of a path.
func groupsOf(t *Topology, path []int) []string {
	var out []string
	for _, id := range path {
		out = append(out, t.Links[id].Group)
	}
	return out
}

// TestEFAShapes: N copies of each system of the catalogue joined by EFA
// have N × its devices, one NIC per DevicesPerNIC devices (Trn1 two chips
// per NIC, the others one), a leaf per rail (rail-optimised) or per
// LeafPorts NICs (fat tree), spines when there is more than one leaf, and
// the per-node EFA bandwidth AWS publishes for the system.
func TestEFAShapes(t *testing.T) {
	for _, spec := range Systems {
		for _, net := range []EFANetwork{RailOptimised, FatTree} {
			t.Run(fmt.Sprintf("%s-%s", spec.Name, net), func(t *testing.T) {
				const nodes = 2
				p := DefaultParams(spec.Generation)
				p.EFA.Network = net
				topo, err := BuildNodes(spec.Kind, spec.Generation, nodes*spec.Devices, nodes, p)
				require.NoError(t, err)
				require.NoError(t, topo.Connected())
				so := topo.Scale
				require.NotNil(t, so)
				assert.Equal(t, nodes*spec.Devices, topo.Devices)
				assert.Equal(t, spec.NICs, so.NICs, "NICs per node")
				assert.Equal(t, spec.EFABandwidth, uint64(so.NICs)*p.EFA.NICBandwidth, "the node's EFA bandwidth")
				count := map[NodeKind]int{}
				for _, n := range topo.Nodes {
					count[n.Kind]++
				}
				assert.Equal(t, nodes*spec.NICs, count[NodeNIC])
				wantLeaves := spec.NICs // one leaf per rail: 2 nodes fit a leaf
				if net == FatTree {
					wantLeaves = (nodes*spec.NICs + 63) / 64
				}
				assert.Equal(t, wantLeaves, so.Leaves)
				wantSpines := 0
				if wantLeaves > 1 {
					wantSpines = p.EFA.Spines
				}
				assert.Equal(t, wantSpines, so.Spines)
				base, err := Build(spec.Kind, spec.Generation, spec.Devices, p)
				require.NoError(t, err)
				assert.Equal(t, nodes*(len(base.Nodes)-spec.Devices)+wantLeaves+wantSpines, count[NodeSwitch], "the nodes' own switches, leaves and spines")
				assert.Len(t, topo.Links, nodes*len(base.Links)+2*nodes*spec.Devices+2*nodes*spec.NICs+2*wantLeaves*wantSpines)
				for d := range topo.Devices {
					nic := topo.Links[so.up[d]].To
					assert.Equal(t, so.NIC(d/spec.Devices, d%spec.Devices/p.EFA.DevicesPerNIC), nic, "device %d's NIC", d)
				}
			})
		}
	}
}

// TestEFASpecsMatchDefaults: the published per-instance EFA bandwidth and
// NIC count of each system (SystemSpec) are what the generation's default
// EFA parameters give a node of its devices, so a system of nodes built
// from either is the same.
func TestEFASpecsMatchDefaults(t *testing.T) {
	want := map[string][2]uint64{ // Gbps per node, NICs
		"trn1-32xl": {800, 8}, "trn2-48xl": {3200, 16}, "trn2-ultraserver": {12800, 64}, "trn3-gen1": {12800, 64}, "trn3-gen2": {28800, 144},
	}
	for _, spec := range Systems {
		e := DefaultEFA(spec.Generation)
		assert.Equal(t, want[spec.Name], [2]uint64{spec.EFABandwidth * 8 / 1e9, uint64(spec.NICs)}, spec.Name)
		assert.Equal(t, e, spec.EFA(), spec.Name)
		cfg := spec.Cluster(3)
		assert.Equal(t, 3*spec.Devices, cfg.Devices)
		assert.Equal(t, 3, cfg.Nodes)
		if spec.Devices == 16 {
			cfg.TimingOnly = true
			sys, err := New(cfg)
			require.NoError(t, err, spec.Name)
			so := sys.Topology().Scale
			assert.Equal(t, spec.EFABandwidth, uint64(so.NICs)*sys.Params().EFA.NICBandwidth, spec.Name)
			assert.Equal(t, 3*spec.NICs, so.Nodes*so.NICs)
		}
	}
}

// TestEFARouting: every device reaches every other; inside a node by the
// node's own path; to another node, rail-optimised, through the NIC of the
// destination's rail (after moving inside the node to the device of the
// destination's local index when its own NIC is another), fat tree
// through its own NIC; a path crosses a spine exactly when the two NICs
// are on different leaves, the spine of the destination NIC's leaf port
// (SpineOf).
func TestEFARouting(t *testing.T) {
	for _, c := range []struct {
		name  string
		g     hwarch.Generation
		kind  Kind
		nd    int
		nodes int
		net   EFANetwork
		ports int
	}{
		{"trn1-rail", hwarch.Sunda, KindTorus2D, 16, 2, RailOptimised, 64},
		{"trn2-rail-2leaves-per-rail", hwarch.Cayman, KindTorus2D, 16, 3, RailOptimised, 2},
		{"trn2-fat-tree", hwarch.Cayman, KindTorus2D, 16, 3, FatTree, 8},
		{"trn3-switch-fat-tree", hwarch.Mariana, KindSwitch, 8, 2, FatTree, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := efaParams(c.g, func(e *EFAParams) { e.Network, e.LeafPorts = c.net, c.ports })
			topo, err := BuildNodes(c.kind, c.g, c.nd*c.nodes, c.nodes, p)
			require.NoError(t, err)
			so := topo.Scale
			base := so.Base
			for a := range topo.Devices {
				for b := range topo.Devices {
					path, err := topo.Path(a, b)
					require.NoError(t, err, "%d → %d", a, b)
					if a == b {
						require.Empty(t, path)
						continue
					}
					require.Equal(t, a, topo.Links[path[0]].From)
					require.Equal(t, b, topo.Links[path[len(path)-1]].To)
					for i := 1; i < len(path); i++ {
						require.Equal(t, topo.Links[path[i-1]].To, topo.Links[path[i]].From, "%d → %d: a connected path", a, b)
					}
					ma, la, mb, lb := a/c.nd, a%c.nd, b/c.nd, b%c.nd
					if ma == mb {
						bp, err := base.Path(la, lb)
						require.NoError(t, err)
						require.Equal(t, groupsOf(base, bp), groupsOf(topo, path), "%d → %d inside node %d: the node's own path", a, b, ma)
						continue
					}
					// The first EFA link leaves from the sending device.
					k := 0
					for topo.Links[path[k]].Group != "efa-nic" {
						k++
					}
					sender := topo.Links[path[k]].From
					require.Equal(t, ma, sender/c.nd, "%d → %d leaves its own node", a, b)
					if c.net == FatTree {
						require.Equal(t, a, sender, "%d → %d: fat tree, the device's own NIC", a, b)
					} else {
						require.Equal(t, so.NICOf(lb), so.NICOf(sender%c.nd), "%d → %d: the destination's rail", a, b)
						if so.NICOf(la) == so.NICOf(lb) {
							require.Equal(t, a, sender, "%d → %d: already on the destination's rail", a, b)
						} else {
							// It moved along the node's path towards the
							// device of the destination's local index.
							bp, err := base.Path(la, lb)
							require.NoError(t, err)
							require.Equal(t, groupsOf(base, bp[:k]), groupsOf(topo, path[:k]), "%d → %d: the node's path towards %d", a, b, ma*c.nd+lb)
						}
					}
					tail := groupsOf(topo, path[k:])
					srcLeaf, dstLeaf := so.LeafOf(ma, so.NICOf(sender%c.nd)), so.LeafOf(mb, so.NICOf(lb))
					want := []string{"efa-nic", "efa-leaf", "efa-leaf", "efa-nic"}
					if srcLeaf != dstLeaf {
						want = []string{"efa-nic", "efa-leaf", "efa-spine", "efa-spine", "efa-leaf", "efa-nic"}
						require.Equal(t, so.Spine(so.PortOf(mb, so.NICOf(lb))%so.Spines), topo.Links[path[k+2]].To, "%d → %d: spine port mod Spines", a, b)
					}
					require.Equal(t, want, tail, "%d → %d", a, b)
				}
			}
		})
	}
}

// TestEFASpinesSpread: a leaf spreads the NICs of every other leaf over
// the spines — each spine reaches ⌊n/Spines⌋ or ⌈n/Spines⌉ of a leaf's n
// NICs, exactly n/Spines when Spines divides n — whatever the device
// numbering. Rail-optimised, the NICs of a rail are NIC k of every node,
// devices k, k + node devices, …: a spine chosen by the destination
// device's index mod Spines sent a rail's whole traffic to one spine when
// Spines divided the node's devices (4 devices a node and 2 or 4 spines),
// leaving the others idle.
func TestEFASpinesSpread(t *testing.T) {
	for _, c := range []struct {
		name          string
		g             hwarch.Generation
		kind          Kind
		nd, nodes     int
		net           EFANetwork
		ports, spines int
	}{
		{"trn2-rail-4x4-ports2-spines2", hwarch.Cayman, KindRing, 4, 4, RailOptimised, 2, 2},
		{"trn2-rail-4x8-ports4-spines2", hwarch.Cayman, KindRing, 4, 8, RailOptimised, 4, 2},
		{"trn2-rail-4x8-ports4-spines4", hwarch.Cayman, KindRing, 4, 8, RailOptimised, 4, 4},
		{"trn2-rail-16x4-ports2-spines2", hwarch.Cayman, KindTorus2D, 16, 4, RailOptimised, 2, 2},
		{"trn1-rail-16x4-ports2-spines2", hwarch.Sunda, KindTorus2D, 16, 4, RailOptimised, 2, 2},
		{"trn2-rail-uneven-4x5-ports2-spines2", hwarch.Cayman, KindRing, 4, 5, RailOptimised, 2, 2},
		{"trn2-fat-tree-4x4-ports4-spines4", hwarch.Cayman, KindRing, 4, 4, FatTree, 4, 4},
		{"trn2-fat-tree-4x4-ports8-spines4", hwarch.Cayman, KindRing, 4, 4, FatTree, 8, 4},
		{"trn1-fat-tree-16x2-ports4-spines2", hwarch.Sunda, KindTorus2D, 16, 2, FatTree, 4, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := efaParams(c.g, func(e *EFAParams) { e.Network, e.LeafPorts, e.Spines = c.net, c.ports, c.spines })
			topo, err := BuildNodes(c.kind, c.g, c.nd*c.nodes, c.nodes, p)
			require.NoError(t, err)
			so := topo.Scale
			require.Equal(t, c.spines, so.Spines)
			require.Greater(t, so.Leaves, 1)
			// The NICs of each leaf, by (node, NIC) and the device behind
			// each (the first of its devices).
			nicsOn := make([][][2]int, so.Leaves)
			for m := range so.Nodes {
				for k := range so.NICs {
					nicsOn[so.LeafOf(m, k)] = append(nicsOn[so.LeafOf(m, k)], [2]int{m, k})
				}
			}
			for from := range so.Leaves {
				for to := range so.Leaves {
					if from == to {
						continue
					}
					per := make([]int, so.Spines)
					for _, mk := range nicsOn[to] {
						dst := mk[0]*c.nd + mk[1]*p.EFA.DevicesPerNIC
						id := so.hop(so.Leaf(from), dst)
						require.GreaterOrEqual(t, id, int32(0))
						l := topo.Links[id]
						require.Equal(t, "efa-spine", l.Group)
						s := l.To - so.Spine(0)
						require.Equal(t, so.SpineOf(mk[0], mk[1]), s)
						per[s]++
						// Every device of the NIC goes the same way.
						for j := 1; j < p.EFA.DevicesPerNIC; j++ {
							require.Equal(t, id, so.hop(so.Leaf(from), dst+j))
						}
					}
					n := len(nicsOn[to])
					for s, got := range per {
						assert.GreaterOrEqual(t, got, n/so.Spines, "leaf %d → leaf %d: NICs through spine %d of %d", from, to, s, per)
						assert.LessOrEqual(t, got, (n+so.Spines-1)/so.Spines, "leaf %d → leaf %d: NICs through spine %d of %d", from, to, s, per)
					}
				}
			}
		})
	}
}

// TestEFARefusals: parameters that cannot describe an EFA network and
// shapes it cannot join are refused, naming the field.
func TestEFARefusals(t *testing.T) {
	for _, c := range []struct {
		name       string
		mut        func(*EFAParams)
		devs, node int
		want       string
	}{
		{"oversubscription below 1", func(e *EFAParams) { e.Oversubscription = 0.5 }, 32, 2, "EFA.Oversubscription"},
		{"oversubscription NaN", func(e *EFAParams) { e.Oversubscription = nan() }, 32, 2, "EFA.Oversubscription"},
		{"no bandwidth", func(e *EFAParams) { e.NICBandwidth = 0 }, 32, 2, "EFA.NICBandwidth"},
		{"no leaf ports", func(e *EFAParams) { e.LeafPorts = 0 }, 32, 2, "EFA.LeafPorts"},
		{"too many leaf ports", func(e *EFAParams) { e.LeafPorts = MaxLeafPorts + 1 }, 32, 2, "EFA.LeafPorts"},
		{"no spines", func(e *EFAParams) { e.Spines = 0 }, 32, 2, "EFA.Spines"},
		{"no devices per NIC", func(e *EFAParams) { e.DevicesPerNIC = 0 }, 32, 2, "EFA.DevicesPerNIC"},
		{"devices per NIC not dividing", func(e *EFAParams) { e.DevicesPerNIC = 3 }, 32, 2, "EFA.DevicesPerNIC 3 does not divide"},
		{"latency", func(e *EFAParams) { e.NICLatency = 1 << 63 }, 32, 2, "EFA.NICLatency"},
		{"network", func(e *EFAParams) { e.Network = 9 }, 32, 2, "EFA.Network"},
		{"routing", func(e *EFAParams) { e.Routing = 9 }, 32, 2, "EFA.Routing 9: not spray (0), fixed (1) or adaptive (2)"},
		{"nodes not dividing", nil, 32, 3, "must divide the devices"},
		{"uplink below 1 B/s", func(e *EFAParams) {
			e.NICBandwidth, e.Oversubscription, e.Spines, e.Network, e.LeafPorts = 1, 1000, 4, FatTree, 1
		}, 32, 2, "per spine link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := efaParams(hwarch.Cayman, c.mut)
			_, err := New(Config{Generation: hwarch.Cayman, Devices: c.devs, Nodes: c.node, Kind: KindTorus2D, Params: &p, TimingOnly: true})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := New(Config{Generation: hwarch.Cayman, Devices: 32, Nodes: -1, TimingOnly: true})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "Nodes -1")
	assert.Equal(t, hwarch.MaxFabricDevices/16, MaxNodes(16))
	var n EFANetwork
	require.NoError(t, n.Set("fat-tree"))
	assert.Equal(t, FatTree, n)
	assert.Equal(t, "fat-tree", n.String())
	_, err = ParseEFANetwork("torus")
	require.ErrorIs(t, err, ErrUnknownEFANetwork)
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

// landPS sends one write of n bytes from src to dst at start (the engine's
// bytes all handed over at once), posts it, and returns when it lands.
func landPS(t *testing.T, s *System, src, dst, n int, q int, addr, start uint64) uint64 {
	t.Helper()
	a, err := hwarch.FabricAddress(dst, addr)
	require.NoError(t, err)
	_, lands, err := s.ports[src].Reserve(0, q, a, n, sim.Time(start), sim.Time(start))
	require.NoError(t, err)
	require.NoError(t, s.ports[src].Post(0, q, a, n, nil, udma.Reduce{}, lands))
	return uint64(lands)
}

// TestEFAFreeFormula: in the free model a single write between two nodes
// lands exactly h·α + m/B after it starts in the parity mode (α each link's
// latency, B the slowest link's bandwidth), and with real endpoints the
// formula of EFAParams: a minimal message between two nodes on one leaf
// costs 2·NICLatency + 2·LeafLatency + σ + δ = 15 µs (+ m/B), one through
// a spine 2·SpineLatency + 2σ more.
func TestEFAFreeFormula(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name  string
		ideal bool
		size  int
		ports int // 1: every NIC on a leaf of its own, so a path crosses a spine
	}{
		{"parity-same-leaf", true, mib, 64},
		{"parity-spine", true, mib, 1},
		{"real-minimal", false, 64, 64},
		{"real-spine", false, 64, 1},
		{"real-large", false, mib, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			// One spine: the uplink of a leaf of one NIC has that NIC's
			// bandwidth (with two, half each).
			p := efaParams(hwarch.Cayman, func(e *EFAParams) { e.Network, e.LeafPorts, e.Spines = FatTree, c.ports, 1 })
			if c.ideal {
				p = p.WithIdealEndpoints()
			}
			p.Model = Free
			s, err := New(Config{Generation: hwarch.Cayman, Devices: 32, Nodes: 2, Kind: KindTorus2D, Params: &p, TimingOnly: true, Ready: true})
			require.NoError(t, err)
			const start = 1000 * ns
			got := landPS(t, s, 0, 16, c.size, 15, 0x10000, start) - start
			e := p.EFA
			alpha := 2*e.NICLatency + 2*e.LeafLatency
			switches := uint64(1)
			if c.ports == 1 {
				alpha += 2 * e.SpineLatency
				switches = 3
			}
			bw := e.NICBandwidth
			want := alpha + uint64(simkernel.AtRate(uint64(c.size), bw))
			if !c.ideal {
				want += switches*p.Switch + p.Endpoint
			}
			assert.Equal(t, want, got)
			if c.name == "real-minimal" {
				assert.Equal(t, uint64(15_000*ns), got-uint64(simkernel.AtRate(64, bw)), "the ~15 µs HBM-to-HBM of a minimal message [C2, C4]")
			}
		})
	}
}

// flows runs, in the aware model, one flow per (src, dst) pair, each of
// writes × size bytes, its writes reserved in turn with the other flows'
// (each flow's next write starting when its last has left its device, as a
// DMA engine's next descriptor does), and returns when each flow's last
// write landed, from start.
func flows(t *testing.T, s *System, pairs [][2]int, writes, size int) []uint64 {
	t.Helper()
	const start = 1000 * ns
	at := make([]uint64, len(pairs))
	done := make([]uint64, len(pairs))
	for i := range at {
		at[i] = start
	}
	for j := range writes {
		for i, pr := range pairs {
			a, err := hwarch.FabricAddress(pr[1], 0x100000+uint64(i)<<28+uint64(j*size))
			require.NoError(t, err)
			in, lands, err := s.ports[pr[0]].Reserve(0, i, a, size, sim.Time(at[i]), sim.Time(at[i]))
			require.NoError(t, err)
			require.NoError(t, s.ports[pr[0]].Post(0, i, a, size, nil, udma.Reduce{}, lands))
			at[i], done[i] = uint64(in), uint64(lands)-start
		}
	}
	return done
}

// TestEFAAwareSharing: in the aware model the EFA links are FIFOs shared
// by every flow through them — two Trn1 devices on one NIC sending to the
// other node each get half the NIC (a flow takes twice as long as alone),
// and a leaf of oversubscription 2 whose NICs all send to another leaf
// gives each flow half its NIC (twice as long as with oversubscription 1),
// while one flow alone through the same leaf is not slowed (its NIC is the
// bottleneck, the uplink has twice its bandwidth).
func TestEFAAwareSharing(t *testing.T) {
	const writes, size = 256, 64 << 10 // 16 MiB a flow
	// A flow's time less the latency of its path (a 1-byte write on an idle
	// system of the same shape) is its bytes over its rate.
	within := func(t *testing.T, want, got float64, what string) {
		t.Helper()
		assert.InEpsilon(t, want, got, 0.005, "%s: %.4f", what, got)
	}
	latency := func(t *testing.T, cfg Config, src, dst int) uint64 {
		s, err := New(cfg)
		require.NoError(t, err)
		return landPS(t, s, src, dst, 1, 0, 0x10000, 1000*ns) - 1000*ns
	}
	t.Run("nic-shared", func(t *testing.T) {
		p := DefaultParams(hwarch.Sunda)
		cfg := Config{Generation: hwarch.Sunda, Devices: 32, Nodes: 2, Kind: KindTorus2D, Params: &p, TimingOnly: true, Ready: true}
		s, err := New(cfg)
		require.NoError(t, err)
		alone := flows(t, s, [][2]int{{0, 16}}, writes, size)[0] - latency(t, cfg, 0, 16)
		s2, err := New(cfg)
		require.NoError(t, err)
		both := flows(t, s2, [][2]int{{0, 16}, {1, 17}}, writes, size) // devices 0 and 1 share NIC 0, as 16 and 17 do
		for i, d := range both {
			within(t, 2, float64(d-latency(t, cfg, i, 16+i))/float64(alone), fmt.Sprintf("flow %d shared / alone", i))
		}
		link := s2.Topology().Links[s2.Topology().Scale.nicUp[0]]
		assert.Equal(t, "efa-leaf", link.Group)
	})
	t.Run("oversubscription", func(t *testing.T) {
		// Nodes of 2 Trn2 devices (a ring of 2), one NIC each; leaves of 2
		// ports, so node 0's NICs are leaf0 and node 1's leaf1; one spine.
		run := func(ratio float64, pairs [][2]int) []uint64 {
			p := efaParams(hwarch.Cayman, func(e *EFAParams) {
				e.Network, e.LeafPorts, e.Spines, e.Oversubscription = FatTree, 2, 1, ratio
			})
			cfg := Config{Generation: hwarch.Cayman, Devices: 4, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true}
			s, err := New(cfg)
			require.NoError(t, err)
			up := s.Topology().Links[s.Topology().Scale.leafUp[0][0]]
			require.Equal(t, uint64(float64(2*p.EFA.NICBandwidth)/ratio), up.Params.Bandwidth, "uplink = downlink sum / ratio")
			done := flows(t, s, pairs, writes, size)
			for i, pr := range pairs {
				done[i] -= latency(t, cfg, pr[0], pr[1])
			}
			return done
		}
		all := [][2]int{{0, 2}, {1, 3}}
		one, two := run(1, all), run(2, all)
		for i := range all {
			within(t, 2, float64(two[i])/float64(one[i]), fmt.Sprintf("flow %d at 2:1 / 1:1", i))
		}
		alone1, alone2 := run(1, all[:1])[0], run(2, all[:1])[0]
		within(t, 1, float64(alone2)/float64(alone1), "one flow at 2:1 / 1:1")
	})
}

// TestEFAFreeOversubscribedUplink: in the free model a single write across
// leaves goes at its path's slowest link, the uplink once the leaf is
// oversubscribed past its downlinks (2 NICs at 4:1: half a NIC).
func TestEFAFreeOversubscribedUplink(t *testing.T) {
	p := efaParams(hwarch.Cayman, func(e *EFAParams) { e.Network, e.LeafPorts, e.Spines, e.Oversubscription = FatTree, 2, 1, 4 })
	p = p.WithIdealEndpoints()
	p.Model = Free
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 4, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	const start, n = 1000 * ns, 1 << 20
	e := p.EFA
	got := landPS(t, s, 0, 2, n, 15, 0x10000, start) - start
	assert.Equal(t, 2*e.NICLatency+2*e.LeafLatency+2*e.SpineLatency+uint64(simkernel.AtRate(n, e.NICBandwidth/2)), got)
}

// TestEFASnapshot: a system of nodes saves and restores with its nodes and
// EFA parameters, and the restored system routes and times as the saved
// one.
func TestEFASnapshot(t *testing.T) {
	p := efaParams(hwarch.Cayman, func(e *EFAParams) { e.Network, e.LeafPorts, e.Oversubscription = FatTree, 8, 1.5 })
	s, err := New(Config{Generation: hwarch.Cayman, Devices: 32, Nodes: 2, Kind: KindTorus2D, Params: &p, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, 2, snap.Nodes)
	r, err := Restore(snap)
	require.NoError(t, err)
	assert.Equal(t, p.EFA, r.Params().EFA)
	require.NotNil(t, r.Topology().Scale)
	assert.Equal(t, landPS(t, s, 3, 29, 1<<20, 15, 0x10000, 1000*ns), landPS(t, r, 3, 29, 1<<20, 15, 0x10000, 1000*ns))
	var file bytes.Buffer
	require.NoError(t, r.Save(&file))
	l, err := Load(&file)
	require.NoError(t, err, "a saved system of nodes loads")
	assert.Equal(t, 2, l.Snapshot().Nodes)
	assert.Equal(t, p.EFA, l.Params().EFA)
	assert.Equal(t, r.Snapshot().Links, l.Snapshot().Links, "with its links' bookings")
	snap.Nodes = 3
	_, err = Restore(snap)
	require.ErrorIs(t, err, ErrSnapshot)
	assert.Contains(t, err.Error(), "Nodes 3")
	snap.Nodes = 2
	snap.Params.EFA.Oversubscription = 0
	_, err = Restore(snap)
	require.ErrorIs(t, err, ErrSnapshot)
	assert.Contains(t, err.Error(), "EFA.Oversubscription")
}

// FuzzBuildNodes: any shape and EFA parameters either build a topology in
// which every device reaches every other over a connected path that ends
// at its destination, or are refused with ErrParams or ErrTopology — never
// a panic or a path that loops.
func FuzzBuildNodes(f *testing.F) {
	for _, s := range []struct {
		kind, gen, nd, nodes, net, per, ports, spines uint8
		ratio                                         float64
	}{
		{1, 1, 16, 2, 0, 2, 64, 2, 1},
		{1, 2, 16, 3, 1, 1, 8, 1, 2},
		{5, 3, 8, 2, 1, 1, 4, 3, 1.5},
		{3, 2, 5, 4, 0, 1, 1, 2, 3},
		{6, 3, 3, 2, 0, 3, 1, 1, 1},
		{0, 0, 0, 0, 9, 0, 0, 0, 0},
	} {
		f.Add(s.kind, s.gen, s.nd, s.nodes, s.net, s.per, s.ports, s.spines, s.ratio)
	}
	f.Fuzz(func(t *testing.T, kind, gen, nd, nodes, net, per, ports, spines uint8, ratio float64) {
		g := hwarch.Generation(2 + gen%3)
		p := DefaultParams(g)
		p.EFA.Network, p.EFA.DevicesPerNIC, p.EFA.LeafPorts, p.EFA.Spines, p.EFA.Oversubscription = EFANetwork(net%3), int(per%5), int(ports%9), int(spines%4), ratio
		n, m := int(nd%20)+1, int(nodes%5)+1
		topo, err := BuildNodes(Kind(kind%uint8(numKinds)), g, n*m, m, p)
		if err != nil {
			if !errors.Is(err, ErrParams) && !errors.Is(err, ErrTopology) && !errors.Is(err, ErrUnknownKind) && !errors.Is(err, ErrDisconnected) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		require.NoError(t, topo.Connected())
		for a := range topo.Devices {
			for b := range topo.Devices {
				path, err := topo.Path(a, b)
				require.NoError(t, err)
				at := a
				for _, id := range path {
					require.Equal(t, at, topo.Links[id].From)
					at = topo.Links[id].To
				}
				require.Equal(t, b, at)
			}
		}
	})
}

// TestControlWriteNotBehindLaterChunks: in the aware model a 4-byte write
// (a semaphore) that reaches a busy EFA link while a burst of data writes
// booked before it is crossing waits only for the chunks that reached the
// link before it — here, the burst coming at the links' own rate, the one
// chunk crossing each link it shares with the burst — not for the burst's
// chunks that reach the link after it. Booked in the links' calendars, it
// waited for the whole burst (16 writes of 64 KiB ahead of it on the
// destination's NIC link: ~40 µs at 25 GB/s), or slipped into a gap
// between two chunks when it came a little earlier — which made a
// collective's time fall as the EFA latency rose. The data still lands as
// it did without it.
func TestControlWriteNotBehindLaterChunks(t *testing.T) {
	const burst, size = 16, 64 << 10
	for _, c := range []struct {
		name   string
		offset uint64 // when the semaphore starts, after the burst
	}{
		{"at-once", 0},
		{"1us-later", 1000 * ns},
		{"5us-later", 5000 * ns},
		{"20us-later", 20000 * ns},
	} {
		t.Run(c.name, func(t *testing.T) {
			// 2 nodes of 2 Trn2 devices on one fat-tree leaf: devices 0
			// and 1 (node 0) both send to device 2 (node 1) through
			// their own NICs, sharing the leaf's link down to device 2's
			// NIC and that NIC's link to it.
			p := efaParams(hwarch.Cayman, func(e *EFAParams) { e.Network = FatTree })
			cfg := Config{Generation: hwarch.Cayman, Devices: 4, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true}
			idle, err := New(cfg)
			require.NoError(t, err)
			const start = 1000 * ns
			latency := landPS(t, idle, 0, 2, 4, 0, 0x10000, start) - start

			s, err := New(cfg)
			require.NoError(t, err)
			done := flows(t, s, [][2]int{{1, 2}}, burst, size)[0]
			ref, err := New(cfg)
			require.NoError(t, err)
			alone := flows(t, ref, [][2]int{{1, 2}}, burst, size)[0]
			require.Equal(t, alone, done)
			require.Greater(t, done, uint64(40000*ns), "the burst keeps device 2's links busy ~40 µs")
			shared := sharedChunkTime(t, s, [2]int{0, 2}, [2]int{1, 2})
			require.Positive(t, shared)
			got := landPS(t, s, 0, 2, 4, 0, 0x10000, start+c.offset) - (start + c.offset)
			assert.GreaterOrEqual(t, got, latency, "no sooner than on an idle system")
			assert.LessOrEqual(t, got, latency+shared, "behind at most the chunk crossing each shared link (%d ps in all)", shared)
		})
	}
}

// sharedChunkTime is how long the links two paths share take to carry one
// chunk each, in all.
func sharedChunkTime(t *testing.T, s *System, a, b [2]int) uint64 {
	t.Helper()
	pa, err := s.path(a[0], a[1])
	require.NoError(t, err)
	pb, err := s.path(b[0], b[1])
	require.NoError(t, err)
	var sum uint64
	for _, id := range pa {
		if slices.Contains(pb, id) {
			sum += s.chunkTime[id]
		}
	}
	return sum
}

// convergingEFA is a system of the control writes' queue tests: 2 nodes
// of 3 Trn2 devices on one fat-tree leaf, devices 0 and 1 of node 0
// sending to device 3 of node 1 share the leaf's link down to device 3's
// NIC and that NIC's link to it, and so does device 2's semaphore.
func convergingEFA() Config {
	p := efaParams(hwarch.Cayman, func(e *EFAParams) { e.Network = FatTree })
	return Config{Generation: hwarch.Cayman, Devices: 6, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true}
}

// convergingStar is the other: 4 Trn3 devices on a switch (star) whose
// links carry 25 GB/s, devices 0 and 1 sending to device 3 share the
// switch's link down to it, and so does device 2's semaphore.
func convergingStar() Config {
	p := DefaultParams(hwarch.Mariana)
	p.Link.Bandwidth = 25e9
	return Config{Generation: hwarch.Mariana, Devices: 4, Kind: KindStar, Params: &p, TimingOnly: true, Ready: true}
}

// TestControlWriteBehindEarlierChunks: where two bursts converge on one
// link (devices 0 and 1 each sending 1 MiB at line rate to device 3, the
// switch's link down to device 3 taking them at the rate of one), a queue
// builds, and a semaphore from device 2 that reaches the link waits for
// the chunks queued before it, as in a FIFO: sent T after the bursts, it
// lands about T later than on an idle system (the queue holds about T of
// the link's time then) — but not behind the chunks that come after it,
// which would hold it until the bursts are over.
func TestControlWriteBehindEarlierChunks(t *testing.T) {
	for _, after := range []uint64{10000 * ns, 20000 * ns, 30000 * ns} {
		t.Run(fmt.Sprintf("%dus-later", after/(1000*ns)), func(t *testing.T) {
			c := semaphoreIntoBursts(t, convergingStar(), after)
			assert.Greater(t, c.wait, after*3/4, "waits for the queue that built in %d ps", after)
			assert.Less(t, c.wait, after*5/4, "waits for the queue that built in %d ps", after)
			assert.Less(t, c.lands, c.over-10000*ns, "not behind the chunks that came after it")
		})
	}
}

// semaphoreCase is what the control writes' queue tests measure.
type semaphoreCase struct {
	wait  uint64 // how much later the semaphore lands than on an idle system
	lands uint64 // when it lands
	over  uint64 // when the bursts have landed
	done  []uint64
	s     *System
}

// semaphoreIntoBursts runs the control writes' queue case on cfg
// (convergingStar or convergingEFA): devices 0 and 1 each send a burst of
// 16 writes of 64 KiB to device 3 from 1 µs, and device 2 a semaphore to
// device 3 after ps later.
func semaphoreIntoBursts(t *testing.T, cfg Config, after uint64) semaphoreCase {
	t.Helper()
	const burst, size = 16, 64 << 10
	const start = 1000 * ns
	idle, err := New(cfg)
	require.NoError(t, err)
	latency := landPS(t, idle, 2, 3, 4, 0, 0x10000, start) - start
	s, err := New(cfg)
	require.NoError(t, err)
	done := flows(t, s, [][2]int{{0, 3}, {1, 3}}, burst, size)
	over := max(done[0], done[1]) + start
	require.Greater(t, over, start+after+40000*ns, "the shared link carries 2 MiB, ~84 µs at 25 GB/s")
	got := landPS(t, s, 2, 3, 4, 0, 0x10000, start+after)
	return semaphoreCase{wait: got - (start + after) - latency, lands: got, over: over, done: done, s: s}
}

// TestControlWriteNotQueuedOnEFA: on the EFA network's links a control
// write does not wait for the chunks queued there before it — a NIC serves
// its queue pairs in turn, and the bytes a NIC still has to send wait in
// the senders' queues, not in one FIFO ahead of every other flow's 4-byte
// write — so where two bursts converge on the leaf's link down to device
// 3's NIC, device 2's semaphore lands as on an idle system, however deep
// the queue; the writes of one path still land in order, so a semaphore
// of device 0 sent after its own burst lands after its burst's last byte.
func TestControlWriteNotQueuedOnEFA(t *testing.T) {
	const start = 1000 * ns
	for _, after := range []uint64{0, 10000 * ns, 30000 * ns} {
		t.Run(fmt.Sprintf("%dus-later", after/(1000*ns)), func(t *testing.T) {
			c := semaphoreIntoBursts(t, convergingEFA(), after)
			assert.Zero(t, c.wait, "device 2's semaphore waits for no other flow's queue")
			own := landPS(t, c.s, 0, 3, 4, 0, 0x10000, start+after)
			assert.GreaterOrEqual(t, own, start+c.done[0], "device 0's semaphore lands after its own burst")
		})
	}
}

// TestControlWriteWaitSurvivesSnapshot: the chunks a control write waits
// for are in a snapshot (LinkState.Queue): saved while two bursts converge
// on a link and loaded again, a system lands a semaphore sent into that
// queue when the system that was not saved lands it.
func TestControlWriteWaitSurvivesSnapshot(t *testing.T) {
	const burst, size = 16, 64 << 10
	cfg := convergingStar()
	s, err := New(cfg)
	require.NoError(t, err)
	flows(t, s, [][2]int{{0, 3}, {1, 3}}, burst, size)
	s.Advance(15 * sim.Microsecond)
	var b bytes.Buffer
	require.NoError(t, s.Save(&b))
	r, err := Load(&b)
	require.NoError(t, err)
	send := uint64(s.Now()) + 5000*ns
	want := landPS(t, s, 2, 3, 4, 0, 0x10000, send)
	got := landPS(t, r, 2, 3, 4, 0, 0x10000, send)
	assert.Equal(t, want, got)
	idle, err := New(cfg)
	require.NoError(t, err)
	assert.Greater(t, want-send, landPS(t, idle, 2, 3, 4, 0, 0x10000, 1000*ns)-1000*ns+10000*ns, "it waited for the queue")
}

// TestControlWriteBookedInParityMode: in the parity mode (ideal endpoints)
// a 4-byte write is a message like any other, stored and forwarded through
// the links' FIFOs as the analytical contention-aware backend has it: sent
// while a burst crosses its path, it lands later than on an idle system.
func TestControlWriteBookedInParityMode(t *testing.T) {
	const burst, size = 16, 64 << 10
	p := efaParams(hwarch.Cayman, func(e *EFAParams) { e.Network = FatTree }).WithIdealEndpoints()
	cfg := Config{Generation: hwarch.Cayman, Devices: 4, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true}
	idle, err := New(cfg)
	require.NoError(t, err)
	const start = 1000 * ns
	latency := landPS(t, idle, 0, 2, 4, 0, 0x10000, start) - start
	s, err := New(cfg)
	require.NoError(t, err)
	flows(t, s, [][2]int{{1, 2}}, burst, size)
	const later = start + 20000*ns // the burst is crossing device 2's links
	got := landPS(t, s, 0, 2, 4, 0, 0x10000, later) - later
	assert.Greater(t, got, latency, "behind the burst in the parity mode's FIFOs")
}

// TestFreeStreamAtSlowestLink: in the free model a device's stream of
// writes along one path — each write starting when the one before has left
// the device, as a DMA queue's descriptors do — crosses the path no faster
// than its slowest link: the last of k writes of n bytes lands k·n/B_min
// plus the path's latency after the first started. The device's own link
// is held for each write's n/B_min (cut-through: the source sends no faster
// than its path takes the bytes). It was held for n/B₀, its own link's
// time, so where a later link is slower — a rail-optimised write that moves
// inside its node to the device on the destination's rail before it
// crosses the 25 GB/s NIC, or a leaf's oversubscribed uplink — the writes
// overlapped on it: a 64 MiB permute across two nodes of 2 Trn3 devices ran
// at 118 GB/s through one 25 GB/s NIC (dev-nic 472 % busy), and a stream
// through an uplink of an eighth of a NIC was not slowed by it. Where the
// first link is the slowest (a write that leaves through its device's own
// NIC) nothing changes.
func TestFreeStreamAtSlowestLink(t *testing.T) {
	const writes, size = 16, 64 << 10
	for _, c := range []struct {
		name     string
		ideal    bool
		g        hwarch.Generation
		kind     Kind
		devices  int
		mut      func(*EFAParams)
		src, dst int
		firstNIC bool // the path's first link is the device's NIC link (the slowest)
	}{
		// Rail-optimised, nodes of 2: device 1 writes to device 2 (local 0
		// of node 1) through device 0, on that rail: the node's link first.
		{"rail-relayed-parity", true, hwarch.Mariana, KindSwitch, 4, nil, 1, 2, false},
		{"rail-relayed-real", false, hwarch.Mariana, KindSwitch, 4, nil, 1, 2, false},
		{"rail-relayed-trn2-ring", false, hwarch.Cayman, KindRing, 4, nil, 1, 2, false},
		// Fat tree, a NIC a leaf, one spine at 4:1: the uplink is a
		// quarter of the NIC.
		{"oversubscribed-uplink", true, hwarch.Cayman, KindRing, 4, func(e *EFAParams) {
			e.Network, e.LeafPorts, e.Spines, e.Oversubscription = FatTree, 1, 1, 4
		}, 0, 2, true},
		// Same rail: the device's own NIC link first, the slowest already.
		{"rail-own-nic", true, hwarch.Mariana, KindSwitch, 4, nil, 0, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := efaParams(c.g, c.mut)
			if c.ideal {
				p = p.WithIdealEndpoints()
			}
			p.Model = Free
			s, err := New(Config{Generation: c.g, Devices: c.devices, Nodes: 2, Kind: c.kind, Params: &p, TimingOnly: true, Ready: true})
			require.NoError(t, err)
			path, err := s.path(c.src, c.dst)
			require.NoError(t, err)
			links := s.Topology().Links
			slowest, lat := links[path[0]].Params.Bandwidth, p.Endpoint
			for _, id := range path {
				slowest = min(slowest, links[id].Params.Bandwidth)
				lat += s.hopDelay[id]
			}
			require.Equal(t, c.firstNIC, links[path[0]].Group == "efa-nic", "the path's first link")
			if !c.firstNIC {
				require.Less(t, slowest, links[path[0]].Params.Bandwidth, "a later link is slower than the first")
			}
			const start = 1000 * ns
			for _, engines := range []int{1, 4} {
				// The engines' writes are reserved in the order of their
				// starts (the event engine's), each engine's next when its
				// last has left the device.
				s, err := New(Config{Generation: c.g, Devices: c.devices, Nodes: 2, Kind: c.kind, Params: &p, TimingOnly: true, Ready: true})
				require.NoError(t, err)
				at := slices.Repeat([]uint64{start}, engines)
				var last uint64
				for j := range writes {
					e := 0
					for k := range engines {
						if at[k] < at[e] {
							e = k
						}
					}
					a, err := hwarch.FabricAddress(c.dst, 0x100000+uint64(j*size))
					require.NoError(t, err)
					in, lands, err := s.ports[c.src].Reserve(e, 0, a, size, sim.Time(at[e]), sim.Time(at[e]))
					require.NoError(t, err)
					require.NoError(t, s.ports[c.src].Post(e, 0, a, size, nil, udma.Reduce{}, lands))
					at[e], last = uint64(in), max(last, uint64(lands))
				}
				want := writes*uint64(simkernel.AtRate(size, slowest)) + lat
				assert.Equal(t, want, last-start, "%d engines: the last of %d writes of %d bytes: %d × n/B_min + latency", engines, writes, size, writes)
			}
		})
	}
}

// freeRailSystem is a contention-free timing-only system of two
// rail-optimised nodes of 2 Trn3 devices: device 1's writes to device 2
// go through device 0, the NIC of node 1's rail 0.
func freeRailSystem(t *testing.T) *System {
	t.Helper()
	p := efaParams(hwarch.Mariana, nil)
	p.Model = Free
	s, err := New(Config{Generation: hwarch.Mariana, Devices: 4, Nodes: 2, Kind: KindSwitch, Params: &p, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	return s
}

// TestFreeRelayLeavesOwnLinkFree: in the contention-free model a write
// relayed inside its node to the NIC of its destination's rail holds its
// device's own link for its bytes' time there, not for its time on the
// slower NIC link further on, so another engine's in-node write over the
// same first link follows it n/B₀ later. Booked there for n / min Bᵢ
// (2026-12-07), the relayed write held the link four times as long, and a
// 4 × 4 Trn2 all-to-all took 153.79 µs against 120.88.
func TestFreeRelayLeavesOwnLinkFree(t *testing.T) {
	const size = 64 << 10
	s := freeRailSystem(t)
	relay, err := s.path(1, 2) // through device 0, the NIC of node 1's rail 0
	require.NoError(t, err)
	local, err := s.path(1, 0)
	require.NoError(t, err)
	require.Equal(t, relay[0], local[0], "both leave over device 1's own link")
	links := s.Topology().Links
	slowest := links[relay[0]].Params.Bandwidth
	for _, id := range relay {
		slowest = min(slowest, links[id].Params.Bandwidth)
	}
	own := uint64(simkernel.AtRate(size, links[relay[0]].Params.Bandwidth))
	require.Less(t, own, uint64(simkernel.AtRate(size, slowest)), "the relayed write is slower further on")
	const start = 1000 * ns
	reserve := func(e, dst int) uint64 {
		a, err := hwarch.FabricAddress(dst, 0x100000)
		require.NoError(t, err)
		in, lands, err := s.ports[1].Reserve(e, 0, a, size, sim.Time(start), sim.Time(start))
		require.NoError(t, err)
		require.NoError(t, s.ports[1].Post(e, 0, a, size, nil, udma.Reduce{}, lands))
		return uint64(in)
	}
	in := reserve(0, 2)
	assert.Equal(t, start+uint64(simkernel.AtRate(size, slowest)), in, "the relayed write leaves the device at the NIC's rate")
	assert.Equal(t, start+2*own, reserve(1, 0), "the in-node write follows the relayed one's n/B₀ on the device's link")
}
