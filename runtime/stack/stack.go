// Package stack is the runtime's stack on one device, opened once: the
// device brought up (runtime/bringup), its DMA layer (runtime/dma) and its
// device-memory allocator (runtime/dmem) sized from the device's HBM
// channels as bring-up read them, with program runners (runtime/program)
// and DVE loaders (runtime/dve) over them.
//
// Every user of the runtime on a device opens it here — the command line
// (dve, dma copy, exec, csr, ls), internal/cluster for every device of a
// simulated system — so the sequence bring-up → dma.New → dmem.New and its
// options exist once. It works on any ndl.Device: a local simulated device,
// a served one (runtime/ndl/remote) or the kernel driver's (registers
// only: the driver's device has no host memory for DMA rings, see
// Options.RegistersOnly).
//
// The flows the command line runs on a stack — a copy through an NC's H2T
// queue (Copy), a program run with its inputs and outputs (Exec), a DVE
// load read back through csr_read (VerifyDVE) — live here too, so that the
// commands are flag parsing, one call and printing.
//
// Errors are those of the layers, which name themselves (bring-up, dma:,
// dmem:); the package adds no prefix of its own, so a caller that names
// the device (cluster: device 3: ...) reads the same either way.
package stack

import (
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/dve"
	rtisa "github.com/neuronsim/neuronsim/runtime/isa"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// Options tune how a stack is opened.
type Options struct {
	// BringUp is the bring-up's options: reset or not (NoReset), the
	// NeuronSwitch family, the arch selection shared by the devices of one
	// runtime (Dispatch), the region table (Table).
	BringUp bringup.Options
	// WaitReset waits out a reset in progress after bring-up
	// (bringup.Device.WaitResetDone): a device another party reset, or
	// one whose firmware reset bring-up started, is ready before the DMA
	// layer opens.
	WaitReset bool
	// RegistersOnly brings the device up for register access only: no DMA
	// layer and no device-memory allocator (DMA and Mem stay nil). A
	// listing or a csr command needs nothing more, and a backend without
	// host memory (the kernel driver's device) can still be opened.
	RegistersOnly bool
	// Validator checks programs before they run (Runner); nil: the
	// runtime's validators for the device's arch tables (runtime/isa),
	// made once when the stack opens.
	Validator program.Validator
}

// Stack is the runtime's side of one device: brought up, with its DMA
// layer and device-memory allocator.
type Stack struct {
	// Up is the brought-up device: identity, geometry, arch tables, the
	// csr layer.
	Up *bringup.Device
	// DMA is the device's DMA layer (nil with Options.RegistersOnly).
	DMA *dma.DMA
	// Mem is the device's memory allocator, sized from the HBM channels as
	// bring-up read them (nil with Options.RegistersOnly).
	Mem *dmem.Allocator

	opts      Options
	validator program.Validator
}

// Open brings dev up and opens its DMA layer and device-memory allocator.
func Open(dev ndl.Device, opts Options) (*Stack, error) {
	s := &Stack{opts: opts, validator: opts.Validator}
	if err := s.bringUp(dev); err != nil {
		return nil, err
	}
	if opts.RegistersOnly {
		return s, nil
	}
	mem, err := dmem.New(s.Up.Geometry, dmem.Options{ChannelBytes: s.Up.HBMChannelBytes})
	if err != nil {
		return nil, err
	}
	s.Mem = mem
	if s.validator == nil {
		s.validator = rtisa.New(s.Up.Tables)
	}
	return s, nil
}

// bringUp brings dev up (waiting out a reset when asked) and, unless the
// stack is for registers only, opens its DMA layer; it sets Up and DMA
// only when both are open.
func (s *Stack) bringUp(dev ndl.Device) error {
	up, err := bringup.BringUp(dev, s.opts.BringUp)
	if err == nil && s.opts.WaitReset {
		err = up.WaitResetDone()
	}
	if err != nil {
		return err
	}
	var m *dma.DMA
	if !s.opts.RegistersOnly {
		if m, err = dma.New(up); err != nil {
			return err
		}
	}
	s.Up, s.DMA = up, m
	return nil
}

// Reopen brings the device up again with the bring-up options given (the
// stack's other options stay) and opens a new DMA layer on it, keeping
// the device-memory allocator: what a runtime does after its device was
// reset under it (the engines and queues are back to power-on; the
// allocations it made are still its own). Program runners and DVE loaders
// made before hold the old layers; make new ones. The old DMA layer's
// host word is given back (dma.DMA.Close) once the new layer is open. On a
// failure to bring the device up or open the new layer the stack is left
// as it was; a failure to give the old word back is returned with the
// stack already on the new layers.
func (s *Stack) Reopen(opts bringup.Options) error {
	o := s.opts
	o.BringUp = opts
	n := &Stack{opts: o}
	if err := n.bringUp(s.Up.Dev); err != nil {
		return err
	}
	old := s.DMA
	s.opts, s.Up, s.DMA = o, n.Up, n.DMA
	if old != nil {
		return old.Close()
	}
	return nil
}

// Tables returns the device's arch tables (as bring-up selected them).
func (s *Stack) Tables() *arch.Tables { return s.Up.Tables }

// Validator returns the program validator of the stack's runners
// (Options.Validator, or the runtime's for the device's tables; nil with
// Options.RegistersOnly).
func (s *Stack) Validator() program.Validator { return s.validator }

// Runner returns a program runner on NeuronCore nc of the device, with the
// device's arch tables and the stack's validator. nc is not checked here
// (CheckCore does): the runner's accesses refuse a core the device does
// not have.
func (s *Stack) Runner(nc int) *program.Runner {
	return &program.Runner{Dev: s.Up, DMA: s.DMA, Mem: s.Mem, Tables: s.Up.Tables, Validator: s.Validator(), NC: nc}
}

// DVELoader returns a DVE table loader over the stack's DMA layer and
// memory allocator (dve_dynamic_config_init), with the device's tables.
func (s *Stack) DVELoader() *dve.Loader { return dve.NewLoader(s.DMA, s.Mem, s.Up.Tables) }

// Clock reads the device's clock now and returns a function that gives the
// picoseconds of device time passed since (ndl.ElapsedPS: the simulated
// device's clock, local or served; host wall time for a backend without
// one).
func (s *Stack) Clock() (func() (uint64, error), error) { return ndl.ElapsedPS(s.Up.Dev) }
