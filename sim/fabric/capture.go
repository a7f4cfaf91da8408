package fabric

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// PacketWriter receives the fabric's packets in time order
// (*capture.Writer is one).
type PacketWriter interface {
	WritePacket(atPS uint64, h capture.Header, payload []byte) error
}

// DefaultMaxPackets is how many packets a capture holds before it stops
// recording (a sweep's gigabytes would otherwise fill memory).
const DefaultMaxPackets = 1 << 20

// flushBatch is how many packets wait before record writes the ones whose
// time has passed.
const flushBatch = 4096

// packet is a captured packet waiting for its time to be written.
type packet struct {
	at      uint64
	seq     uint64 // order among packets of one time
	h       capture.Header
	payload []byte
}

// recorder buffers packets: they are known when a write is posted, up to
// its landing time, and go out in time order once the clock has passed them.
type recorder struct {
	w        PacketWriter
	max      int
	pending  []packet
	seq      uint64
	transfer uint64
	pathSeq  map[uint64]uint32 // per (src, dst): chunks sent
	from     uint64            // packets before this time are not recorded (a restored capture's start)
	Written  uint64
	Lost     uint64 // packets not recorded: max in flight reached, or the writer full
	full     bool   // the writer refused a packet for its size limit: the capture has stopped
	err      error
}

// SetCapture makes the fabric record every chunk on every link it crosses
// to w, keeping at most max packets in flight (0: DefaultMaxPackets); nil
// stops capturing. Packets go out in time order as the clock passes them
// and at FlushCapture. Each chunk on each hop is one packet: the header
// names the end devices, the hop's ports, the source engine and queue, a
// sequence per path, the chunk's length and destination address, and the
// DMA transfer it belongs to; it carries the chunk's bytes (none in
// timing-only mode).
func (s *System) SetCapture(w PacketWriter, max int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w == nil {
		s.rec = nil
		return
	}
	if max <= 0 {
		max = DefaultMaxPackets
	}
	s.rec = &recorder{w: w, max: max, pathSeq: map[uint64]uint32{}}
	if c := s.resume; c != nil { // continue the capture the snapshot saved
		s.resume = nil
		s.rec.seq, s.rec.transfer, s.rec.Written, s.rec.Lost, s.rec.from = c.Seq, c.Transfer, c.Written, c.Lost, c.From
		for k, v := range c.PathSeq {
			s.rec.pathSeq[k] = v
		}
		for _, p := range c.Pending {
			s.rec.pending = append(s.rec.pending, packet{at: p.At, seq: p.Seq, h: p.Header, payload: p.Payload})
		}
	}
}

// StopCapture ends the capture: it writes the packets whose time has come
// (those of writes still in flight are dropped: the system is being left
// behind, as when a scenario restores another in its place), stops
// recording, and returns the first write error.
func (s *System) StopCapture() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return nil
	}
	s.rec.flush(uint64(s.engine.Now()))
	err := s.rec.err
	s.rec = nil
	return err
}

// CaptureState is a capture's continuation from the snapshot's time From,
// as a snapshot saves it: the packets recorded for From or later and not
// yet written (writes in flight), the counters that number packets,
// transfers and each path's chunks, and how many packets were written and
// lost. A capture continued from it writes exactly the packets the
// original capture writes for From or later.
type CaptureState struct {
	From          uint64
	Pending       []CapturedPacket
	Seq, Transfer uint64
	PathSeq       map[uint64]uint32
	Written, Lost uint64
}

// CapturedPacket is a packet waiting for its time to be written.
type CapturedPacket struct {
	At, Seq uint64
	Header  capture.Header
	Payload []byte
}

// state returns the recorder's continuation from time now (nil for no
// capture).
func (r *recorder) state(now uint64) *CaptureState {
	if r == nil {
		return nil
	}
	c := &CaptureState{From: max(now, r.from), Seq: r.seq, Transfer: r.transfer, Written: r.Written, Lost: r.Lost,
		PathSeq: make(map[uint64]uint32, len(r.pathSeq))}
	for k, v := range r.pathSeq {
		c.PathSeq[k] = v
	}
	for _, p := range r.pending {
		if p.at >= c.From {
			c.Pending = append(c.Pending, CapturedPacket{At: p.at, Seq: p.seq, Header: p.h, Payload: append([]byte(nil), p.payload...)})
		}
	}
	return c
}

