package fabric

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// LinkState is the mutable state of one directed link.
type LinkState struct {
	// Spans are the times the link is booked to serialise chunks (aware
	// model) or a device's writes onto its own link (free model), in
	// order, disjoint; those over before the latest reservation are
	// dropped.
	Spans []Span
	// Queue is when the chunks booked in Spans reached the link, run by
	// run, and when each crossed it (aware model): what a control write
	// that comes to the link waits for (System.control). Runs whose
	// chunks have all crossed are dropped when its array fills and when
	// the system is saved (LinkState.make, System.Snapshot).
	Queue []Arrivals
	// Folds counts the times its queue passed MaxArrivals runs of chunks
	// on their way and was folded into one (LinkState.fold): control
	// writes behind it from then on wait for every chunk booked before,
	// an upper bound of their FIFO wait. Reports say so (Counters).
	Folds uint64
	Bytes uint64 // bytes it has carried (saturating at 2^64−1)
	Busy  uint64 // ps it spent serialising (saturating at units.MaxTimePS)
	Down  bool   // taken down by a fault
}

// count adds a write of n bytes that kept the link busy for busy ps to its
// counters. Both saturate rather than wrap: the free model books a shared
// link's load, which can exceed the time that passed, so after a long
// enough run its Busy would pass units.MaxTimePS — the bound a snapshot's
// loader checks every time against — and is held there instead.
func (l *LinkState) count(n, busy uint64) {
	l.Bytes = addTime(l.Bytes, n)
	l.Busy = min(addTime(l.Busy, busy), units.MaxTimePS)
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
	return s.paths.get(s.topo, src, dst)
}

// downLink returns the first link of path that is down, or -1.
func (s *System) downLink(path []int) int {
	if s.down == 0 {
		return -1
	}
	for _, id := range path {
		if s.st.Links[id].Down {
			return id
		}
	}
	return -1
}

// timing books n bytes on path, read by the source engine at an even rate
// from start until sent, and returns when the last byte has left the source
// and when the write lands (docs/fabric.md §Models). With capture on, hops receives each chunk's start time on each link,
// chunk-major.
func (s *System) timing(path []int, n int, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	return s.timingAfter(path, n, 0, start, sent, hops)
}

// timingAfter is timing for a write that continues a message of before
// bytes.
func (s *System) timingAfter(path []int, n int, before, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	p := &s.p
	sent = max(sent, start)
	if len(path) == 0 {
		return sent, sent + p.Endpoint
	}
	now := min(uint64(s.engine.Now()), start)
	if p.Model == Free {
		return s.cutThrough(path, n, now, start, sent, hops)
	}
	if n <= ControlBytes && before == 0 && p.Endpoints != EndpointsIdeal {
		return s.control(path, n, now, sent, hops)
	}
	return s.storeAndForward(path, n, before, now, start, sent, hops)
}

// ControlBytes is the largest write the aware model treats as a control
// write (a semaphore increment or flag: the runtime's are 4 bytes), which
// is not booked in the links' calendars but waits for the chunks that
// reached each link before it (System.control) — except in the
// parity mode (EndpointsIdeal), where every message, however small, is
// stored and forwarded through the links' FIFOs as the analytical
// contention-aware backend has it.
const ControlBytes = 8

