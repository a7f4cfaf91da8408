package fabric_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// settingName spells the settings as a test's keys.
func settingName(s fabric.EFASetting) string {
	return [...]string{"nodes", "network", "oversubscription", "bandwidth", "latency", "leaf-ports", "spines", "per-nic", "routing"}[s]
}

// TestEFASettings: Check accepts the settings in range and refuses each
// one out of range, naming it (the *EFASettingError says which, its
// message names it as the caller spells it); Apply sets every override on
// the parameters and the latency through the NIC's share.
func TestEFASettings(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	u := func(v uint64) *uint64 { return &v }
	i := func(v int) *int { return &v }
	nw := func(v fabric.EFANetwork) *fabric.EFANetwork { return &v }
	rt := func(v fabric.EFARouting) *fabric.EFARouting { return &v }
	for _, tc := range []struct {
		name    string
		s       fabric.EFASettings
		setting fabric.EFASetting
		want    string
		is      error
	}{
		{"nodes 0", fabric.EFASettings{Nodes: 0}, fabric.SettingNodes, "nodes 0: ", units.ErrRange},
		{"nodes past the fabric", fabric.EFASettings{Nodes: 1025}, fabric.SettingNodes, "nodes 1025: 1025 nodes of 16 devices are 16400 devices", fabric.ErrParams},
		{"override on one node", fabric.EFASettings{Nodes: 1, Spines: i(2)}, fabric.SettingSpines, "spines: one node has no EFA network; it applies with nodes 2 or more", fabric.ErrParams},
		{"network", fabric.EFASettings{Nodes: 2, Network: nw(7)}, fabric.SettingNetwork, "network 7: not rail", fabric.ErrParams},
		{"routing", fabric.EFASettings{Nodes: 2, Routing: rt(7)}, fabric.SettingRouting, "routing 7: not spray (0), fixed (1) or adaptive (2)", fabric.ErrParams},
		{"ratio below 1", fabric.EFASettings{Nodes: 2, Oversubscription: f(0.5)}, fabric.SettingOversubscription, "oversubscription 0.5: a ratio from 1", units.ErrRange},
		{"ratio NaN", fabric.EFASettings{Nodes: 2, Oversubscription: f(math.NaN())}, fabric.SettingOversubscription, "oversubscription NaN", units.ErrRange},
		{"ratio past", fabric.EFASettings{Nodes: 2, Oversubscription: f(1025)}, fabric.SettingOversubscription, "oversubscription 1025", units.ErrRange},
		{"bandwidth 0", fabric.EFASettings{Nodes: 2, Bandwidth: u(0)}, fabric.SettingBandwidth, "bandwidth 0", units.ErrRange},
		{"bandwidth past", fabric.EFASettings{Nodes: 2, Bandwidth: u(units.MaxBandwidthBps + 1)}, fabric.SettingBandwidth, "bandwidth", units.ErrRange},
		{"latency past", fabric.EFASettings{Nodes: 2, Latency: u(units.MaxTimePS + 1)}, fabric.SettingLatency, "latency", units.ErrRange},
		// A hop of seconds is no network: at most 1 ms (it was 10 s).
		{"latency past 1 ms", fabric.EFASettings{Nodes: 2, Latency: u(fabric.MaxEFALatencyPS + 1)}, fabric.SettingLatency,
			"latency 1000000.001: too long: a minimal message between two nodes takes at most 1000000 ns (1 ms", units.ErrRange},
		{"latency 10 s", fabric.EFASettings{Nodes: 2, Latency: u(units.MaxLatencyPS)}, fabric.SettingLatency, "latency 10000000000: too long", units.ErrRange},
		{"leaf ports 0", fabric.EFASettings{Nodes: 2, LeafPorts: i(0)}, fabric.SettingLeafPorts, "leaf-ports 0", units.ErrRange},
		{"spines past", fabric.EFASettings{Nodes: 2, Spines: i(fabric.MaxSpines + 1)}, fabric.SettingSpines, "spines 257", units.ErrRange},
		{"per NIC 0", fabric.EFASettings{Nodes: 2, DevicesPerNIC: i(0)}, fabric.SettingDevicesPerNIC, "per-nic 0", units.ErrRange},
		{"per NIC not dividing", fabric.EFASettings{Nodes: 2, DevicesPerNIC: i(3)}, fabric.SettingDevicesPerNIC, "per-nic 3: does not divide the 16 devices of a node", fabric.ErrParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Check([]int{16}, settingName)
			require.Error(t, err)
			var se *fabric.EFASettingError
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Equal(t, tc.setting, se.Setting)
			assert.Contains(t, err.Error(), tc.want)
			assert.ErrorIs(t, err, tc.is)
		})
	}
	for _, s := range []fabric.EFASettings{{Nodes: 1}, {Nodes: 2}, {Nodes: 1024}, {Nodes: 2, Latency: u(fabric.MaxEFALatencyPS)},
		{Nodes: 3, Network: nw(fabric.FatTree), Oversubscription: f(1024), Bandwidth: u(units.MaxBandwidthBps), Latency: u(20_000_000),
			LeafPorts: i(fabric.MaxLeafPorts), Spines: i(fabric.MaxSpines), DevicesPerNIC: i(16)}} {
		assert.NoError(t, s.Check([]int{16}, settingName), "%+v", s)
	}

	p := fabric.DefaultParams(hwarch.Cayman)
	s := fabric.EFASettings{Nodes: 3, Network: nw(fabric.FatTree), Oversubscription: f(2), Bandwidth: u(50e9), Latency: u(20_000_000),
		LeafPorts: i(16), Spines: i(1), DevicesPerNIC: i(2)}
	require.NoError(t, s.Apply(&p, []int{16}, settingName))
	want := fabric.DefaultEFA(hwarch.Cayman)
	want.Network, want.Oversubscription, want.NICBandwidth, want.LeafPorts, want.Spines, want.DevicesPerNIC = fabric.FatTree, 2, 50e9, 16, 1, 2
	want.NICLatency = (20_000_000 - 2*want.LeafLatency - p.Switch - p.Endpoint) / 2
	assert.Equal(t, want, p.EFA)
	err := fabric.EFASettings{Nodes: 2, Latency: u(100_000)}.Apply(&p, []int{16}, settingName)
	require.Error(t, err)
	assert.ErrorIs(t, err, fabric.ErrParams)
	assert.Contains(t, err.Error(), "latency 100: below the 1800 ns the rest of the path takes")
}

