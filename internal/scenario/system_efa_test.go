package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestSystemNodesEFA: system.nodes joins that many copies of the system
// over EFA (devices per node, every node's in r.devices), and system.efa
// sets each EFA parameter as the command line's flags do — the latency
// through the NIC's share, the bandwidth by its unit.
func TestSystemNodesEFA(t *testing.T) {
	def := fabric.DefaultEFA(hwarch.Cayman)
	for _, tc := range []struct {
		name, system string
		devices      int
		nodes        int
		efa          func(*fabric.EFAParams)
	}{
		{"one node", "{arch: cayman, devices: 16}", 16, 1, func(*fabric.EFAParams) {}},
		{"nodes 1 explicit", "{arch: cayman, devices: 4, nodes: 1}", 4, 1, func(*fabric.EFAParams) {}},
		{"two by name", "{name: trn2-48xl, nodes: 2}", 32, 2, func(*fabric.EFAParams) {}},
		{"three of four", "{arch: cayman, devices: 4, nodes: 3}", 12, 3, func(*fabric.EFAParams) {}},
		{"every key", "{arch: cayman, devices: 16, nodes: 3, efa: {network: fat-tree, oversubscription: 2, bandwidth: 400Gbps, latency_ns: 20000, leaf_ports: 16, spines: 1, devices_per_nic: 2, routing: fixed}}", 48, 3,
			func(e *fabric.EFAParams) {
				e.Network, e.Oversubscription, e.NICBandwidth, e.LeafPorts, e.Spines, e.DevicesPerNIC, e.Routing = fabric.FatTree, 2, 50e9, 16, 1, 2, fabric.RouteFixed
				e.NICLatency = (20000*1000 - 2*500*1000 - 300*1000 - 500*1000) / 2 // as --efa-latency: 9,100 ns
			}},
		{"bandwidth in GiB/s", "{arch: cayman, devices: 2, nodes: 2, efa: {bandwidth: 50GiB/s}}", 4, 2, func(e *fabric.EFAParams) { e.NICBandwidth = 50 << 30 }},
		{"rail words", "{arch: cayman, devices: 2, nodes: 2, efa: {network: rail-optimised}}", 4, 2, func(e *fabric.EFAParams) { e.Network = fabric.RailOptimised }},
		{"routing in capitals", "{arch: cayman, devices: 2, nodes: 2, efa: {leaf_ports: 1, routing: SPRAY}}", 4, 2, func(e *fabric.EFAParams) { e.LeafPorts, e.Routing = 1, fabric.RouteSpray }},
		{"adaptive, spines past a leaf's NICs", "{arch: cayman, devices: 2, nodes: 2, efa: {leaf_ports: 1, spines: 4, routing: adaptive}}", 4, 2, func(e *fabric.EFAParams) {
			e.LeafPorts, e.Spines, e.Routing = 1, 4, fabric.RouteAdaptive
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("x.yaml", []byte("name: x\nsystem: "+tc.system+"\n"))
			require.NoError(t, err)
			want := def
			tc.efa(&want)
			assert.Equal(t, tc.devices, p.sys.devices)
			assert.Equal(t, tc.nodes, p.sys.nodes)
			assert.Equal(t, want, p.sys.params.EFA)
		})
	}
}

