package sim

import (
	"unsafe"

	"github.com/neuronsim/neuronsim/sim/simkernel"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// StateBytes bounds the memory State takes for its copy: the resident
// pages and the live and free extents.
func (h *HostMemory) StateBytes() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	ext := unsafe.Sizeof(HostExtent{})
	return h.mem.StateBytes() + simkernel.SliceBytes(h.blocks.Len(), ext) + simkernel.SliceBytes(h.free.Len(), ext)
}

// SnapshotInSystemBytes bounds the memory [Device.SnapshotInSystem] takes
// for its copy, without making it: the synchronisation state, the register
// and device memories' resident pages, the DMA engines' compact state
// ([dma.Controller.CompactStateBytes]) and the NeuronCores' (the
// DeviceSnapshot value itself is its caller's). It reads
// only counts, so it costs a few microseconds a device.
func (d *Device) SnapshotInSystemBytes() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	sync := unsafe.Sizeof(tpb.SyncState{})
	n := simkernel.SliceBytes(len(d.st.NCSync), sync) + simkernel.SliceBytes(len(d.st.TopSPSync), sync)
	n += d.regs.StateBytes() + d.hbm.StateBytes() + d.dma.CompactStateBytes()
	n += simkernel.SliceBytes(len(d.cores), unsafe.Sizeof(tpb.CoreState{}))
	for _, c := range d.cores {
		n += c.StateBytes()
	}
	return n
}

// ResidentBytes is the bytes of the host memory's resident pages.
func (h *HostMemory) ResidentBytes() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mem.FootprintBytes()
}

// ResidentBytes is the bytes of the device's resident memory pages, of its
// register windows and its device memory.
func (d *Device) ResidentBytes() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.regs.FootprintBytes() + d.hbm.FootprintBytes()
}