// TestEFAApplyRefusesSpineLinks: overrides that leave a spine link below
// 1 B/s or above units.MaxBandwidthBps (10^15 B/s, the bound of every
// bandwidth, once 2^50 here) are refused by Apply, blaming the first
// override given that moves it that way, in the caller's terms — not by
// the build, in Go field names.
func TestEFAApplyRefusesSpineLinks(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	u := func(v uint64) *uint64 { return &v }
	i := func(v int) *int { return &v }
	flags := func(s fabric.EFASetting) string {
		return map[fabric.EFASetting]string{fabric.SettingNodes: "--nodes", fabric.SettingOversubscription: "--oversubscription",
			fabric.SettingBandwidth: "--efa-bw", fabric.SettingSpines: "--spines", fabric.SettingLeafPorts: "--leaf-ports"}[s]
	}
	for _, tc := range []struct {
		name string
		s    fabric.EFASettings
		set  fabric.EFASetting
		want string
	}{
		{"oversubscription", fabric.EFASettings{Nodes: 2, Bandwidth: u(1), Oversubscription: f(1000)}, fabric.SettingOversubscription,
			"--oversubscription 1000: with 2 nodes of 16 devices, leaf rail0-leaf's 2 NICs of 1 B/s (--efa-bw) over an oversubscription of 1000 (--oversubscription) and 2 spines (--spines) leave 0.001 B/s per spine link, less than 1 B/s"},
		{"bandwidth", fabric.EFASettings{Nodes: 2, Bandwidth: u(999e12), Spines: i(1)}, fabric.SettingBandwidth,
			"--efa-bw 999000000000000 B/s: with 2 nodes of 16 devices, leaf rail0-leaf's 2 NICs of 999000000000000 B/s (--efa-bw) over an oversubscription of 1 (--oversubscription) and 1 spines (--spines) leave 1.998e+15 B/s per spine link, more than 1000000000000000 B/s (1000TB/s), the most a link has"},
		{"spines", fabric.EFASettings{Nodes: 2, Bandwidth: u(1), Spines: i(4)}, fabric.SettingSpines, "leave 0.5 B/s per spine link, less than 1 B/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fabric.DefaultParams(hwarch.Cayman)
			err := tc.s.Apply(&p, []int{16}, flags)
			var se *fabric.EFASettingError
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Equal(t, tc.set, se.Setting)
			assert.ErrorIs(t, err, fabric.ErrParams)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "EFA.")
		})
	}
	p := fabric.DefaultParams(hwarch.Cayman)
	require.NoError(t, fabric.EFASettings{Nodes: 2, Bandwidth: u(2), Oversubscription: f(2)}.Apply(&p, []int{16}, flags), "1 B/s per spine link")
}