// control times a control write in the aware model: on each link of its
// path it waits, as in a FIFO, until every chunk that reached the link
// before it has crossed (LinkState.drained), then takes its own
// serialisation (a few ps) and the link's delay; it is not booked in the
// calendar (its bytes are counted). The calendars alone cannot say which
// chunks came first: they hold the chunks other writes booked ahead,
// including chunks that reach the link after the control write — booked
// behind them, in the first gap that held it, a 4-byte semaphore that
// arrived a few hundred ns after a burst of data writes was booked waited
// for all of them, tens of µs, while one that came a little earlier
// slipped into a gap between their chunks, so a larger latency could move
// a collective's credits ahead of the data and make it faster (docs/
// fabric.md §Models, "Control writes"). The writes of one path still land
// in order (inOrder): a semaphore never lands before the data written
// before it on its path.
//
// On the EFA network's links (controlQueues false) it waits for no queue:
// a NIC serves its queue pairs in turn, and what a NIC has yet to send
// waits in its senders' queues, so a 4-byte write of one flow does not
// wait behind megabytes of another's. Waiting there as in one FIFO, until
// 2026-12-07, rank 0's releases of a permute across 4 nodes of 4 Trn2
// devices waited at a NIC's link behind a node-mate's relayed 4 MiB, and
// the permute took 381.29 µs against the free model's 248.77 (now 249.91);
// a faster in-node link, bringing more relayed data to a NIC's queue ahead
// of a semaphore, made multi-node collectives slower (docs/fabric.md
// §Models, "Control writes"; TestControlWriteNotQueuedOnEFA,
// TestEFAControlWritesNotBehindRelays).
func (s *System) control(path []int, n int, now, sent uint64, hops *[]uint64) (injected, lands uint64) {
	t := sent
	for i, id := range path {
		ls := &s.st.Links[id]
		if s.controlQueues[id] {
			t = ls.drained(t)
		}
		busy := s.busyOf(id, uint64(n))
		ls.count(uint64(n), busy)
		if hops != nil {
			*hops = append(*hops, t)
		}
		end := addTime(t, busy)
		if i == 0 {
			injected = end
		}
		t = addTime(end, s.hopDelay[id])
	}
	return injected, addTime(t, s.p.Endpoint)
}

// cutThrough is the contention-free model: the write goes at its path's
// slowest bandwidth, crossing each link in its latency, and waits for no
// other device's writes — but a device's own writes take turns on every
// link they cross, so that a device never puts more on a link than its
// bandwidth, however many of its DMA engines write through it, nor does a
// stream of its writes along one path cross it faster than its slowest
// link. On its first link — the device's own, which carries its writes
// one after another — a write is booked for n / B₀ at the first idle time
// b₀ ≥ start; on each link i after it, it begins no earlier than the link
// before it began plus that link's latency (cut-through) nor before the
// n / Bᵢ booked there for the device's previous write over link i has
// passed (state.SourceBusy) — a FIFO of the device's own, booked as its
// first link is, for the write's time there from when it comes, ahead of
// the bytes a slow engine still reads — and it has crossed link i at
//
//	e₀ = max(b₀ + n / B₀, sent),  eᵢ = max(bᵢ + n / Bᵢ, eᵢ₋₁ + Lᵢ₋₁)
//
// (its last byte cannot leave a link before the engine has read it, nor
// before it has come over the link before). It has left the device when
// its last byte could: injected = eₖ − Σᵢ₋ₖ Lᵢ (at least e₀), and lands at
// eₖ + Lₖ + δ. On an idle path that is max(b₀ + n / min Bᵢ, sent) and
// Σ Lᵢ + δ after it: the α-β model's h·α + m / B.
//
// Booked on its first link for n / min Bᵢ instead, from 2026-12-07 to
// this change (a write held its device's link for its time on the path's
// slowest link), a write relayed inside its node to the NIC of its
// destination's rail held the device's link four times as long as its
// bytes took there, and the in-node writes of the device's other engines
// waited behind it: a 4 × 4 Trn2 all-to-all got slower as the in-node
// links got faster (143.40 µs at 60 GB/s, 153.79 at 140; 112.82 and
// 120.88 now: docs/fabric.md §Models, "Contention-free";
// TestFreeRelayLeavesOwnLinkFree). Booked for n / B₀ with no turns after the first link (until 2026-12-07),
// a device's writes overlapped on a slower link further on: a 64 MiB
// permute across two nodes of 2 Trn3 devices ran at 118 GB/s through one
// 25 GB/s NIC (TestFreeStreamAtSlowestLink).
//
// A control write (at most ControlBytes, real endpoints) is not booked
// and takes no turn, as the aware model books it in no calendar
// (System.control): it leaves at start as on an idle path. The booking
// holds a data write's n / B₀ from the first idle time at or after its
// start, ahead of the bytes its engine reads until sent, so a semaphore
// booked after a few data writes of other engines of its device waited for
// all of their link time (five 64 KiB writes, ~1.1 µs at 280 GB/s) while
// the link carried only what the engines had read — and whether it was
// booked before or after them followed the order of the engines' events,
// which moved with the in-node bandwidth: a 16 MiB all-gather on 2 × 4
// Trn2 devices took 3.4 µs longer at 280 GB/s than at 240 (docs/fabric.md
// §Models, "Contention-free"; TestFreeTimeNonIncreasingInLinkBandwidth).
func (s *System) cutThrough(path []int, n int, now, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	data := n > ControlBytes || s.p.Endpoints == EndpointsIdeal
	src := uint64(s.topo.Links[path[0]].From) << 32
	var lat uint64 // Σ Lᵢ of the links before the last
	begin, end := start, uint64(0)
	for i, id := range path {
		busy := s.busyOf(id, uint64(n))
		s.st.Links[id].count(uint64(n), busy)
		if i == 0 {
			if data {
				begin = s.st.Links[id].book(now, start, busy)
			}
			end = max(addTime(begin, busy), sent)
		} else {
			d := s.hopDelay[path[i-1]]
			lat = addTime(lat, d)
			begin = addTime(begin, d)
			key := src | uint64(id)
			if data {
				begin = max(begin, s.st.SourceBusy[key])
				s.sourceBusy(now, key, addTime(begin, busy))
			}
			end = max(addTime(begin, busy), addTime(end, d))
		}
		if hops != nil {
			*hops = append(*hops, begin)
		}
	}
	injected = end - min(end, lat)
	return injected, addTime(addTime(end, s.hopDelay[path[len(path)-1]]), s.p.Endpoint)
}

