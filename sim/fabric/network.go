package fabric

import (
	"errors"
	"fmt"
	"math/bits"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// LinkState is the mutable state of one directed link.
type LinkState struct {
	Free  uint64 // when the link's FIFO is next free (aware model), ps
	Bytes uint64 // bytes it has carried
	Busy  uint64 // ps it spent serialising
	Down  bool   // taken down by a fault
}

// Stats count what crossed the fabric.
type Stats struct {
	Transfers  uint64 // writes reserved across the fabric (one DMA descriptor each)
	Bytes      uint64 // their bytes
	Landed     uint64 // writes that landed
	Dropped    uint64 // writes lost: a link of their path went down, or the destination was not ready
	LandErrors uint64 // writes whose destination range is no memory of the device
	LastError  string // the last drop or landing error, for reports
}

// ErrLinkDown marks a path with a link that is down. It is reported to the
// DMA engine as dma.ErrNeighbour, so the queue halts with udma.ErrNeighbour.
var ErrLinkDown = errors.New("link down")

// transferTime returns how long n bytes take at bw bytes/s, in ps, rounded
// up, in exact integer arithmetic.
func transferTime(n, bw uint64) uint64 {
	if bw == 0 || n == 0 {
		return 0
	}
	hi, lo := bits.Mul64(n, 1e12)
	if hi >= bw {
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, bw)
	if r != 0 {
		q++
	}
	return q
}

// mulDiv returns a·b/c rounded down, in 128-bit intermediate arithmetic
// (c > 0 and the quotient fits: b ≤ c here).
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// resolve returns the device and device address a write from device src to
// address a lands at.
func (s *System) resolve(src int, a uint64) (int, uint64, error) {
	if sg, remote, ok := s.geo.NeighbourWindow(a); ok {
		dst, ok := s.topo.Neighbour(src, sg)
		if !ok || dst < 0 {
			return 0, 0, fmt.Errorf("fabric: %s has no neighbour behind B0_%d in a %s system: %w", s.topo.Nodes[src].Name, sg, s.topo.Kind, dma.ErrNeighbour)
		}
		return dst, remote, nil
	}
	if dst, remote, ok := hwarch.DecodeFabricAddress(a); ok {
		if dst >= s.topo.Devices {
			return 0, 0, fmt.Errorf("fabric: %s writes to device %d of a %d-device system: %w", s.topo.Nodes[src].Name, dst, s.topo.Devices, dma.ErrNeighbour)
		}
		return dst, remote, nil
	}
	return 0, 0, fmt.Errorf("fabric: address %#x is in no neighbour or fabric window: %w", a, dma.ErrNeighbour)
}

// path returns the cached path between two devices.
func (s *System) path(src, dst int) ([]int, error) {
	row := s.paths[src]
	if row == nil {
		row = make([][]int, s.topo.Devices)
		s.paths[src] = row
	}
	if p := row[dst]; p != nil || src == dst {
		return p, nil
	}
	p, err := s.topo.Path(src, dst)
	if err != nil {
		return nil, err
	}
	row[dst] = p
	return p, nil
}

// downLink returns the first link of path that is down, or -1.
func (s *System) downLink(path []int) int {
	for _, id := range path {
		if s.st.Links[id].Down {
			return id
		}
	}
	return -1
}

// timing books n bytes on path, read by the source engine at an even rate
// from start until sent, and returns when the last byte has left the source
// and when the write lands (docs/fabric.md §Models). With capture on, hops
// receives each chunk's start time on each link, chunk-major.
func (s *System) timing(path []int, n int, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	p := &s.p
	sent = max(sent, start)
	if len(path) == 0 {
		return sent, sent + p.Endpoint
	}
	if p.Model == Free {
		var lat uint64
		bw := ^uint64(0)
		for _, id := range path {
			l := &s.topo.Links[id]
			lat += l.Params.Latency + s.forward(l)
			bw = min(bw, l.Params.Bandwidth)
			s.st.Links[id].Bytes += uint64(n)
			s.st.Links[id].Busy += transferTime(uint64(n), l.Params.Bandwidth)
		}
		if hops != nil {
			t := start
			for _, id := range path {
				*hops = append(*hops, t)
				t += s.topo.Links[id].Params.Latency + s.forward(&s.topo.Links[id])
			}
		}
		injected = max(sent, start+transferTime(uint64(n), s.topo.Links[path[0]].Params.Bandwidth))
		return injected, max(sent, start+transferTime(uint64(n), bw)) + lat + p.Endpoint
	}
	c := p.ChunkBytes
	var arrive uint64
	for off := 0; off < n; off += c {
		size := uint64(min(c, n-off))
		// The chunk is ready once the engine has read it.
		t := start + mulDiv(sent-start, uint64(off)+size, uint64(n))
		for i, id := range path {
			l, ls := &s.topo.Links[id], &s.st.Links[id]
			begin := max(t, ls.Free)
			busy := transferTime(size, l.Params.Bandwidth)
			ls.Free = begin + busy
			ls.Bytes += size
			ls.Busy += busy
			if hops != nil {
				*hops = append(*hops, begin)
			}
			if i == 0 {
				injected = ls.Free
			}
			t = ls.Free + l.Params.Latency + s.forward(l)
		}
		arrive = t
	}
	return injected, arrive + p.Endpoint
}

// forward is the forwarding delay of a switch at the far end of a link.
func (s *System) forward(l *Link) uint64 {
	if s.topo.Nodes[l.To].Kind == NodeSwitch {
		return s.p.Switch
	}
	return 0
}
