package fabric

import (
	"sync"
	"unsafe"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// SaveBuffers bounds what a save takes besides the state it copies
// (SnapshotBytes) and, for Save, the compressed payload it holds: the zstd
// encoder (its snapshotWindow of history, its tables and blocks) and the
// encoder's sorted map keys.
const SaveBuffers = 48 << 20

// snapshotSize is what a snapshot of the system will hold, counted from
// the live system without copying it.
type snapshotSize struct {
	state  uint64 // the copy Snapshot makes, pages included
	pages  uint64 // of which memory pages (encoded as they are)
	shared uint64 // bytes the snapshot shares with the system, which the encoding writes: payloads in flight, device names
}

// snapshotSize counts what Snapshot will copy: the system's events and
// host memory, each device's part (Device.SnapshotInSystemBytes: its
// memories' resident pages, its DMA engines' compact state, its cores'), and the
// fabric's links, path order, writes in flight, reservations, messages and
// capture.
func (s *System) snapshotSize() snapshotSize {
	var z snapshotSize
	z.state = uint64(unsafe.Sizeof(Snapshot{}))
	s.mu.Lock()
	z.state += s.engine.StateBytes() + s.host.StateBytes()
	z.pages += s.host.ResidentBytes()
	st := &s.st
	z.state += simkernel.SliceBytes(len(st.Links), unsafe.Sizeof(LinkState{}))
	for i := range st.Links {
		z.state += simkernel.SliceBytes(len(st.Links[i].Spans), unsafe.Sizeof(Span{}))
		z.state += simkernel.SliceBytes(len(st.Links[i].Queue), unsafe.Sizeof(Arrivals{}))
	}
	z.state += simkernel.SliceBytes(len(st.Last), 8) + simkernel.MapBytes(len(st.LastMap), 16)
	z.state += simkernel.SliceBytes(len(st.InFlight), unsafe.Sizeof(Delivery{})) + simkernel.SliceBytes(len(st.Free), 8)
	for i := range st.InFlight {
		z.shared += uint64(len(st.InFlight[i].Data)) + 8*uint64(len(st.InFlight[i].Path))
	}
	z.state += simkernel.SliceBytes(len(st.Faults), unsafe.Sizeof(Fault{}))
	z.state += simkernel.MapBytes(len(st.Messages), 8+unsafe.Sizeof(Message{}))
	z.state += simkernel.MapBytes(len(st.SourceBusy), 16)
	z.state += simkernel.SliceBytes(len(st.SprayNext), 4)
	held := 0
	for _, pt := range s.ports {
		for _, r := range pt.res() {
			if r.Valid {
				held++
				z.state += simkernel.SliceBytes(len(r.hops), 8)
				z.shared += 8 * uint64(len(r.Path))
			}
		}
	}
	// Appended one by one: the slice's capacity is at most twice its length.
	z.state += simkernel.SliceBytes(2*held, unsafe.Sizeof(PortReservation{}))
	if r := s.rec; r != nil {
		z.state += uint64(unsafe.Sizeof(CaptureState{})) + simkernel.MapBytes(len(r.pathSeq), 16)
		z.state += simkernel.SliceBytes(2*len(r.pending), unsafe.Sizeof(CapturedPacket{}))
		for _, p := range r.pending {
			z.state += simkernel.AllocBytes(uint64(len(p.payload)))
		}
	}
	s.mu.Unlock()
	z.state += simkernel.SliceBytes(len(s.devs), unsafe.Sizeof(DeviceImage{}))
	for _, d := range s.devs {
		z.state += d.SnapshotInSystemBytes()
		z.pages += d.ResidentBytes()
		z.shared += uint64(len(d.Config().Name))
	}
	return z
}

// encodedBound bounds the snapshot's encoding: memory pages as they are,
// every other value in at most twice its size in memory (a varint takes at
// most 10 bytes for 8, a byte 2, a slice's, map's or string's length fewer
// than its header), and the bytes shared with the system.
func (z snapshotSize) encodedBound() uint64 {
	return z.pages + 2*(z.state-min(z.pages, z.state)) + 2*z.shared
}

// compressedBound bounds the zstd compression of n bytes (a stored block
// of at most 128 KiB takes a 3-byte header; the frame's own header and
// checksum a few more).
func compressedBound(n uint64) uint64 { return n + n>>10 + 1<<10 }

// SnapshotBytes bounds the memory Snapshot takes for its copy of the
// system, counted from the live system without copying anything: the
// events and host memory (once), each device's part (its memories'
// resident pages, its DMA engines' compact state, its NeuronCores'), and
// the fabric's state. It costs microseconds a device; the copy of an idle
// Trn3 device's part takes about 56 KiB. The bound is at most 1.5 times
// what the copy allocates (TestSnapshotBytesBound measures both).
func (s *System) SnapshotBytes() uint64 { return s.snapshotSize().state }

// SaveFileBytes bounds the memory SaveFile takes: the state it copies
// (SnapshotBytes) and SaveBuffers. The payload streams into the file.
func (s *System) SaveFileBytes() uint64 { return s.SnapshotBytes() + SaveBuffers }

// SaveBytes bounds the memory Save takes: the state it copies
// (SnapshotBytes), SaveBuffers, and the compressed payload it holds until
// it is written, counted twice for the buffer that grows to hold it.
func (s *System) SaveBytes() uint64 {
	z := s.snapshotSize()
	return z.state + SaveBuffers + 2*compressedBound(z.encodedBound())
}

// idleDeviceBytes caches IdleDeviceSnapshotBytes by generation.
var idleDeviceBytes sync.Map // hwarch.Generation → uint64

// IdleDeviceSnapshotBytes is what a snapshot copies of one device of
// generation gen at the least: its part (Device.SnapshotInSystemBytes) as
// it is built, no memory written, every DMA engine as its reset left it.
// A save of a system of n devices takes at least n times it, which a run
// can check before it builds anything. It builds a one-device system once
// a generation.
func IdleDeviceSnapshotBytes(gen hwarch.Generation) (uint64, error) {
	if v, ok := idleDeviceBytes.Load(gen); ok {
		return v.(uint64), nil
	}
	s, err := New(Config{Generation: gen, Devices: 1, Kind: KindSwitch, Ready: true, TimingOnly: true})
	if err != nil {
		return 0, err
	}
	n := s.devs[0].SnapshotInSystemBytes() + uint64(unsafe.Sizeof(DeviceImage{}))
	idleDeviceBytes.Store(gen, n)
	return n, nil
}