// sourceBusy records that a device's write is booked on a link until end
// (state.SourceBusy, key device<<32 | link), dropping the entries over by
// now first when the map has doubled since they were last dropped: it
// holds the links a device's writes in flight cross, not every link a
// run's writes ever crossed.
func (s *System) sourceBusy(now, key, end uint64) {
	if s.st.SourceBusy == nil {
		s.st.SourceBusy = map[uint64]uint64{}
	}
	if len(s.st.SourceBusy) >= s.sourcePrune {
		maps.DeleteFunc(s.st.SourceBusy, func(_, e uint64) bool { return e <= now })
		s.sourcePrune = max(1024, 2*len(s.st.SourceBusy))
	}
	s.st.SourceBusy[key] = end
}

// storeAndForward is the contention-aware model: m = ⌈n/c⌉ chunks, all of
// c bytes but the last. The engine reads the bytes at its bandwidth B_e,
// the last one at sent: chunk j is ready once its last byte is read, at
// sent − (n − (j+1)·c)/B_e (never before start; the last chunk at sent);
// c is ChunkBytes, or n with ideal endpoints (one chunk per write).
// Counted back from sent, a chunk's time does not depend on how many bytes
// follow it, so a larger write never has a chunk ready earlier (with the
// engine's fixed cost spread over the bytes, one byte more made every chunk
// ready sooner). At each link a chunk takes the first idle time at or after
// its arrival that holds its serialisation s_i (link.book), then reaches
// the next node L_i later. The write has left the source when its last
// chunk has left the first link, and lands δ after its last chunk arrives.
//
// A write that continues a message of before bytes (the parity mode: one
// DMA descriptor moves at most 64 KiB, so a message is several writes)
// is its tail: on every link but the first it goes no earlier than
// before/B_i after it reached the link's node, where the whole message so
// far would still be crossing — so the message's last write lands
// Σ (before + n)/B_i + L_i after the message started, the store and
// forward of the whole message.
//
// The chunks are booked link by link, each link's all before the next
// link's (bookRun): chunk j's time on link i depends on its time on link
// i−1 and on what link i holds when it comes — the other writes' spans and
// chunks 0..j−1 of this one, booked there in the same order either way
// when no link is on the path twice — so the times, spans and counters
// are those of booking chunk by chunk (storeAndForwardChunks, which a
// capture's hops, chunk-major, and a path through a link twice keep).
// While the chunks queue on a link — each arriving by the time the one
// before it has crossed, as on a busy link — bookQueue books them all at
// once, their times there a linear run, and passes the next link that run
// instead of a list of times; from the first link where they do not (or
// where that cannot be shown from the run), bookRun books them from the
// list.
func (s *System) storeAndForward(path []int, n int, before, now, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	if hops != nil || !distinct(path) {
		return s.storeAndForwardChunks(path, n, before, now, start, sent, hops)
	}
	c := s.p.chunk(n)
	m := (uint64(n) + c - 1) / c
	if m == 0 {
		return 0, addTime(0, s.p.Endpoint)
	}
	lastSize := uint64(n) - (m-1)*c
	// While the write's chunks queue on each link (bookQueue), their
	// arrivals are a chunkRun and none of their times is listed; from the
	// first link on which they do not, they are listed in at.
	r, queued := s.readyRun(n, c, m, start, sent)
	queued = queued && !s.slowBook
	var at []uint64
	if !queued {
		at = s.readyTimes(n, c, start, sent)
	}
	var crossed uint64
	for i, id := range path {
		d, last := s.busyOf(id, c), s.busyOf(id, lastSize)
		delay := s.hopDelay[id]
		if i+1 < len(path) && before > 0 {
			delay = addTime(delay, uint64(simkernel.AtRate(before, s.topo.Links[path[i+1]].Params.Bandwidth)))
		}
		ls := &s.st.Links[id]
		if queued {
			arrived := r
			if crossed, queued = ls.bookQueue(now, &r, d, last, delay); !queued {
				if i == 0 {
					at = s.readyTimes(n, c, start, sent)
				} else {
					at = r.fill(s.readyBuffer(m))
				}
			} else if s.fifo {
				ls.queuedRun(now, i == 0, arrived, r, d, last, delay)
			}
		}
		if !queued {
			if s.fifo {
				var arr []uint64 // nil on the first link: bookedRun takes each chunk's begin
				if i > 0 {
					arr = append(s.arrivals[:0], at...)
					s.arrivals = arr
				}
				// Booked with no delay, at holds each chunk's crossing.
				crossed = ls.bookRun(now, at, d, last, 0)
				ls.bookedRun(now, arr, at, d, last)
				for j := range at {
					at[j] = addTime(at[j], delay)
				}
			} else {
				crossed = ls.bookRun(now, at, d, last, delay)
			}
		}
		ls.count(uint64(n), addTime(mulTime(m-1, d), last))
		if i == 0 {
			injected = crossed
		}
	}
	// The last chunk to arrive is the last to cross the last link (its
	// delay is every chunk's).
	return injected, addTime(addTime(crossed, s.hopDelay[path[len(path)-1]]), s.p.Endpoint)
}

