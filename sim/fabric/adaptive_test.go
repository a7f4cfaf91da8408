package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reserveAt reserves and posts a write of n bytes at addr from src to dst
// on queue q starting at start, and returns the spine its path crosses
// (spineOn) and when it lands.
func reserveAt(t *testing.T, s *System, src, dst, n, q int, addr, start uint64) (spine int, lands uint64) {
	t.Helper()
	path, lands := reservePath(t, s, src, dst, n, q, addr, start)
	return spineOn(s, path), lands
}

// TestAdaptiveTakesLeastBookedSpine: under RouteAdaptive a write goes up
// to the spine whose link from its leaf is booked until the earliest
// time, not to the one its NIC's turn points at, and lands sooner than
// the same write sprayed; the NIC's turn moves past the spine taken. Over
// idle spines it takes them in its NIC's turn, as RouteSpray does, and it
// never takes a spine with a link of the write's path down, however idle.
func TestAdaptiveTakesLeastBookedSpine(t *testing.T) {
	const n, start = 64 << 10, 1000 * ns
	// busy has device 1's NIC (port 1 of leaf 0) put three writes on
	// spine 1's uplink from leaf 0, then points device 0's NIC's turn at
	// spine 1.
	busy := func(t *testing.T, r EFARouting) *System {
		s, err := New(sprayConfig(2, r))
		require.NoError(t, err)
		adaptive := s.adaptive
		s.adaptive = false // sprayed, the turn forced: all three on spine 1
		for q := range 3 {
			s.st.SprayNext = s.topo.Scale.sprayStart()
			spine, _ := reserveAt(t, s, 1, 3, n, q, 0x100000+uint64(q*n), start)
			require.Equal(t, 1, spine)
		}
		s.adaptive = adaptive
		s.st.SprayNext[0] = 1
		return s
	}
	adaptive, sprayed := busy(t, RouteAdaptive), busy(t, RouteSpray)
	require.Greater(t, adaptive.st.Links[adaptive.topo.Scale.leafUp[0][1]].bookedUntil(), uint64(start))
	got, gotLands := reserveAt(t, adaptive, 0, 2, n, 0, 0x100000, start)
	want, wantLands := reserveAt(t, sprayed, 0, 2, n, 0, 0x100000, start)
	assert.Equal(t, 0, got, "adaptive: the idle spine")
	assert.Equal(t, 1, want, "sprayed: the NIC's turn")
	assert.Less(t, gotLands, wantLands, "adaptive lands sooner")
	assert.Equal(t, uint32(1), adaptive.st.SprayNext[0], "the turn moves past the spine taken")

	for _, spines := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("idle/spines=%d", spines), func(t *testing.T) {
			a, err := New(sprayConfig(spines, RouteAdaptive))
			require.NoError(t, err)
			sp, err := New(sprayConfig(spines, RouteSpray))
			require.NoError(t, err)
			for q := range spines {
				got, _ := reserveAt(t, a, 0, 2, n, q, 0x100000+uint64(q*n), start)
				want, _ := reserveAt(t, sp, 0, 2, n, q, 0x100000+uint64(q*n), start)
				assert.Equal(t, q, got, "write %d", q)
				assert.Equal(t, want, got, "write %d: as sprayed", q)
			}
		})
	}

	t.Run("down", func(t *testing.T) {
		s := busy(t, RouteAdaptive)
		so := s.topo.Scale
		require.NoError(t, s.SetLinkDown(int(so.spineDown[0][1]), true))
		got, _ := reserveAt(t, s, 0, 2, n, 0, 0x100000, start)
		assert.Equal(t, 1, got, "spine 0's link down to leaf 1: the busy spine")
		require.NoError(t, s.SetLinkDown(int(so.spineDown[0][1]), false))
		require.NoError(t, s.SetLinkDown(int(so.leafUp[0][0]), true))
		got, _ = reserveAt(t, s, 0, 2, n, 1, 0x200000, start)
		assert.Equal(t, 1, got, "spine 0's link up from leaf 0 down: the busy spine")
	})
}

// TestAdaptiveInFreeModelSprays: the contention-free model books no queue
// on a spine link, so under RouteAdaptive every write takes the spine
// RouteSpray gives it, and lands when it does.
func TestAdaptiveInFreeModelSprays(t *testing.T) {
	const n = 64 << 10
	free := func(r EFARouting) *System {
		cfg := sprayConfig(3, r)
		p := *cfg.Params
		p.Model = Free
		cfg.Params = &p
		s, err := New(cfg)
		require.NoError(t, err)
		return s
	}
	a, sp := free(RouteAdaptive), free(RouteSpray)
	for k := range 12 {
		src, q := k%2, k/2
		gotSpine, gotLands := reserveAt(t, a, src, 2+src, n, q, 0x100000, 1000*ns)
		wantSpine, wantLands := reserveAt(t, sp, src, 2+src, n, q, 0x100000, 1000*ns)
		assert.Equal(t, wantSpine, gotSpine, "write %d", k)
		assert.Equal(t, wantLands, gotLands, "write %d", k)
	}
}

// TestAdaptiveFlows: two flows from the NICs of one leaf to the other's,
// over spine links of half a NIC's bandwidth each (2 spines) or a
// quarter (4). With 2 spines every rule gives each flow a spine link of
// its own all along (fixed routing by the destinations' ports, the
// turns in step) and the same time. With 4, sprayed, the NICs' turns
// meet on one spine link now and then; adaptive routing sends each write
// to the least booked, and the flows finish sooner; fixed routing puts
// each flow on one spine link, a quarter of its NIC: about twice as long.
func TestAdaptiveFlows(t *testing.T) {
	const writes, size = 128, 64 << 10
	for _, c := range []struct {
		spines int
		gains  bool // adaptive faster than sprayed
	}{{2, false}, {4, true}} {
		t.Run(fmt.Sprintf("spines=%d", c.spines), func(t *testing.T) {
			run := func(r EFARouting) uint64 {
				s, err := New(sprayConfig(c.spines, r))
				require.NoError(t, err)
				d := flows(t, s, [][2]int{{0, 2}, {1, 3}}, writes, size)
				return max(d[0], d[1])
			}
			a, sp, fixed := run(RouteAdaptive), run(RouteSpray), run(RouteFixed)
			t.Logf("adaptive %d, spray %d, fixed %d ps", a, sp, fixed)
			if !c.gains {
				assert.Equal(t, sp, a, "adaptive as sprayed")
				assert.Equal(t, fixed, a, "adaptive as fixed")
				return
			}
			assert.Less(t, a, sp, "adaptive faster than sprayed")
			assert.InEpsilon(t, 2, float64(fixed)/float64(a), 0.05, "fixed / adaptive")
		})
	}
}