// FlushCapture writes every packet recorded so far, in time order, and
// returns the first write error. Packets of writes still in flight are
// written too: their times are at or after every packet written before.
func (s *System) FlushCapture() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return nil
	}
	s.rec.flush(^uint64(0))
	return s.rec.err
}

// CaptureStats returns how many packets were written and how many were not
// recorded for lack of room: too many in flight, or the writer at its size
// limit (capture.ErrFull), after which the capture records nothing more.
func (s *System) CaptureStats() (written, lost uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return 0, 0
	}
	return s.rec.Written, s.rec.Lost
}

// flush writes the packets due by upTo in time order.
func (r *recorder) flush(upTo uint64) {
	if len(r.pending) == 0 {
		return
	}
	slices.SortFunc(r.pending, func(a, b packet) int {
		switch {
		case a.at != b.at:
			if a.at < b.at {
				return -1
			}
			return 1
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	n := 0
	for n < len(r.pending) && r.pending[n].at <= upTo {
		p := &r.pending[n]
		switch {
		case r.full:
			r.Lost++
		case r.err == nil:
			if err := r.w.WritePacket(p.at, p.h, p.payload); errors.Is(err, capture.ErrFull) {
				// The file is at its size limit: the capture stops
				// cleanly, the file as written stays valid.
				r.full = true
				r.Lost++
			} else if err != nil {
				r.err = fmt.Errorf("fabric capture: %w", err)
			} else {
				r.Written++
			}
		}
		n++
	}
	r.pending = append(r.pending[:0], r.pending[n:]...)
}

// captureHorizon is the time before which every packet is known: packets
// are recorded when their write is posted, and a write reserved but not yet
// posted may have packets as early as its reservation's start. So it is the
// earlier of now and the oldest open reservation's start.
func (s *System) captureHorizon() uint64 {
	h := uint64(s.engine.Now())
	for _, pt := range s.ports {
		for i := range pt.res() {
			if r := &pt.res()[i]; r.Valid && r.Start < h {
				h = r.Start
			}
		}
	}
	return h
}

// record adds the packets of a posted write — one per chunk per hop —
// then, once flushBatch are waiting, writes those whose time has passed.
// The write's own packets must be waiting by then: its reservation is no
// longer open, so the horizon does not wait for them, and its first hops
// are as early as its start, which may be well before now.
func (s *System) record(e, q int, d *Delivery, hops []uint64) {
	r := s.rec
	if r == nil || len(d.Path) == 0 {
		return
	}
	s.recordPackets(e, q, d, hops)
	if len(r.pending) >= flushBatch {
		r.flush(s.captureHorizon())
	}
}

// recordPackets is record's adding of the write's packets.
func (s *System) recordPackets(e, q int, d *Delivery, hops []uint64) {
	r := s.rec
	if r.err != nil {
		return // the capture has failed: nothing more is recorded
	}
	if err := s.fitsHeader(e, q, d); err != nil {
		r.err = err
		r.pending = r.pending[:0]
		return
	}
	r.transfer++
	op := capture.OpWrite
	switch {
	case d.Reduce.Op != udma.ReduceNone:
		op = capture.OpReduceWrite
	case d.Len <= dma.ControlBytes:
		op = capture.OpSemaphore
	}
	key := uint64(d.Src)<<32 | uint64(d.Dst)
	c := int(s.packetBytes(d.Len))
	k := 0
	for off := 0; off < d.Len; off += c {
		size := min(c, d.Len-off)
		seq := r.pathSeq[key]
		r.pathSeq[key]++
		var flags uint8
		if off == 0 {
			flags |= capture.FlagFirst
		}
		if off+size >= d.Len {
			flags |= capture.FlagLast
		}
		var payload []byte
		if d.Data == nil {
			flags |= capture.FlagTimingOnly
		} else {
			payload = d.Data[off : off+size]
		}
		for i, id := range d.Path {
			if k >= len(hops) {
				return
			}
			at := hops[k]
			k++
			if at < r.from {
				continue // before the snapshot this capture continues from
			}
			if r.full || len(r.pending) >= r.max {
				r.Lost++
				continue
			}
			l := &s.topo.Links[id]
			r.seq++
			r.pending = append(r.pending, packet{at: at, seq: r.seq, payload: payload, h: capture.Header{
				Op: op, Src: uint16(d.Src), Dst: uint16(d.Dst), SrcPort: uint8(l.FromPort), DstPort: uint8(l.ToPort),
				Hop: uint8(i), Hops: uint8(len(d.Path)), Engine: uint16(e), Queue: uint8(q), Flags: flags,
				Seq: seq, Length: uint32(size), Addr: d.Addr + uint64(off), Transfer: r.transfer,
			}})
		}
	}
}

// fitsHeader refuses a write whose packets the capture header cannot
// describe: its fields are 8 bits for a port, a hop and the hops of a path,
// 16 bits for a device and an engine, 8 for a queue and 32 for a chunk's
// length. A wider value would be written wrapped — a switch's port 256 as
// port 0 — so the capture fails instead, naming the link or the value.
func (s *System) fitsHeader(e, q int, d *Delivery) error {
	const maxHops = math.MaxUint8
	if len(d.Path) > maxHops {
		return fmt.Errorf("fabric capture: a write from device %d to %d crosses %d links; the capture header holds at most %d hops", d.Src, d.Dst, len(d.Path), maxHops)
	}
	for _, id := range d.Path {
		if err := s.capturePort(id); err != nil {
			return err
		}
	}
	switch {
	case d.Src < 0 || d.Src > math.MaxUint16 || d.Dst < 0 || d.Dst > math.MaxUint16:
		return fmt.Errorf("fabric capture: a write from device %d to %d: the capture header holds devices 0..%d", d.Src, d.Dst, math.MaxUint16)
	case e < 0 || e > math.MaxUint16 || q < 0 || q > math.MaxUint8:
		return fmt.Errorf("fabric capture: DMA engine %d queue %d: the capture header holds engines 0..%d and queues 0..%d", e, q, math.MaxUint16, math.MaxUint8)
	case min(s.packetBytes(d.Len), uint64(max(d.Len, 0))) > math.MaxUint32:
		return fmt.Errorf("fabric capture: a write of %d bytes from device %d to %d: a packet's length field holds at most %d bytes", d.Len, d.Src, d.Dst, uint64(math.MaxUint32))
	}
	return nil
}

// capturePort refuses link id when a port of it does not fit the capture
// header's 8-bit port field.
func (s *System) capturePort(id int) error {
	l := &s.topo.Links[id]
	if l.FromPort > math.MaxUint8 || l.ToPort > math.MaxUint8 {
		return fmt.Errorf("fabric capture: link %s: port %d does not fit the capture header's 8-bit port (0..%d)", s.topo.LinkName(id), max(l.FromPort, l.ToPort), math.MaxUint8)
	}
	return nil
}

// CheckCapture refuses, before anything runs, a system a capture could not
// record: one with a switch port past the header's 8-bit port field (a star
// of more than 256 devices), whose packets would be refused at the first
// write through it. A path longer than the header's 255 hops (a chain or
// ring of hundreds of devices) is refused at its first packet.
func (s *System) CheckCapture() error {
	for id := range s.topo.Links {
		if err := s.capturePort(id); err != nil {
			return err
		}
	}
	return nil
}

// packetBytes is the largest packet a write of n bytes is captured as: a
// chunk in the aware model, the whole write in the free one.
func (s *System) packetBytes(n int) uint64 {
	if s.p.Model == Free {
		return uint64(max(n, 0)) // cut-through: the write is one packet per hop
	}
	return s.p.chunk(n)
}
