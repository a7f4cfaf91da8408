package sim

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"

	"github.com/neuronsim/neuronsim/sim/bar"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// deviceClock is the device's event engine as the DMA engines see it.
type deviceClock Device

// Now returns the device's clock.
func (c *deviceClock) Now() Time { return c.engine.Now() }

// Schedule runs Controller.Fire(arg) at time at.
func (c *deviceClock) Schedule(at Time, arg uint64) {
	if err := c.engine.Schedule(at, c.hDMA, arg); err != nil {
		// Only a time before now can fail, and the controller never asks
		// for one; count it rather than lose it silently.
		c.st.Stats.LostEvents++
	}
}

// deviceBus is the device's address space as its DMA engines see it.
type deviceBus Device

// target is where a DMA range lands.
type target struct {
	class dma.Class
	kind  uint8  // targetHBM, targetHost, targetRegs (bulk), targetWords (register semantics), targetRemote
	addr  uint64 // HBM device address, host physical address, or register-BAR offset
}

const (
	targetHBM = iota
	targetHost
	targetRegs
	targetWords
	targetRemote // another device's memory: reached only by a write through the fabric
)

// decode resolves a whole range [addr, addr+n) to one memory: the host
// window, an HBM channel, or one on-chip window. A range that crosses a
// boundary, or lands nowhere, is an error wrapping dma.ErrNoMemory; a
// neighbour-device window is dma.ErrNeighbour until a fabric routes it.
func (d *Device) decode(addr uint64, n int) (target, error) {
	end := addr + uint64(n)
	if n <= 0 || end < addr {
		return target{}, fmt.Errorf("sim device %s: DMA range [%#x, +%d): %w", d.cfg.Name, addr, n, dma.ErrNoMemory)
	}
	if d.hbmApart { // HBM first, the usual case: the order below would give the same
		if t, ok, err := d.hbmTarget(addr, end, n); ok {
			return t, err
		}
	}
	if pa, ok := d.geo.IsHostAddress(addr); ok {
		if err := d.host.Check(pa, n); err != nil {
			return target{}, fmt.Errorf("sim device %s: DMA host address %#x: %w: %w", d.cfg.Name, addr, dma.ErrNoMemory, err)
		}
		return target{dma.Host, targetHost, pa}, nil
	}
	if _, _, ok := hwarch.DecodeFabricAddress(addr); ok {
		return d.remote(addr, n)
	}
	if _, _, ok := d.geo.NeighbourWindow(addr); ok {
		return d.remote(addr, n)
	}
	if !d.hbmApart {
		if t, ok, err := d.hbmTarget(addr, end, n); ok {
			return t, err
		}
	}
	w, rel, ok := d.atlas.LookupDevice(addr)
	if !ok {
		return target{}, fmt.Errorf("sim device %s: DMA address %#x: %w", d.cfg.Name, addr, dma.ErrNoMemory)
	}
	if rel+uint64(n) > w.Size {
		return target{}, fmt.Errorf("sim device %s: DMA range [%#x, +%d) runs past window %s: %w", d.cfg.Name, addr, n, w.Name, dma.ErrNoMemory)
	}
	if last, _, _ := d.atlas.LookupDevice(end - 1); last != w {
		return target{}, fmt.Errorf("sim device %s: DMA range [%#x, +%d) crosses from %s into %s: %w", d.cfg.Name, addr, n, w.Name, last.Name, dma.ErrNoMemory)
	}
	off := w.Start + rel
	switch w.Kind {
	case bar.SBUF, bar.PSUM, bar.TopSP, bar.APB:
		return target{dma.OnChip, targetRegs, off}, nil
	}
	if addr%4 != 0 || n%4 != 0 {
		return target{}, fmt.Errorf("sim device %s: DMA range [%#x, +%d) into registers of %s is not whole words: %w", d.cfg.Name, addr, n, w.Name, dma.ErrNoMemory)
	}
	return target{dma.OnChip, targetWords, off}, nil
}

// hbmTarget resolves a range [addr, end) of n bytes that starts in an HBM
// channel (ok), or reports that it does not start in one.
func (d *Device) hbmTarget(addr, end uint64, n int) (t target, ok bool, err error) {
	for ch, c := range d.geo.HBM {
		if addr >= c.Base && addr-c.Base < d.hbmSize[ch] {
			if end-c.Base > d.hbmSize[ch] {
				return target{}, true, fmt.Errorf("sim device %s: DMA range [%#x, +%d) runs past HBM channel %d: %w", d.cfg.Name, addr, n, ch, dma.ErrNoMemory)
			}
			return target{dma.HBM, targetHBM, addr}, true, nil
		}
	}
	return target{}, false, nil
}