// readyRun returns when the chunks of a write of m ≥ 3 chunks of the
// configured size, read from start until sent, are ready to leave their
// source, as a chunkRun (storeAndForward's fast path): readyTimes' first
// two times and its last, and the read table's largest step, which bounds
// the step between any two chunks before the last — chunk k is ready at
// max(start, sent − (all − read[k+1])), which grows with k (the table does:
// New checked it, and all ≥ read[m−1] is tested here) by at most
// read[k+1] − read[k]. It returns false when the write is not such a
// write, or the table is not one that grows (readyTimes lists its times
// instead).
func (s *System) readyRun(n int, c, m, start, sent uint64) (chunkRun, bool) {
	if m < 3 || c != uint64(s.p.ChunkBytes) || m >= uint64(len(s.readTime)) || s.readStep == ^uint64(0) {
		return chunkRun{}, false
	}
	read := s.readTime[:m+1]
	all := read[m]
	if uint64(n) != m*c {
		all = uint64(simkernel.AtRate(uint64(n), s.engineBW))
	}
	if all < read[m-1] {
		return chunkRun{}, false
	}
	return chunkRun{m: int(m), first: readyAt(all-read[1], start, sent), second: readyAt(all-read[2], start, sent), step: s.readStep, last: sent}, true
}

// storeAndForwardChunks is storeAndForward booking chunk by chunk, each
// on every link of the path before the next chunk, with each chunk's start
// time on each link appended to hops when it is not nil.
func (s *System) storeAndForwardChunks(path []int, n int, before, now, start, sent uint64, hops *[]uint64) (injected, lands uint64) {
	c := s.p.chunk(n)
	at := s.readyTimes(n, c, start, sent)
	var arrive uint64
	runs := s.runs[:0]
	if s.fifo {
		for range path {
			runs = append(runs, runBuilder{})
		}
		s.runs = runs
	}
	for j, t := range at {
		size := c
		if j == len(at)-1 {
			size = uint64(n) - uint64(j)*c
		}
		for i, id := range path {
			ls := &s.st.Links[id]
			if i > 0 && before > 0 {
				t = addTime(t, uint64(simkernel.AtRate(before, s.topo.Links[id].Params.Bandwidth)))
			}
			busy := s.busyOf(id, size)
			begin := ls.book(now, t, busy)
			end := addTime(begin, busy)
			if s.fifo {
				a := t
				if i == 0 {
					a = began(end, busy)
				}
				runs[i].add(ls, now, a, end)
			}
			ls.count(size, busy)
			if hops != nil {
				*hops = append(*hops, begin)
			}
			if i == 0 {
				injected = max(injected, end)
			}
			t = addTime(end, s.hopDelay[id])
		}
		arrive = max(arrive, t)
	}
	for i, id := range path[:len(runs)] {
		runs[i].flush(&s.st.Links[id], now)
	}
	return injected, addTime(arrive, s.p.Endpoint)
}

