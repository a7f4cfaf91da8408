package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/bar"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// parityLink is the link of the peer's α-β unit tests: B = 50 GB/s with
// 1 GB = 2^30 B, α = 500 ns.
var parityLink = LinkParams{Bandwidth: 50 << 30, Latency: 500 * ns}

// parityParams are the generation's parameters in the parity mode with
// every link parityLink and model m.
func parityParams(g hwarch.Generation, m Model) Params {
	p := DefaultParams(g).WithIdealEndpoints()
	p.Model = m
	p.XY, p.Z, p.Ring, p.InServer, p.InterServer, p.Link = parityLink, parityLink, parityLink, parityLink, parityLink, parityLink
	return p
}

// landNS sends one write of n bytes from device src to device dst through
// the fabric of s, starting at 1 µs with the DMA engine's bytes all sent at
// once (what an ideal engine hands the fabric: dma.Timing.Ideal completes
// a transfer when it starts), posts it, and returns the time from start to
// landing in ns, truncated.
func landNS(t *testing.T, s *System, src, dst, n int) uint64 {
	t.Helper()
	addr, err := hwarch.FabricAddress(dst, 0x10000)
	require.NoError(t, err)
	const start = 1000 * ns
	_, lands, err := s.ports[src].Reserve(0, 15, addr, n, start, start)
	require.NoError(t, err)
	require.NoError(t, s.ports[src].Post(0, 15, addr, n, nil, udma.Reduce{}, lands))
	return (uint64(lands) - start) / ns
}

// TestParityGolden: in the parity mode a 1 MiB write on 16 NPUs with
// B = 50 GiB/s and α = 500 ns lands exactly when the α-β backends of
// collective research say (their unit tests' golden values): contention
// free h·α + m/B — ring 1→4 (3 hops) 21,031 ns, fully connected 20,031 ns,
// switch 20,531 ns — and contention aware h·(α + m/B), store and forward of
// the whole message per link — ring 60,093 ns, switch 40,062 ns (and fully
// connected, one link, 20,031 ns like the free model).
func TestParityGolden(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		kind     Kind
		gen      hwarch.Generation
		dst      int
		free, aw uint64
	}{
		{KindRing, hwarch.Mariana, 4, 21_031, 60_093},
		{KindFullyConnected, hwarch.Mariana, 4, 20_031, 20_031},
		{KindStar, hwarch.Mariana, 4, 20_531, 40_062},
		{KindSwitch, hwarch.Mariana, 4, 20_531, 40_062}, // 16 devices: one server, its in-server switch
	} {
		for _, m := range []Model{Free, Aware} {
			t.Run(fmt.Sprintf("%s-%s", c.kind, m), func(t *testing.T) {
				p := parityParams(c.gen, m)
				s, err := New(Config{Generation: c.gen, Devices: 16, Kind: c.kind, Params: &p, TimingOnly: true, Ready: true})
				require.NoError(t, err)
				want := c.free
				if m == Aware {
					want = c.aw
				}
				assert.Equal(t, want, landNS(t, s, 1, 4, mib))
				assert.Equal(t, dma.Timing{Ideal: true}, s.cfg.DMA, "the parity mode's engines take no time")
				tm, _ := s.Device(1).DMA()
				assert.True(t, tm.Ideal, "every device runs the ideal DMA timing")
			})
		}
	}
}

// TestParityNeedsOneChunk: what the mode removes matters — with real
// endpoints and every delay that is not α set to 0 by hand, the aware
// model still cuts the write into 4 KiB chunks and pipelines them over the
// ring's 3 links, landing near 3α + m/B, not at the store-and-forward
// 3·(α + m/B) of the α-β backends.
func TestParityNeedsOneChunk(t *testing.T) {
	p := parityParams(hwarch.Mariana, Aware)
	p.Endpoints = EndpointsReal
	s, err := New(Config{Generation: hwarch.Mariana, Devices: 16, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true,
		DMA: dma.Timing{Ideal: true}})
	require.NoError(t, err)
	got := landNS(t, s, 1, 4, 1<<20)
	assert.Less(t, got, uint64(60_093))
	assert.Equal(t, uint64(21_031+2*76), got, "3α + m/B + two 4 KiB chunks' serialisation (76.29 ns each)")
}