// hbmApart reports whether no address of an HBM channel (of the sizes
// given) is also in the host window, a neighbour window or the fabric
// window, so that decode may try the channels first.
func hbmApart(geo *hwarch.Geometry, sizes []uint64) bool {
	for ch, c := range geo.HBM {
		lo, hi := c.Base, c.Base+sizes[ch] // [lo, hi)
		switch {
		case sizes[ch] == 0:
			continue
		case hi < lo: // runs past the top of the address space
			return false
		case hi > hwarch.FabricWindowBit: // every fabric address has the bit set
			return false
		}
		if b := geo.HostAddressBit; b != 0 && b<<1 != 0 && lo < b<<1 && hi > b { // the host window is [b, 2b)
			return false
		}
		for _, w := range geo.NeighbourWindows {
			if lo < w+hwarch.NeighbourWindowSize && hi > w {
				return false
			}
		}
	}
	return true
}

// remote classes a range in a neighbour or fabric window: the fabric
// resolves it when the write is reserved. A range must not run out of its
// window; a device alone has no fabric (dma.ErrNeighbour).
func (d *Device) remote(addr uint64, n int) (target, error) {
	if d.fabric == nil {
		return target{}, fmt.Errorf("sim device %s: DMA address %#x in a neighbour or fabric window of a device with no fabric: %w", d.cfg.Name, addr, dma.ErrNeighbour)
	}
	last := addr + uint64(n) - 1
	if d0, _, ok := hwarch.DecodeFabricAddress(addr); ok { // the usual case: one bit test, before the window search
		if d1, _, ok := hwarch.DecodeFabricAddress(last); ok && d0 == d1 {
			return target{class: dma.Remote, kind: targetRemote}, nil
		}
	}
	s0, _, nb0 := d.geo.NeighbourWindow(addr)
	s1, _, nb1 := d.geo.NeighbourWindow(last)
	if !(nb0 && nb1 && s0 == s1) {
		return target{}, fmt.Errorf("sim device %s: DMA range [%#x, +%d) runs out of its neighbour or fabric window: %w", d.cfg.Name, addr, n, dma.ErrNoMemory)
	}
	return target{class: dma.Remote, kind: targetRemote}, nil
}

// AttachFabric joins the device to a system's fabric: its DMA writes into
// neighbour and fabric windows go to f (sim/fabric). nil detaches it.
func (d *Device) AttachFabric(f dma.Fabric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fabric = f
}

// Reserve implements dma.Fabric through the attached fabric.
func (b *deviceBus) Reserve(e, q int, dst uint64, n int, start, sent Time) (injected, lands Time, err error) {
	d := (*Device)(b)
	if d.fabric == nil {
		return 0, 0, fmt.Errorf("sim device %s: no fabric: %w", d.cfg.Name, dma.ErrNeighbour)
	}
	return d.fabric.Reserve(e, q, dst, n, start, sent)
}

// Post implements dma.Fabric through the attached fabric.
func (b *deviceBus) Post(e, q int, dst uint64, n int, p []byte, r udma.Reduce, lands Time) error {
	d := (*Device)(b)
	if d.fabric == nil {
		return fmt.Errorf("sim device %s: no fabric: %w", d.cfg.Name, dma.ErrNeighbour)
	}
	return d.fabric.Post(e, q, dst, n, p, r, lands)
}

// Land writes bytes that arrived over the fabric into the device's own
// memory at device address addr — HBM, an on-chip window, or a register
// window with register semantics (a semaphore increment) — combined with
// what is there per r. It is called from the system's event loop, which
// holds the system's lock: it does not lock. A range that is not the
// device's own memory is an error and writes nothing.
func (d *Device) Land(addr uint64, p []byte, r udma.Reduce) error {
	if d.st.Phase != PhaseReady || d.st.Closed {
		return fmt.Errorf("sim device %s: a write landing at %#x while the device is %s: %w", d.cfg.Name, addr, d.st.Phase, ErrNotReady)
	}
	t, err := d.decode(addr, len(p))
	if err != nil {
		return err
	}
	if t.class == dma.Remote {
		return fmt.Errorf("sim device %s: a landing write at %#x is not in the device's own memory: %w", d.cfg.Name, addr, dma.ErrNoMemory)
	}
	if r.Op == udma.ReduceNone {
		return d.writeTarget(addr, t, p)
	}
	cur := make([]byte, len(p))
	if err := d.readTarget(addr, t, cur); err != nil {
		return err
	}
	if err := dma.Combine(r, cur, p); err != nil {
		return err
	}
	return d.writeTarget(addr, t, cur)
}

// ErrNotReady is returned by Land when the device is not ready (booting, in
// a device reset, or closed): the write is lost, as on hardware.
var ErrNotReady = errors.New("device not ready")