// TestEFAApplyRefusesNodesOffNICs: Apply refuses nodes whose devices the
// generation's devices per NIC (2 on Trn1) does not divide, naming the
// node count and the setting that changes it, with every count of a list
// checked; BuildNodes refused them after, as "EFA.DevicesPerNIC 2 does not
// divide the 3 devices of a node", naming neither. A devices per NIC
// given is Check's to refuse, and one that divides, or one node, passes.
func TestEFAApplyRefusesNodesOffNICs(t *testing.T) {
	i := func(v int) *int { return &v }
	flags := func(s fabric.EFASetting) string {
		return map[fabric.EFASetting]string{fabric.SettingNodes: "--nodes", fabric.SettingDevicesPerNIC: "--devices-per-nic"}[s]
	}
	for _, tc := range []struct {
		name    string
		g       hwarch.Generation
		s       fabric.EFASettings
		perNode []int
		want    string // "" accepted
	}{
		{"trn1 node of 3", hwarch.Sunda, fabric.EFASettings{Nodes: 2}, []int{3},
			"--nodes 2: a node of 3 devices does not split into NICs of 2 devices, the generation's (--devices-per-nic sets another: one that divides 3)"},
		{"trn1 node of 1", hwarch.Sunda, fabric.EFASettings{Nodes: 4}, []int{1}, "--nodes 4: a node of 1 device does not split into NICs of 2 devices"},
		{"trn1 list 4 then 3", hwarch.Sunda, fabric.EFASettings{Nodes: 2}, []int{4, 3}, "a node of 3 devices"},
		{"trn1 node of 4", hwarch.Sunda, fabric.EFASettings{Nodes: 2}, []int{4}, ""},
		{"trn1 one per NIC given", hwarch.Sunda, fabric.EFASettings{Nodes: 2, DevicesPerNIC: i(1)}, []int{3}, ""},
		{"trn1 one node", hwarch.Sunda, fabric.EFASettings{Nodes: 1}, []int{3}, ""},
		{"trn2 node of 3", hwarch.Cayman, fabric.EFASettings{Nodes: 2}, []int{3}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fabric.DefaultParams(tc.g)
			err := tc.s.Apply(&p, tc.perNode, flags)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var se *fabric.EFASettingError
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Equal(t, fabric.SettingNodes, se.Setting)
			assert.ErrorIs(t, err, fabric.ErrParams)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "EFA.")
		})
	}
}

// TestEFACountMax: each integer setting's EFACountMax is the largest value
// Check accepts for it (one past it is refused, naming the setting), and
// the other settings have none.
func TestEFACountMax(t *testing.T) {
	i := func(v int) *int { return &v }
	for _, tc := range []struct {
		set  fabric.EFASetting
		with func(n int) fabric.EFASettings
	}{
		{fabric.SettingNodes, func(n int) fabric.EFASettings { return fabric.EFASettings{Nodes: n} }},
		{fabric.SettingLeafPorts, func(n int) fabric.EFASettings { return fabric.EFASettings{Nodes: 2, LeafPorts: i(n)} }},
		{fabric.SettingSpines, func(n int) fabric.EFASettings { return fabric.EFASettings{Nodes: 2, Spines: i(n)} }},
		{fabric.SettingDevicesPerNIC, func(n int) fabric.EFASettings { return fabric.EFASettings{Nodes: 2, DevicesPerNIC: i(n)} }},
	} {
		top := int(fabric.EFACountMax(tc.set))
		require.Positive(t, top, settingName(tc.set))
		perNode := []int{1} // one device a node: any node count up to the fabric's
		if tc.set == fabric.SettingDevicesPerNIC {
			// A NIC of the fabric's every device: in range, though two
			// such nodes are past the fabric (a refusal of --nodes).
			err := tc.with(top).Check([]int{top}, settingName)
			var se *fabric.EFASettingError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, fabric.SettingNodes, se.Setting)
			perNode = []int{8}
		} else {
			assert.NoError(t, tc.with(top).Check(perNode, settingName), "%s %d", settingName(tc.set), top)
		}
		err := tc.with(top+1).Check(perNode, settingName)
		var se *fabric.EFASettingError
		require.ErrorAs(t, err, &se, "%s %d", settingName(tc.set), top+1)
		assert.Equal(t, tc.set, se.Setting)
		assert.ErrorIs(t, err, units.ErrRange)
	}
	for _, s := range []fabric.EFASetting{fabric.SettingNetwork, fabric.SettingOversubscription, fabric.SettingBandwidth, fabric.SettingLatency} {
		assert.Zero(t, fabric.EFACountMax(s), settingName(s))
	}
}
