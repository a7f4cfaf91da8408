package sim

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/simkernel"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// The NeuronCores of a device: each core's engines fetch from device memory
// through the DMA bus, compute on the NC's SBUF and PSUM windows (the
// register-BAR backing), share the NC's semaphores and events with MMIO and
// DMA, ring DMA doorbells, and schedule their records on the device's clock.

// coreEnv is the device as NC nc's core sees it.
type coreEnv struct {
	d  *Device
	nc int
}

// Now returns the device clock.
func (e *coreEnv) Now() Time { return e.d.engine.Now() }

// Schedule runs the core's Fire(arg) at time at.
func (e *coreEnv) Schedule(at Time, arg uint64) {
	if err := e.d.engine.Schedule(at, e.d.hCore[e.nc], arg); err != nil {
		e.d.st.Stats.LostEvents++
	}
}

// Fetch reads device memory (instruction fetch).
func (e *coreEnv) Fetch(addr uint64, p []byte) error { return (*deviceBus)(e.d).ReadDMA(addr, p) }

// Doorbell rings a DMA queue: S2M tail_inc, then M2S.
func (e *coreEnv) Doorbell(engine, queue int, n uint32) error {
	if err := e.d.dma.Doorbell(engine, queue, n); err != nil { // no such engine or queue
		return fmt.Errorf("sim device %s: doorbell of DMA engine %d queue %d: %w", e.d.cfg.Name, engine, queue, udma.ErrEngine)
	}
	return nil
}

// SyncChanged is called by the core after its own signals; they only
// concern its own NC, which the core handles itself.
func (e *coreEnv) SyncChanged() {}

// windowMem is one of an NC's on-chip windows in the register backing.
type windowMem struct {
	m    *Memory
	base uint64
	size uint64
}

// Read reads the window at byte offset off.
func (w windowMem) Read(off uint64, p []byte) error {
	if off > w.size || uint64(len(p)) > w.size-off {
		return fmt.Errorf("sim: on-chip window access [%#x, +%d) past %#x: %w", off, len(p), w.size, ErrAddressRange)
	}
	return w.m.Read(w.base+off, p)
}

// Write writes the window at byte offset off.
func (w windowMem) Write(off uint64, p []byte) error {
	if off > w.size || uint64(len(p)) > w.size-off {
		return fmt.Errorf("sim: on-chip window access [%#x, +%d) past %#x: %w", off, len(p), w.size, ErrAddressRange)
	}
	return w.m.Write(w.base+off, p)
}

// newCores builds a core per NC.
func (d *Device) newCores() error {
	m := d.geo.BAR0
	d.cores = make([]*tpb.Core, d.geo.NeuronCores)
	d.hCore = make([]HandlerID, d.geo.NeuronCores)
	for nc := range d.cores {
		c, err := tpb.NewCore(tpb.Config{
			Generation: d.geo.Generation, NC: nc,
			SBUF: windowMem{d.regs, m.TPBWindow(nc), d.geo.SBUFWindowSize},
			PSUM: windowMem{d.regs, m.TPBWindow(nc) + m.PSUMOffset, d.geo.PSUMSize},
			Sync: &d.st.NCSync[nc],
			Env:  &coreEnv{d, nc},
		})
		if err != nil {
			return fmt.Errorf("sim device %s: NC %d: %w", d.cfg.Name, nc, err)
		}
		d.cores[nc] = c
		if d.hCore[nc], err = d.register(fmt.Sprintf("tpb%d", nc), c); err != nil { // the core's Fire
			return err
		}
	}
	return nil
}

// engineCtrl splits an EngineCtrl window's index into NC and engine.
func engineCtrl(index int) (nc, eng int) { return index / int(isa.TopSP), index % int(isa.TopSP) }

// Core returns NC nc's core (for statistics and traces).
func (d *Device) Core(nc int) (*tpb.Core, error) {
	if nc < 0 || nc >= len(d.cores) {
		return nil, fmt.Errorf("sim device %s: NC %d: the device has %d", d.cfg.Name, nc, len(d.cores))
	}
	return d.cores[nc], nil
}

// Tracer receives the device's slices: every DMA transfer and every record
// an engine runs (sim/trace.Recorder is one).
// It is the kernel's [simkernel.Tracer].
type Tracer = simkernel.Tracer

// SetTrace sends the device's DMA transfers and engine records to t (nil:
// none).
func (d *Device) SetTrace(t Tracer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dma.SetTrace(t)
	for _, c := range d.cores {
		c.SetTrace(t)
	}
}