// Engine returns the device's event engine (the system's, for a device of
// a system). Use it only under the device's lock, or from an event handler.
func (d *Device) Engine() *Engine { return d.engine }

// Check implements dma.Bus. The two classes of nearly every address a
// descriptor pair names — this device's HBM, a fabric-window address —
// are found first, without decode, where decode would find them first too
// (fastCheck); any other address, and every error, is decode's.
func (b *deviceBus) Check(addr uint64, n int) (dma.Class, error) {
	d := (*Device)(b)
	if d.fastCheck != nil && n > 0 {
		if addr&hwarch.FabricWindowBit != 0 { // in no HBM channel, nor the host window: decode gives remote(addr, n)
			d0, _, ok0 := hwarch.DecodeFabricAddress(addr)
			d1, _, ok1 := hwarch.DecodeFabricAddress(addr + uint64(n) - 1)
			if ok0 && ok1 && d0 == d1 && d.fabric != nil {
				return dma.Remote, nil
			}
		} else {
			for _, r := range d.fastCheck { // hbmTarget's channels, in its order
				if rel := addr - r.base; rel < r.size {
					if uint64(n) <= r.size-rel {
						return dma.HBM, nil
					}
					break // runs past the channel: decode's error
				}
			}
		}
	}
	t, err := d.decode(addr, n)
	return t.class, err
}

// hbmRange is an HBM channel as deviceBus.Check's fast path tries it: its
// base and its size (Device.hbmSize).
type hbmRange struct{ base, size uint64 }

// fabricApart reports whether no fabric-window address is also in the host
// window, which decode tries before the fabric window. A host window that
// is not one bit's [b, 2b) counts as overlapping.
func fabricApart(geo *hwarch.Geometry) bool {
	b := geo.HostAddressBit
	switch {
	case b == 0 || b<<1 == 0: // no host address at all (IsHostAddress)
		return true
	case b&(b-1) != 0:
		return false
	}
	return b<<1 <= hwarch.FabricWindowBit // every fabric address is at least the bit
}

// hostAccess reads or writes host memory straight away for an address in
// the host window (ok), checking the range once, as decode would.
func (d *Device) hostAccess(addr uint64, p []byte, write bool) (ok bool, err error) {
	pa, ok := d.geo.IsHostAddress(addr)
	if !ok {
		return false, nil
	}
	if write {
		err = d.host.Write(pa, p)
	} else {
		err = d.host.Read(pa, p)
	}
	return true, d.hostErr(addr, err)
}

// remoteAccess refuses a plain read or write of a neighbour or fabric
// address (an instruction fetch from one, say): another device's memory is
// reached only by a DMA write the fabric carries.
func (d *Device) remoteAccess(addr uint64, n int) error {
	return fmt.Errorf("sim device %s: DMA range [%#x, +%d) is another device's memory, reached only by a write through the fabric: %w", d.cfg.Name, addr, n, dma.ErrNeighbour)
}

// hostErr wraps a host port's error for device address addr.
func (d *Device) hostErr(addr uint64, err error) error {
	if err != nil {
		return fmt.Errorf("sim device %s: DMA host address %#x: %w: %w", d.cfg.Name, addr, dma.ErrNoMemory, err)
	}
	return nil
}

// ReadDMA implements dma.Bus.
func (b *deviceBus) ReadDMA(addr uint64, p []byte) error {
	d := (*Device)(b)
	if ok, err := d.hostAccess(addr, p, false); ok {
		return err
	}
	t, err := d.decode(addr, len(p))
	if err != nil {
		return err
	}
	return d.readTarget(addr, t, p)
}

