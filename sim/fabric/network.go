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
	Faults     uint64 // injected faults that happened
	LastError  string // the last drop or landing error, for reports
}

// ErrLinkDown marks a path with a link that is down. It is reported to the
// DMA engine as dma.ErrNeighbour, so the queue halts with udma.ErrNeighbour.
var ErrLinkDown = errors.New("link down")

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
			s.st.Links[id].Busy += dma.TransferTime(uint64(n), l.Params.Bandwidth)
		}
		if hops != nil {
			t := start
			for _, id := range path {
				*hops = append(*hops, t)
				t += s.topo.Links[id].Params.Latency + s.forward(&s.topo.Links[id])
			}
		}
		injected = max(sent, start+dma.TransferTime(uint64(n), s.topo.Links[path[0]].Params.Bandwidth))
		return injected, max(sent, start+dma.TransferTime(uint64(n), bw)) + lat + p.Endpoint
	}
	if hops != nil {
		return s.chunkByChunk(path, n, start, sent, hops)
	}
	return s.pipelined(path, n, start, sent)
}

// The aware model's chunks: m = ⌈n/c⌉ chunks, all of c bytes but the last.
// The engine reads them at an even rate: chunk j (of the m−1 whole ones) is
// ready at start + (j+1)·Δ with Δ = ⌊(sent−start)/m⌋, the last at sent. A
// chunk crosses link i in s_i (its serialisation) and reaches the next node
// L_i later; each link is a FIFO, free from F_i on.
//
// chunkByChunk follows every chunk over every link (used when capturing,
// which needs each chunk's times); pipelined computes the same times in
// O(hops²) from the closed form of a tandem of FIFO stations with fixed
// service times. Tests hold the two equal.

// chunkByChunk is the aware model, one chunk and one link at a time.
func (s *System) chunkByChunk(path []int, n int, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	c := uint64(s.p.ChunkBytes)
	m := (uint64(n) + c - 1) / c
	delta := (sent - start) / m
	var arrive uint64
	for j := uint64(0); j < m; j++ {
		size, t := c, start+(j+1)*delta
		if j == m-1 {
			size, t = uint64(n)-(m-1)*c, sent
		}
		for i, id := range path {
			l, ls := &s.topo.Links[id], &s.st.Links[id]
			begin := max(t, ls.Free)
			busy := s.chunkTime[id]
			if size != c {
				busy = dma.TransferTime(size, l.Params.Bandwidth)
			}
			ls.Free = begin + busy
			ls.Bytes += size
			ls.Busy += busy
			if hops != nil {
				*hops = append(*hops, begin)
			}
			if i == 0 {
				injected = ls.Free
			}
			t = ls.Free + s.hopDelay[id]
		}
		arrive = t
	}
	return injected, arrive + s.p.Endpoint
}

// pipelined is the aware model in closed form. With the engine as station
// −1 (service Δ, free from start, no latency), the departure of whole chunk
// j from link i is
//
//	D(i, j) = max over k in −1..i of ( F_k + Σ_{q=k..i} s_q + Σ_{q=k..i−1} L_q + j · max_{q=k..i} s_q )
//
// (the longest path through the grid of chunks and stations, which spends
// every extra chunk at the slowest station on it). The last chunk, of its
// own size, then follows each link behind D(i, m−2).
func (s *System) pipelined(path []int, n int, start, sent uint64) (injected, lands uint64) {
	c := uint64(s.p.ChunkBytes)
	m := (uint64(n) + c - 1) / c
	delta := (sent - start) / m
	whole := m - 1 // chunks before the last
	var behind [maxHops]uint64
	h := len(path)
	if h > maxHops {
		var hops []uint64
		return s.chunkByChunk(path, n, start, sent, &hops)
	}
	if whole > 0 {
		j := whole - 1
		for i := range h {
			var best, sum, lat, slow uint64
			for k := i; k >= -1; k-- {
				var free, svc, l uint64
				if k >= 0 {
					id := path[k]
					free, svc = s.st.Links[id].Free, s.chunkTime[id]
					if k < i {
						l = s.hopDelay[id]
					}
				} else {
					free, svc = start, delta
				}
				sum += svc
				lat += l
				slow = max(slow, svc)
				best = max(best, free+sum+lat+j*slow)
			}
			behind[i] = best
		}
	}
	last := uint64(n) - whole*c
	t := sent
	for i, id := range path {
		ls := &s.st.Links[id]
		if whole > 0 {
			ls.Free = behind[i]
		}
		busy := dma.TransferTime(last, s.topo.Links[id].Params.Bandwidth)
		begin := max(t, ls.Free)
		ls.Free = begin + busy
		ls.Bytes += uint64(n)
		ls.Busy += whole*s.chunkTime[id] + busy
		if i == 0 {
			injected = ls.Free
		}
		t = ls.Free + s.hopDelay[id]
	}
	return injected, t + s.p.Endpoint
}

// maxHops is the longest path pipelined computes in closed form; longer
// ones (rings of many devices) go chunk by chunk.
const maxHops = 16

// forward is the forwarding delay of a switch at the far end of a link.
func (s *System) forward(l *Link) uint64 {
	if s.topo.Nodes[l.To].Kind == NodeSwitch {
		return s.p.Switch
	}
	return 0
}