// readyTimes returns when each of the ⌈n/c⌉ chunks of a write read from
// start until sent is ready to leave its source (storeAndForward), in a
// buffer of the system's that the next call reuses.
func (s *System) readyTimes(n int, c, start, sent uint64) []uint64 {
	m := (uint64(n) + c - 1) / c
	at := s.readyBuffer(m)
	if m == 0 {
		return at
	}
	// Chunk j is ready once the engine has read its first j+1 chunks: the
	// rest of the write's read, all − AtRate((j+1)·c), before sent. The
	// last is ready at sent.
	if c == uint64(s.p.ChunkBytes) && m < uint64(len(s.readTime)) {
		read := s.readTime[:m+1] // read[k] = AtRate(k·c)
		all := read[m]           // the whole write's read, when its chunks are all whole
		if uint64(n) != m*c {
			all = uint64(simkernel.AtRate(uint64(n), s.engineBW))
		}
		for j := range at {
			at[j] = readyAt(all-read[j+1], start, sent)
		}
	} else {
		all := uint64(simkernel.AtRate(uint64(n), s.engineBW))
		for j := range at {
			at[j] = readyAt(all-s.chunksRead(uint64(j)+1, c), start, sent)
		}
	}
	at[m-1] = sent
	return at
}

// readyBuffer returns the system's buffer of a write's chunk times, of
// length m.
func (s *System) readyBuffer(m uint64) []uint64 {
	if uint64(cap(s.ready)) < m {
		s.ready = make([]uint64, m)
	}
	return s.ready[:m]
}

// readyAt is when a chunk the engine reads rest ps before the write's last
// byte is ready: rest before sent, but not before start.
func readyAt(rest, start, sent uint64) uint64 {
	if rest < sent-start {
		return sent - rest
	}
	return start
}

// busyOf is how long link id serialises a chunk of size bytes.
func (s *System) busyOf(id int, size uint64) uint64 {
	if size == uint64(s.p.ChunkBytes) {
		return s.chunkTime[id]
	}
	return uint64(simkernel.AtRate(size, s.topo.Links[id].Params.Bandwidth))
}

// distinct reports whether no link occurs twice in path.
func distinct(path []int) bool {
	for i, id := range path {
		if slices.Contains(path[:i], id) {
			return false
		}
	}
	return true
}

// mulTime is k·d, saturating instead of wrapping (as addTime).
func mulTime(k, d uint64) uint64 {
	if hi, lo := bits.Mul64(k, d); hi == 0 {
		return lo
	}
	return ^uint64(0)
}

// chunksRead is how long the engine takes to read k chunks of c bytes:
// AtRate(k·c, engineBW), from the table New computed when c is the
// configured chunk.
func (s *System) chunksRead(k, c uint64) uint64 {
	if c == uint64(s.p.ChunkBytes) && k < uint64(len(s.readTime)) {
		return s.readTime[k]
	}
	return uint64(simkernel.AtRate(k*c, s.engineBW))
}

// forward is the forwarding delay of a switch at the far end of a link.
func (s *System) forward(l *Link) uint64 {
	if s.topo.Nodes[l.To].Kind == NodeSwitch {
		return s.p.Switch
	}
	return 0
}
