package fabric

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	sim "github.com/neuronsim/neuronsim/sim/simkernel"
)

// sprayConfig is a system of 2 nodes of 2 Trn2 devices (a ring of 2), one
// NIC each, on a fat tree of leaves of 2 ports — node 0's NICs on leaf0,
// node 1's on leaf1 — joined by spines spines, under routing.
func sprayConfig(spines int, routing EFARouting) Config {
	p := efaParams(hwarch.Cayman, func(e *EFAParams) {
		e.Network, e.LeafPorts, e.Spines, e.Routing = FatTree, 2, spines, routing
	})
	return Config{Generation: hwarch.Cayman, Devices: 4, Nodes: 2, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true}
}

// reservedPath reserves a write of n bytes at addr from src to dst on
// queue q, starting at 1 µs, and returns the path its reservation took
// (posting it).
func reservedPath(t *testing.T, s *System, src, dst, n, q int, addr uint64) []int {
	t.Helper()
	path, _ := reservePath(t, s, src, dst, n, q, addr, 1000*ns)
	return path
}

// reservePath reserves a write of n bytes at addr from src to dst on
// queue q starting at start, posts it, and returns the path its
// reservation took and when it lands.
func reservePath(t *testing.T, s *System, src, dst, n, q int, addr, start uint64) ([]int, uint64) {
	t.Helper()
	a, err := hwarch.FabricAddress(dst, addr)
	require.NoError(t, err)
	_, lands, err := s.ports[src].Reserve(0, q, a, n, sim.Time(start), sim.Time(start))
	require.NoError(t, err)
	path := append([]int(nil), s.st.Reservations[src][q].Path...)
	require.NoError(t, s.ports[src].Post(0, q, a, n, nil, udma.Reduce{}, lands))
	return path, uint64(lands)
}

// spineOn returns the spine a path crosses, -1 if none.
func spineOn(s *System, path []int) int {
	so := s.topo.Scale
	if _, _, spine, _, _, ok := so.spineCrossing(s.topo, path); ok {
		return spine
	}
	return -1
}

// TestSprayTakesSpinesInTurn: under RouteSpray the writes a NIC sends
// across the spines take them in turn, from its port on its leaf mod the
// spines (spine 0 for device 0's NIC), whatever their flow
// — each on the topology's path with its two spine links moved — and each
// NIC keeps its own turn; under RouteFixed every write takes the
// topology's path (SpineOf's spine); and a write whose spine has a link
// down takes the next spine whose links are up.
func TestSprayTakesSpinesInTurn(t *testing.T) {
	const n = 64 << 10
	for _, spines := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("spines=%d", spines), func(t *testing.T) {
			s, err := New(sprayConfig(spines, RouteSpray))
			require.NoError(t, err)
			so := s.topo.Scale
			base, err := s.topo.Path(0, 2)
			require.NoError(t, err)
			i, _, _, _, _, ok := so.spineCrossing(s.topo, base)
			require.True(t, ok)
			for k := range 2 * spines {
				// Device 0's NIC writes to devices 2 and 3 by turns, one
				// flow each: the spines go round across both.
				dst := 2 + k%2
				path := reservedPath(t, s, 0, dst, n, k%2, 0x100000+uint64(k/2*n))
				require.Equal(t, k%spines, spineOn(s, path), "write %d", k)
				want, err := s.topo.Path(0, dst)
				require.NoError(t, err)
				require.Len(t, path, len(want))
				for j := range path {
					if j != i && j != i+1 {
						assert.Equal(t, want[j], path[j], "write %d: link %d of its path", k, j)
					}
				}
			}
			// Device 1's NIC keeps its own turn, which starts at its port on
			// its leaf (1) mod the spines: the NICs of a leaf start out of
			// step.
			assert.Equal(t, 1, spineOn(s, reservedPath(t, s, 1, 3, n, 0, 0x100000)))
			assert.Equal(t, 2%spines, spineOn(s, reservedPath(t, s, 1, 3, n, 0, 0x100000)))

			fixed, err := New(sprayConfig(spines, RouteFixed))
			require.NoError(t, err)
			for k := range spines {
				assert.Equal(t, base, reservedPath(t, fixed, 0, 2, n, 0, 0x100000+uint64(k*n)), "fixed routing, write %d", k)
			}

			// Device 0's NIC's next spine is 0 again: its leaf → spine link
			// down, the write takes spine 1, and the one after it spine 2,
			// or with two spines spine 1 again.
			require.Equal(t, uint32(0), s.st.SprayNext[0])
			require.NoError(t, s.SetLinkDown(int(so.leafUp[0][0]), true))
			assert.Equal(t, 1, spineOn(s, reservedPath(t, s, 0, 2, n, 0, 0x100000)))
			after := 2
			if spines == 2 {
				after = 1
			}
			assert.Equal(t, after, spineOn(s, reservedPath(t, s, 0, 2, n, 0, 0x100000)))
			// Its spine → leaf link down instead: the same.
			require.NoError(t, s.SetLinkDown(int(so.leafUp[0][0]), false))
			s.st.SprayNext[0] = 0
			require.NoError(t, s.SetLinkDown(int(so.spineDown[0][1]), true))
			assert.Equal(t, 1, spineOn(s, reservedPath(t, s, 0, 2, n, 0, 0x100000)))
		})
	}
}