// TestParityRefusals: the parity mode has no endpoint or switch delay and
// no DMA timing of its own; its words parse.
func TestParityRefusals(t *testing.T) {
	p := DefaultParams(hwarch.Mariana).WithIdealEndpoints()
	require.NoError(t, p.Validate(KindStar))
	for _, mut := range []func(*Params){func(p *Params) { p.Endpoint = 1 }, func(p *Params) { p.Switch = 300 * ns }, func(p *Params) { p.Endpoints = 7 }} {
		q := p
		mut(&q)
		_, err := New(Config{Generation: hwarch.Mariana, Devices: 4, Kind: KindStar, Params: &q})
		require.ErrorIs(t, err, ErrParams)
	}
	_, err := New(Config{Generation: hwarch.Mariana, Devices: 4, Kind: KindStar, Params: &p, DMA: dma.DefaultTiming(hwarch.Mariana)})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "ideal endpoints with a DMA timing of its own")
	for _, c := range []struct {
		in   string
		want Endpoints
	}{{"real", EndpointsReal}, {"ideal", EndpointsIdeal}} {
		var e Endpoints
		require.NoError(t, e.Set(c.in))
		assert.Equal(t, c.want, e)
		assert.Equal(t, c.in, e.String())
	}
	assert.Equal(t, "endpoints(7)", Endpoints(7).String())
	_, err = ParseEndpoints("perfect")
	require.ErrorIs(t, err, ErrUnknownEndpoints)
	assert.Contains(t, err.Error(), "real|ideal")
}

// TestParityMessageOfManyWrites: a DMA descriptor moves at most 64 KiB, so
// a message is several writes; in the parity mode the aware model stores
// and forwards the whole message — its last write lands h·(α + M/B) after
// it started, as one write of M bytes would — while a write that does not
// continue it (another address, a gap in time) starts a message of its
// own. The free model needs nothing: the writes follow each other on the
// first link and the last lands h·α + M/B after the start.
func TestParityMessageOfManyWrites(t *testing.T) {
	const piece, pieces = 64 << 10, 16 // a 1 MiB message
	for _, m := range []Model{Aware, Free} {
		t.Run(m.String(), func(t *testing.T) {
			p := parityParams(hwarch.Mariana, m)
			s, err := New(Config{Generation: hwarch.Mariana, Devices: 16, Kind: KindRing, Params: &p, TimingOnly: true, Ready: true})
			require.NoError(t, err)
			const start = 1000 * ns
			at := uint64(start)
			var lands uint64
			for j := range pieces {
				addr, err := hwarch.FabricAddress(4, 0x10000+uint64(j*piece))
				require.NoError(t, err)
				in, l, err := s.ports[1].Reserve(0, 15, addr, piece, sim.Time(at), sim.Time(at))
				require.NoError(t, err)
				require.NoError(t, s.ports[1].Post(0, 15, addr, piece, nil, udma.Reduce{}, l))
				at, lands = uint64(in), uint64(l) // an ideal engine's next descriptor starts when this one has left
			}
			want := uint64(60_093) // as the one 1 MiB write of TestParityGolden
			if m == Free {
				want = 21_031
			}
			assert.Equal(t, want, (lands-start)/ns)
			// A write to elsewhere, once the links are idle again, is a
			// message of its own.
			addr, err := hwarch.FabricAddress(4, 0x900000)
			require.NoError(t, err)
			at = lands
			_, l, err := s.ports[1].Reserve(0, 15, addr, piece, sim.Time(at), sim.Time(at))
			require.NoError(t, err)
			one := 3*500*ns + 3*dma.TransferTime(piece, 50<<30)
			if m == Free {
				one = 3*500*ns + dma.TransferTime(piece, 50<<30)
			}
			assert.Equal(t, at+one, uint64(l))
		})
	}
}

// TestParityHostAccesses: in the parity mode every device's BAR accesses
// cost IdealMMIO (1 ns), so the host learns a collective is done to the ns
// rather than to one 800 ns read; with real endpoints they keep the
// generation's default.
func TestParityHostAccesses(t *testing.T) {
	g := hwarch.Mariana
	for _, c := range []struct {
		name string
		p    Params
		want hwarch.MMIOLatency
	}{
		{"ideal", parityParams(g, Aware), IdealMMIO},
		{"real", DefaultParams(g), bar.DefaultMMIOLatency(g)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(Config{Generation: g, Devices: 4, Kind: KindStar, Params: &c.p, TimingOnly: true, Ready: true})
			require.NoError(t, err)
			for i := range s.Devices() {
				assert.Equal(t, c.want, s.Device(i).Config().MMIO, "device %d", i)
			}
		})
	}
}