// readTarget reads p at device address addr, which decode resolved to t.
func (d *Device) readTarget(addr uint64, t target, p []byte) error {
	switch t.kind {
	case targetRemote:
		return d.remoteAccess(addr, len(p))
	case targetHBM:
		return d.hbm.Read(t.addr, p)
	case targetHost:
		return d.hostErr(addr, d.host.Read(t.addr, p))
	case targetRegs:
		return d.regs.Read(t.addr, p)
	}
	for i := 0; i < len(p); i += 4 {
		v := d.regRead(t.addr + uint64(i))
		p[i], p[i+1], p[i+2], p[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return nil
}

// WriteDMA implements dma.Bus.
func (b *deviceBus) WriteDMA(addr uint64, p []byte) error {
	d := (*Device)(b)
	if ok, err := d.hostAccess(addr, p, true); ok {
		return err
	}
	t, err := d.decode(addr, len(p))
	if err != nil {
		return err
	}
	return d.writeTarget(addr, t, p)
}

// writeTarget writes p at device address addr, which decode resolved to t.
func (d *Device) writeTarget(addr uint64, t target, p []byte) error {
	switch t.kind {
	case targetRemote:
		return d.remoteAccess(addr, len(p))
	case targetHBM:
		return d.hbm.Write(t.addr, p)
	case targetHost:
		return d.hostErr(addr, d.host.Write(t.addr, p))
	case targetRegs:
		return d.regs.Write(t.addr, p)
	}
	for i := 0; i < len(p); i += 4 {
		d.regWrite(t.addr+uint64(i), uint32(p[i])|uint32(p[i+1])<<8|uint32(p[i+2])<<16|uint32(p[i+3])<<24)
	}
	return nil
}

// CopyDMA implements dma.Copier: HBM to HBM and on-chip to on-chip page to
// page; anything else through a bounce buffer.
func (b *deviceBus) CopyDMA(dst, src uint64, n int) error {
	d := (*Device)(b)
	s, err := d.decode(src, n)
	if err != nil {
		return err
	}
	t, err := d.decode(dst, n)
	if err != nil {
		return err
	}
	switch {
	case s.kind == targetHBM && t.kind == targetHBM:
		return d.hbm.Copy(t.addr, s.addr, uint64(n))
	case s.kind == targetRegs && t.kind == targetRegs:
		return d.regs.Copy(t.addr, s.addr, uint64(n))
	}
	if cap(d.bounce) < n {
		d.bounce = make([]byte, max(n, 64*1024))
	}
	p := d.bounce[:n]
	if err := d.readTarget(src, s, p); err != nil { // decoded already: no second decode
		return err
	}
	return d.writeTarget(dst, t, p)
}

// Host memory, as the runtime's allocator of DMA buffers sees it (the
// optional ndl.HostMemory and ndl.LazyHostMemory interfaces).

// HostAlloc allocates a zeroed host buffer and returns its physical
// address. A device whose host port is not the host-memory model (a
// guest's memory) has no allocator: ErrNoHostModel.
func (d *Device) HostAlloc(size, align uint64) (uint64, error) {
	h, err := d.hostModel("host alloc")
	if err != nil {
		return 0, err
	}
	return h.Alloc(size, align)
}

// HostAllocLazy allocates a lazy host buffer (HostMemory.AllocLazy: the
// device's reads of it — its DMA engines' descriptor and data fetches, and
// HostRead — call fill; the engines' run on the goroutine driving the
// device, under the device's lock, so fill must not call the device;
// HostWrite to it is refused with ErrHostLazy) and returns its physical
// address: the runtime's ndl.LazyHostMemory. ErrNoHostModel as HostAlloc.
func (d *Device) HostAllocLazy(size, align uint64, fill func(off uint64, p []byte) error) (uint64, error) {
	h, err := d.hostModel("host alloc lazy")
	if err != nil {
		return 0, err
	}
	return h.AllocLazy(size, align, fill)
}

// HostFree frees a host buffer; ErrNoHostModel as HostAlloc.
func (d *Device) HostFree(pa uint64) error {
	h, err := d.hostModel("host free")
	if err != nil {
		return err
	}
	return h.Free(pa)
}

// HostBufferLimit returns the most host buffers the device's host-memory
// allocator holds live at once, all its users together (MaxHostBuffers;
// the devices of one system share one allocator), or 0 when the device has
// none (its host port is a guest's memory): the runtime's optional
// ndl.HostBufferLimit, against which the remote server checks its
// per-connection buffer quotas.
func (d *Device) HostBufferLimit() int {
	if d.hostMem == nil {
		return 0
	}
	return MaxHostBuffers
}

// HostRead reads host memory through the device's host port.
func (d *Device) HostRead(pa uint64, p []byte) error { return d.host.Read(pa, p) }

// HostWrite writes host memory through the device's host port.
func (d *Device) HostWrite(pa uint64, p []byte) error { return d.host.Write(pa, p) }

// HostMemory returns the device's host-memory model, nil when its host
// port is something else (a guest's memory).
func (d *Device) HostMemory() *HostMemory { return d.hostMem }

// HostPort returns where the device's host-window DMA goes.
func (d *Device) HostPort() HostPort { return d.host }

// DMAQueue returns a copy of a DMA queue's state, for tests and reports.
func (d *Device) DMAQueue(engine, queue int) (dma.QueueState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dma.Queue(engine, queue)
}

// DMA returns the device's DMA timing model and whether payloads move.
func (d *Device) DMA() (dma.Timing, bool) { return d.dma.Timing(), d.dma.Functional() }

// DMATotals returns what the device's DMA engines have done since power-on
// (or the last function-level reset): descriptor pairs completed and bytes
// moved, over every queue of every engine.
func (d *Device) DMATotals() (pairs, bytes uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dma.Totals()
}