// TestSprayAllSpinesDown: with every spine's uplink from a leaf down a
// write across leaves is refused naming a down link (ErrLinkDown), as
// under fixed routing, and its NIC's turn stays where it was.
func TestSprayAllSpinesDown(t *testing.T) {
	for _, r := range []EFARouting{RouteSpray, RouteAdaptive} {
		t.Run(r.String(), func(t *testing.T) {
			s, err := New(sprayConfig(2, r))
			require.NoError(t, err)
			reservedPath(t, s, 0, 2, 64<<10, 1, 0x200000) // device 0's NIC: spine 0, next 1
			turns := slices.Clone(s.st.SprayNext)
			for j := range 2 {
				require.NoError(t, s.SetLinkDown(int(s.topo.Scale.leafUp[0][j]), true))
			}
			a, err := hwarch.FabricAddress(2, 0x100000)
			require.NoError(t, err)
			_, _, err = s.ports[0].Reserve(0, 0, a, 64<<10, sim.Time(1000*ns), sim.Time(1000*ns))
			require.ErrorIs(t, err, ErrLinkDown)
			assert.Equal(t, turns, s.st.SprayNext, "a refused write takes no turn")
		})
	}
}

// TestRefusedSprayChangesNothing: a write refused for a link down
// elsewhere on its path (its NIC's link to its device) takes no turn of
// its NIC, though a spine was up for it, and leaves alone the path of a
// write its slot holds reserved and not yet posted, which goes on to land
// (until this was fixed, the refused write's path was built in the
// slot's buffer first: the pending write's path became the refused
// one's, and it was lost when a link on the way to the other device went
// down; FuzzSnapshotContinues found it, a restored system not sharing
// the buffer).
func TestRefusedSprayChangesNothing(t *testing.T) {
	for _, r := range []EFARouting{RouteSpray, RouteAdaptive} {
		t.Run(r.String(), func(t *testing.T) {
			cfg := sprayConfig(2, r)
			cfg.TimingOnly = false
			s, err := New(cfg)
			require.NoError(t, err)
			so := s.topo.Scale
			reservedPath(t, s, 0, 2, 4096, 1, 0x200000) // device 0's NIC: spine 0, next 1
			// Queue 0 reserves a write to device 2, sprayed to spine 1
			// (off the topology's path, spine 0), and does not post it.
			a2, err := hwarch.FabricAddress(2, 0x100000)
			require.NoError(t, err)
			_, lands, err := s.ports[0].Reserve(0, 0, a2, 4096, sim.Time(1000*ns), sim.Time(1000*ns))
			require.NoError(t, err)
			pending := slices.Clone(s.st.Reservations[0][0].Path)
			require.Equal(t, 1, spineOn(s, pending))
			turns := slices.Clone(s.st.SprayNext)
			// Device 0's link to its NIC down: a write to device 3 on the
			// same slot is refused.
			nicLink := -1
			for _, id := range pending {
				if s.topo.Links[id].To == so.nic0 {
					nicLink = id
				}
			}
			require.GreaterOrEqual(t, nicLink, 0)
			require.NoError(t, s.SetLinkDown(nicLink, true))
			a3, err := hwarch.FabricAddress(3, 0x100000)
			require.NoError(t, err)
			_, _, err = s.ports[0].Reserve(0, 0, a3, 4096, sim.Time(1000*ns), sim.Time(1000*ns))
			require.ErrorIs(t, err, ErrLinkDown)
			assert.Equal(t, turns, s.st.SprayNext, "a refused write takes no turn")
			assert.Equal(t, pending, s.st.Reservations[0][0].Path, "the pending write's path")
			require.NoError(t, s.SetLinkDown(nicLink, false))
			require.NoError(t, s.ports[0].Post(0, 0, a2, 4096, make([]byte, 4096), udma.Reduce{}, lands))
			// A link on the way to device 3 alone goes down: the write
			// to device 2 lands.
			path3, err := s.topo.Path(0, 3)
			require.NoError(t, err)
			last := path3[len(path3)-1]
			require.NotContains(t, pending, last)
			require.NoError(t, s.SetLinkDown(last, true))
			s.Advance(sim.Millisecond)
			assert.Equal(t, uint64(0), s.Stats().Dropped, s.Stats().LastError)
		})
	}
}