// TestSystemNodesEFARefusals: every bad value of system.nodes and
// system.efa is refused at its position, naming the key, with the
// command line's checks (fabric.EFASettings); EFA keys without nodes ≥ 2
// are refused.
func TestSystemNodesEFARefusals(t *testing.T) {
	sys := func(fields string) string { return "name: x\nsystem: {arch: cayman, devices: 16, " + fields + "}\n" }
	for _, tc := range []struct {
		name, doc, token string
		want             []string
		is               error
	}{
		{"nodes 0", sys("nodes: 0"), "0}", []string{"system.nodes: 0: "}, units.ErrRange},
		{"nodes negative", sys("nodes: -2"), "-2", []string{"system.nodes: -2: "}, units.ErrRange},
		{"nodes too many", sys("nodes: 2000"), "2000", []string{"system.nodes: 2000: 2000 nodes of 16 devices are 32000 devices", "at most 1024 nodes"}, fabric.ErrParams},
		{"nodes text", sys("nodes: two"), "two", []string{"system.nodes"}, nil},
		{"efa one node", sys("efa: {spines: 2}"), "2}}", []string{"system.efa.spines: one node has no EFA network; it applies with system.nodes 2 or more"}, fabric.ErrParams},
		{"efa nodes 1", sys("nodes: 1, efa: {network: rail}"), "rail}", []string{"system.efa.network: one node has no EFA network"}, fabric.ErrParams},
		{"spines idle", sys("nodes: 2, efa: {spines: 4}"), "4}}", []string{"system.efa.spines: changes nothing here: with 2 nodes of 16 devices the network is rail-optimised and each rail's 2 nodes fit one leaf of 64 ports"}, fabric.ErrParams},
		{"oversubscription with one leaf", sys("nodes: 2, efa: {network: fat-tree, oversubscription: 2}"), "2}}", []string{"system.efa.oversubscription: changes nothing here: with 2 nodes of 16 devices one leaf of 64 ports holds all 32 NICs (2 nodes × 16), so the network has no spines"}, fabric.ErrParams},
		// Fixed routing only: sprayed, every spine carries writes.
		{"spines past a leaf's NICs", sys("nodes: 2, efa: {leaf_ports: 1, spines: 4, routing: fixed}"), "4,", []string{"system.efa.spines: 4: with 2 nodes of 16 devices a leaf holds at most 1 NIC (rail0-leaf0), and under fixed routing (system.efa.routing) a write goes up to spine p mod 4 (system.efa.spines)", "so 3 of the 4 spines would carry nothing", "give at most 1 spine, or more NICs a leaf (system.efa.leaf_ports), or spray or adaptive routing"}, fabric.ErrParams},
		{"leaf ports below the default spines", sys("nodes: 2, efa: {leaf_ports: 1, routing: fixed}"), "1,", []string{"system.efa.leaf_ports: 1: with 2 nodes of 16 devices a leaf holds at most 1 NIC", "so 1 of the 2 spines would carry nothing"}, fabric.ErrParams},
		{"network", sys("nodes: 2, efa: {network: torus}"), "torus", []string{"system.efa.network", "accepted words are rail|fat-tree"}, nil},
		{"routing", sys("nodes: 2, efa: {network: fat-tree, leaf_ports: 16, routing: ecmp}"), "ecmp", []string{"system.efa.routing", `unknown EFA routing "ecmp": accepted words are spray|fixed|adaptive`}, nil},
		{"routing idle", sys("nodes: 2, efa: {routing: fixed}"), "fixed", []string{"system.efa.routing: changes nothing here"}, fabric.ErrParams},
		{"oversubscription low", sys("nodes: 2, efa: {oversubscription: 0.5}"), "0.5", []string{"system.efa.oversubscription: 0.5: a ratio from 1 (non-blocking) to 1024"}, units.ErrRange},
		{"oversubscription high", sys("nodes: 2, efa: {oversubscription: 5000}"), "5000", []string{"system.efa.oversubscription: 5000: a ratio from 1"}, units.ErrRange},
		{"oversubscription nan", sys("nodes: 2, efa: {oversubscription: .nan}"), ".nan", []string{"system.efa.oversubscription"}, nil},
		{"bandwidth bare", sys("nodes: 2, efa: {bandwidth: 50}"), "50", []string{"system.efa.bandwidth", "no unit"}, units.ErrSyntax},
		{"bandwidth zero", sys("nodes: 2, efa: {bandwidth: 0GB/s}"), "0GB/s", []string{"system.efa.bandwidth"}, units.ErrRange},
		{"bandwidth huge", sys("nodes: 2, efa: {bandwidth: 2PB/s}"), "2PB/s", []string{"system.efa.bandwidth"}, nil},
		{"bandwidth mapping", sys("nodes: 2, efa: {bandwidth: {a: 1}}"), "{a: 1}", []string{"system.efa.bandwidth", "expected a bandwidth"}, nil},
		{"latency negative", sys("nodes: 2, efa: {latency_ns: -1}"), "-1", []string{"system.efa.latency_ns"}, units.ErrRange},
		{"latency floor", sys("nodes: 2, efa: {latency_ns: 100}"), "100", []string{"system.efa.latency_ns: 100: below the 1800 ns the rest of the path takes"}, fabric.ErrParams},
		// A hop of seconds is no network: at most 1 ms (it was 10 s).
		{"latency past 1 ms", sys("nodes: 2, efa: {latency_ns: 5e6}"), "5e6", []string{"system.efa.latency_ns: 5000000: too long: a minimal message between two nodes takes at most 1000000 ns (1 ms"}, units.ErrRange},
		{"leaf ports", sys("nodes: 2, efa: {leaf_ports: 0}"), "0}", []string{"system.efa.leaf_ports: 0: "}, units.ErrRange},
		{"leaf ports high", sys("nodes: 2, efa: {leaf_ports: 5000}"), "5000", []string{"system.efa.leaf_ports: 5000: "}, units.ErrRange},
		{"spines", sys("nodes: 2, efa: {spines: 257}"), "257", []string{"system.efa.spines: 257: "}, units.ErrRange},
		{"devices per nic", sys("nodes: 2, efa: {devices_per_nic: 3}"), "3}", []string{"system.efa.devices_per_nic: 3: does not divide the 16 devices of a node"}, fabric.ErrParams},
		{"devices per nic 0", sys("nodes: 2, efa: {devices_per_nic: 0}"), "0}", []string{"system.efa.devices_per_nic: 0: "}, units.ErrRange},
		{"unknown key", sys("nodes: 2, efa: {radix: 3}"), "radix", []string{"radix"}, nil},
		{"efa scalar", sys("nodes: 2, efa: rail"), "rail", []string{"system.efa"}, nil},
		{"per-node devices", "name: x\nsystem: {arch: cayman, nodes: 2, devices: 17}\n", "17", []string{"system.devices", "holds 1..16 devices"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStrict)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.True(t, strings.HasPrefix(err.Error(), posOf(t, tc.doc, tc.token)), "%v at %s", err, posOf(t, tc.doc, tc.token))
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestSweepOverNodes: a sweep on 2 × trn2.48xlarge over EFA runs 32
// ranks, the automatic choice hierarchical (a node's 16 ranks its group)
// and algo ring the flat ring — one channel per EFA NIC of a node (16), or
// the step's channels —, as fabric sweep --nodes 2 does; the report names
// the nodes and the channels; a collective step takes channels too, and
// system.efa.devices_per_nic sets how many NICs, so channels, a node has.
func TestSweepOverNodes(t *testing.T) {
	if raceEnabled {
		t.Skip("a 32-device system")
	}
	doc := "name: x\nsystem: {name: trn2-48xl, nodes: 2, reset: false, boot: false, buffer_bytes: 4M}\nsteps:\n" +
		"  - sweep: {op: all_reduce, min: 64K, max: 64K}\n  - sweep: {op: all_reduce, algo: ring, min: 64K, max: 64K}\n" +
		"  - sweep: {op: all_reduce, algo: ring, min: 64K, max: 64K, channels: 4}\n" +
		"  - collective: {op: all_reduce, algo: hier, size: 64K}\n  - collective: {op: all_reduce, algo: ring, size: 64K, channels: 2}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	sum, err := p.Run(Options{OutDir: t.TempDir()})
	require.NoError(t, err)
	assert.Equal(t, 32, sum.Devices)
	require.Len(t, sum.Sweeps, 3)
	for i, want := range []struct {
		algo     string
		channels any
	}{{"hier", nil}, {"ring", 16}, {"ring", 4}} {
		rep := sum.Sweeps[i]
		assert.Equal(t, 32, rep.Ranks)
		assert.Equal(t, 2, rep.Extra["nodes"])
		require.Len(t, rep.Rows, 1)
		assert.Equal(t, want.algo, rep.Rows[0].Algorithm)
		assert.Equal(t, want.channels, rep.Extra["channels"], "sweep %d", i)
	}
	assert.Equal(t, 16, p.sys.options(enc.Options{}).Channels)
	pairs, err := Parse("x.yaml", []byte(strings.Replace(doc, "nodes: 2,", "nodes: 2, efa: {devices_per_nic: 2},", 1)))
	require.NoError(t, err)
	assert.Equal(t, 8, pairs.sys.options(enc.Options{}).Channels, "8 NICs of 2 devices")
}

// TestStepChannelsRefused: a step's channels out of range, on one node,
// for an algorithm other than the ring's, for a permute or an alltoall
// (which run none), or not dividing a node's ranks
// are refused at their position, naming the key.
func TestStepChannelsRefused(t *testing.T) {
	const two = "name: x\nsystem: {name: trn2-48xl, nodes: 2, buffer_bytes: 4M}\nsteps:\n"
	for _, tc := range []struct {
		name, doc, token, want string
	}{
		{"zero", two + "  - sweep: {op: all_reduce, min: 64K, max: 64K, channels: 0}\n", "0}", "sweep.channels: 1..256 rings side by side, not 0"},
		{"too many", two + "  - collective: {op: all_reduce, size: 64K, channels: 257}\n", "257", "collective.channels: 1..256 rings side by side, not 257"},
		{"one node", "name: x\nsystem: {arch: cayman, devices: 16}\nsteps:\n  - collective: {op: all_reduce, size: 64K, channels: 2}\n", "2}", "channels are the flat ring's across nodes, and the system has one node"},
		{"hier", two + "  - sweep: {op: all_reduce, algo: hier, min: 64K, max: 64K, channels: 2}\n", "2}", "algo ring or auto, not hier"},
		{"not dividing", two + "  - collective: {op: all_reduce, algo: ring, size: 64K, channels: 3}\n", "3}", "3 channels do not divide a node's 16 ranks"},
		{"permute", two + "  - collective: {op: permute, size: 64K, channels: 2}\n", "2}", "collective.channels: a permute runs no ring channels"},
		{"alltoall", two + "  - sweep: {op: alltoall, min: 64K, max: 64K, channels: 2}\n", "2}", "sweep.channels: an alltoall runs on mesh"},
		{"text", two + "  - collective: {op: all_reduce, size: 64K, channels: many}\n", "many", "channels"},
		{"auto hier", two + "  - sweep: {op: all_reduce, min: 64K, max: 1M, factor: 4, channels: 2}\n", "2}", "sweep.channels: algo auto runs no flat ring at any size here"},
		{"auto hier collective", two + "  - collective: {op: all_gather, algo: auto, size: 1M, channels: 4}\n", "4}", "collective.channels: algo auto runs no flat ring at any size here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStrict)
			assert.True(t, strings.HasPrefix(err.Error(), posOf(t, tc.doc, tc.token)), "%v at %s", err, posOf(t, tc.doc, tc.token))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestNodesOnRestore: a scenario restoring a snapshot of 2 nodes over EFA
// must agree with its node count and EFA parameters; system.devices is a
// node's.
func TestNodesOnRestore(t *testing.T) {
	spec, err := fabric.LookupSystem("trn2-48xl")
	require.NoError(t, err)
	cfg := spec.Cluster(2)
	cfg.Params.EFA.Spines, cfg.Params.EFA.LeafPorts, cfg.Params.EFA.Network = 3, 16, fabric.FatTree // two leaves of 16 NICs: the spines carry writes
	cfg.TimingOnly, cfg.Ready = true, true
	sys, err := fabric.New(cfg)
	require.NoError(t, err)
	base := &Base{From: "t.snap", System: sys}
	for _, doc := range []string{
		"name: x\n",
		"name: x\nsystem: trn2-48xl\n",
		"name: x\nsystem: {name: trn2-48xl, nodes: 2, devices: 16, efa: {spines: 3, network: fat-tree, leaf_ports: 16}}\n",
		"name: x\nsystem: {arch: trn2, nodes: 2, efa: {bandwidth: 200Gbps}}\n",
	} {
		p, err := ParseWith("x.yaml", []byte(doc), base)
		require.NoError(t, err, doc)
		assert.Equal(t, 32, p.sys.devices, doc)
		assert.Equal(t, 2, p.sys.nodes, doc)
		assert.Equal(t, 3, p.sys.params.EFA.Spines, doc)
	}
	for _, tc := range []struct{ doc, token, want string }{
		{"name: x\nsystem: {nodes: 3}\n", "3", "system.nodes: 3, but the snapshot t.snap holds a system with 2 nodes"},
		{"name: x\nsystem: {nodes: 1}\n", "1", "system.nodes: 1, but the snapshot t.snap holds a system with 2 nodes"},
		{"name: x\nsystem: {devices: 32}\n", "32", "system.devices: 32, but the snapshot t.snap holds a system with 16 devices per node"},
		{"name: x\nsystem: {efa: {spines: 2}}\n", "{spines", "system.efa: network fat-tree, oversubscription 1, bandwidth 25000000000 B/s, NIC latency 6600 ns, leaf_ports 16, spines 2"},
		{"name: x\nsystem: {efa: {spines: 0}}\n", "0}", "system.efa.spines: 0: "},
		{"name: x\nsystem: {efa: {devices_per_nic: 3}}\n", "3}", "system.efa.devices_per_nic: 3: does not divide the 16 devices of a node"},
	} {
		_, err := ParseWith("x.yaml", []byte(tc.doc), base)
		require.Error(t, err, tc.doc)
		assert.True(t, strings.HasPrefix(err.Error(), posOf(t, tc.doc, tc.token)), "%v at %s", err, posOf(t, tc.doc, tc.token))
		assert.Contains(t, err.Error(), tc.want)
	}
	// One node's snapshot refuses nodes and efa keys.
	one, err := fabric.New(fabric.Config{Generation: hwarch.Cayman, Devices: 16, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	for _, tc := range []struct{ doc, want string }{
		{"name: x\nsystem: {nodes: 2}\n", "system.nodes: 2, but the snapshot t.snap holds a system with 1 node (no EFA network)"},
		{"name: x\nsystem: {efa: {spines: 2}}\n", "system.efa.spines: one node has no EFA network"},
	} {
		_, err := ParseWith("x.yaml", []byte(tc.doc), &Base{From: "t.snap", System: one})
		require.Error(t, err, tc.doc)
		assert.Contains(t, err.Error(), tc.want)
	}
	// A name is one node's system.
	doc := "name: x\nsystem: {name: trn1-32xl}\n"
	_, err = ParseWith("x.yaml", []byte(doc), base)
	require.Error(t, err)
	assert.ErrorContains(t, err, "but the snapshot t.snap holds a system with 2 nodes of 16 cayman devices")
}

// TestArchInf2: arch inf2 builds Inf2 devices (PCI id 0x7264), not Trn1's;
// a restore or a name that holds another product refuses it.
func TestArchInf2(t *testing.T) {
	for _, tc := range []struct {
		arch string
		id   uint16
	}{{"inf2", hwarch.DeviceInf2}, {"trn1", hwarch.DeviceTrn1}, {"sunda", 0}} {
		p, err := Parse("x.yaml", []byte("name: x\nsystem: {arch: "+tc.arch+", devices: 2}\n"))
		require.NoError(t, err)
		assert.Equal(t, tc.id, p.sys.deviceID, tc.arch)
		assert.Equal(t, tc.id, p.sys.clusterConfig().DeviceID, tc.arch)
	}
	doc := "name: x\nsystem: {name: trn1-32xl, arch: inf2}\n"
	_, err := Parse("x.yaml", []byte(doc))
	require.Error(t, err)
	assert.ErrorContains(t, err, "system.arch: inf2 contradicts system.name trn1-32xl")
	sys, err := fabric.New(fabric.Config{Generation: hwarch.Sunda, Devices: 2, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	doc = "name: x\nsystem: {arch: inf2}\n"
	_, err = ParseWith("x.yaml", []byte(doc), &Base{From: "t.snap", System: sys})
	require.Error(t, err)
	assert.ErrorContains(t, err, "system.arch: inf2, but the snapshot t.snap holds a system with arch Trn1 (device id 0x7164)")
	inf, err := fabric.New(fabric.Config{Generation: hwarch.Sunda, DeviceID: hwarch.DeviceInf2, Devices: 2, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	p, err := ParseWith("x.yaml", []byte("name: x\n"), &Base{From: "t.snap", System: inf})
	require.NoError(t, err)
	assert.Equal(t, hwarch.DeviceInf2, p.sys.deviceID)
	// trn3 is either Trn3 id: a snapshot of the second agrees with it.
	t3, err := fabric.New(fabric.Config{Generation: hwarch.Mariana, DeviceID: hwarch.DeviceTrn3B, Devices: 2, TimingOnly: true, Ready: true})
	require.NoError(t, err)
	_, err = ParseWith("x.yaml", []byte("name: x\nsystem: {arch: trn3}\n"), &Base{From: "t.snap", System: t3})
	require.NoError(t, err)
	assert.False(t, errors.Is(err, ErrStrict))
}