// TestSprayFlowHasWholeUplink: in the aware model one flow across leaves
// of 2 NICs (uplinks of 2 NICs' bandwidth split over the spines) takes as
// long with 4 spines as with one under RouteSpray — its writes spread
// over every spine, each spine link carrying a quarter of them at a
// quarter of the bandwidth — but twice as long under RouteFixed, which
// puts it on one spine link of half its NIC's bandwidth.
func TestSprayFlowHasWholeUplink(t *testing.T) {
	const writes, size = 256, 64 << 10 // 16 MiB
	run := func(spines int, r EFARouting) float64 {
		s, err := New(sprayConfig(spines, r))
		require.NoError(t, err)
		return float64(flows(t, s, [][2]int{{0, 2}}, writes, size)[0])
	}
	one := run(1, RouteSpray)
	assert.InEpsilon(t, one, run(1, RouteFixed), 1e-12, "one spine: nothing to choose")
	// Sprayed, the flow's last write crosses a spine link of half its NIC's
	// bandwidth, store and forward: 1.2 % more than one spine's time.
	assert.InEpsilon(t, 1, run(4, RouteSpray)/one, 0.02, "sprayed over 4 spines / one spine")
	assert.InEpsilon(t, 2, run(4, RouteFixed)/one, 0.02, "fixed on one of 4 spines / one spine")
}

// TestSprayedDeliveryKeepsItsPath: a functional write sprayed to another
// spine than the topology's path takes holds its own copy of its path
// while in flight, so that the slot's next write, sprayed elsewhere, does
// not change where the first one went (its loss when a link of its own
// path goes down). Three spines and three writes on one slot: at least
// two of them sprayed off the topology's path.
func TestSprayedDeliveryKeepsItsPath(t *testing.T) {
	cfg := sprayConfig(3, RouteSpray)
	cfg.TimingOnly = false
	s, err := New(cfg)
	require.NoError(t, err)
	const n = 64 << 10
	var sent [][]int
	spines := map[int]bool{}
	for k := range 3 {
		a, err := hwarch.FabricAddress(2, 0x100000+uint64(k*n))
		require.NoError(t, err)
		_, lands, err := s.ports[0].Reserve(0, 0, a, n, sim.Time(1000*ns), sim.Time(1000*ns))
		require.NoError(t, err)
		path := append([]int(nil), s.st.Reservations[0][0].Path...)
		require.NoError(t, s.ports[0].Post(0, 0, a, n, make([]byte, n), udma.Reduce{}, lands))
		sent = append(sent, path)
		spines[spineOn(s, path)] = true
	}
	require.Len(t, spines, 3)
	var got [][]int
	for _, d := range s.st.InFlight {
		if d.Used {
			got = append(got, d.Path)
		}
	}
	assert.ElementsMatch(t, sent, got)
}

// TestSnapshotKeepsSprayTurns: the NICs' next spines (state.SprayNext)
// survive a save and a load, sprayed or adaptive (whose choice reads the
// restored links' bookings too): the restored system's next write crosses
// the spine the original's does, lands when it does, and the snapshot does
// not share the NICs' turns with the live system.
func TestSnapshotKeepsSprayTurns(t *testing.T) {
	const n = 64 << 10
	for _, r := range []EFARouting{RouteSpray, RouteAdaptive} {
		t.Run(r.String(), func(t *testing.T) {
			orig, err := New(sprayConfig(3, r))
			require.NoError(t, err)
			reservedPath(t, orig, 0, 2, n, 0, 0x100000) // device 0's NIC: spine 0, next 1
			restored, snap := saveAndLoad(t, orig)
			assert.Equal(t, orig.st.SprayNext, restored.st.SprayNext)
			assert.Equal(t, r, restored.p.EFA.Routing)
			a, err := hwarch.FabricAddress(2, 0x100000+n)
			require.NoError(t, err)
			var lands [2]sim.Time
			for i, s := range []*System{orig, restored} {
				_, lands[i], err = s.ports[0].Reserve(0, 0, a, n, s.Now(), s.Now())
				require.NoError(t, err)
				assert.Equal(t, 1, spineOn(s, s.st.Reservations[0][0].Path))
			}
			assert.Equal(t, lands[0], lands[1])
			assert.NotEqual(t, snap.SprayNext, orig.st.SprayNext, "the snapshot's turns are its own")
		})
	}
}

// TestSnapshotRefusesBadSprayTurns: a snapshot whose NICs' next spines do
// not fit its system is refused, naming the field.
func TestSnapshotRefusesBadSprayTurns(t *testing.T) {
	sprayed := func(t *testing.T, r EFARouting) *Snapshot {
		s, err := New(sprayConfig(3, r))
		require.NoError(t, err)
		reservedPath(t, s, 0, 2, 64<<10, 0, 0x100000)
		return s.Snapshot()
	}
	for _, c := range []struct {
		name    string
		routing EFARouting
		mutate  func(*Snapshot)
		want    string
	}{
		{"a spine past the last", RouteSpray, func(s *Snapshot) { s.SprayNext[1] = 3 }, "SprayNext[1]: spine 3 of 3"},
		{"a NIC too many", RouteSpray, func(s *Snapshot) { s.SprayNext = append(s.SprayNext, 0) }, "SprayNext: 5 NICs' next spines in a network of 4 NICs"},
		{"a spine past the last, adaptive", RouteAdaptive, func(s *Snapshot) { s.SprayNext[0] = 7 }, "SprayNext[0]: spine 7 of 3"},
		{"turns under fixed routing", RouteFixed, func(s *Snapshot) { s.SprayNext = make([]uint32, 4) }, "SprayNext: 4 NICs' next spines in a system whose writes are not sprayed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := sprayed(t, c.routing)
			c.mutate(snap)
			s, err := Restore(snap)
			require.ErrorIs(t, err, ErrSnapshot)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
