package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/bar"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// The continuation property of a device alone: a device snapshotted part
// way through a sequence of operations and restored from the snapshot goes
// on exactly as the device it was taken from, and as a device that was
// never snapshotted (taking a snapshot changes nothing).
//
// A sequence is a FuzzDeviceBAR input: its three-byte header
// (decodeDevFuzzConfig: generation, revision, ready flag, firmware timing)
// and its operations, each a code byte and its operands. fopClose (0xFF)
// closes the device; any other code byte c is c % copCount. Codes below
// fopCount are FuzzDeviceBAR's own operations, decoded by decodeDevOp;
// the codes from fopCount on are this test's (contOp, whose fields say each
// one's operand bytes): DMA engine and queue registers, the driver's copy
// through descriptor rings in HBM, semaphores and events, NeuronCore engine
// registers, programs fetched from HBM, host memory, a function-level
// reset, and the clock advanced by SleepUntil, AdvanceTo and RunAhead.
//
// Every device of a sequence gets, before its first operation, one host
// buffer of contHostSize bytes (the DMA copies' host memory) and records
// that end any run that starts on them, where an engine may be started
// (contPrime).

// Operation codes after FuzzDeviceBAR's (fopRead32 … fopQEMUReset).
const (
	copDMAReg     = fopCount + iota // a DMA engine or queue register, read or written
	copDMACopy                      // the driver's copy: descriptors written into rings in HBM, the queue rung
	copSync                         // a semaphore or event of an NC or a TOP_SP, read or written
	copEngineReg                    // a NeuronCore engine's control register, read or written
	copProgram                      // records written into HBM, an NC engine started on them
	copHost                         // host memory: alloc, free, write or read
	copFLR                          // a function-level reset
	copSleepUntil                   // SleepUntil now + d, a few events at most
	copAdvance                      // AdvanceTo (a time ahead or behind) or RunAhead
	copCount
)

// copNames name the operation codes in failure messages.
var copNames = [copCount]string{"read32", "write32", "readBAR", "writeBAR", "sleep", "mailbox-reset", "qemu-reset",
	"dma-reg", "dma-copy", "sync", "engine-reg", "program", "host", "flr", "sleep-until", "advance"}

// copOperands is how many operand bytes each of this test's codes takes.
var copOperands = [copCount]int{
	copDMAReg: 4, copDMACopy: 8, copSync: 5, copEngineReg: 4, copProgram: 11,
	copHost: 3, copFLR: 0, copSleepUntil: 3, copAdvance: 3,
}

// Sizes of a sequence.
const (
	contMaxOps   = 64               // operations a fuzzed sequence runs at most
	contHostSize = 256 << 10        // the host buffer every device gets first
	contEndSleep = time.Millisecond // what every device sleeps after the last operation: past every reset and boot of the fuzz firmware timings
	contRing     = udma.MinRing     // descriptors in each ring of the copies' queues
	contTableOps = 600              // operations of each sequence of TestDeviceSnapshotContinues
)

// contOp is one operation of a sequence. Its operand bytes (b) say, by
// code:
//
//	dma-reg     [e s r w] v: engine contEngine(e); half S2M if s is odd,
//	            queue (s>>1)%16; register dmaRegs[r%len]; a write of v
//	            if w is odd, else a read
//	dma-copy    [e q k src dst len flags fill]: on queue q%4 of engine
//	            slot e%4 (contEnv.engines), 1+k%4 descriptor pairs of
//	            contLen(len) bytes each from place(src) to place(dst),
//	            written into the queue's rings in HBM at the driver's
//	            next slots and phase (contDriver); flags bit 4: write
//	            the engine's change_state NORMAL first; bit 0: reset and
//	            program the queue first; bit 3: fill 64 bytes of the
//	            source with fill first; bits 1-2: then ring no doorbell
//	            (0), the S2M half's (1), or both halves' (2, 3), for every
//	            pair written and not yet rung
//	sync        [blk bank idx w v]: the synchronisation block blk names
//	            (syncBase), bank bank%5 (events, READ, SET, INCR, DECR),
//	            index idx%8 (idx itself when ≥ 224); a write of v if w is
//	            odd, else a read
//	engine-reg  [nc eng r w] v: NC nc%NCs, engine eng%5, register
//	            engineRegs[r%len]; a write if w is odd, else a read. A
//	            write of START_CTRL writes run if v%4 is 0, halt if 1,
//	            else v; of the PC, when v is even, the address of record
//	            (v>>1)%8 of the program area of the engine on NC nc%2,
//	            else v (misaligned: the start fails)
//	program     [nc eng k r0 … r7]: 1+k%8 records of kinds r0… (record)
//	            for engine eng%5 of NC nc%2, written at its program
//	            area in HBM (contEnv.program), then PC and START_CTRL run
//	host        [kind a b]: kind%4 0 alloc (1+a%16 pages, aligned 4
//	            KiB << b%4), 1 free buffer a, 2 write 64 bytes to buffer
//	            a at b·64, 3 read 16 bytes of buffer a at b·64, where
//	            buffer a is contDriver.host[a % len] (0 the first buffer)
//	flr         []: FunctionReset
//	sleep-until [d0 d1 m]: SleepUntil(now + (d0|d1<<8)·10 ns, 1+m%4)
//	advance     [kind d0 d1]: kind%3 0 AdvanceTo(now + d), 1 AdvanceTo
//	            (now − d), 2 RunAhead(d), d = (d0|d1<<8)·10 ns
type contOp struct {
	code byte     // fopClose, or the code byte modulo copCount
	dev  devOp    // codes below fopCount and fopClose: FuzzDeviceBAR's operation
	b    [11]byte // this test's codes: the operand bytes (copOperands of them)
	v    uint32   // dma-reg and engine-reg: the value a write writes
}

// String is the operation's name and operands, for failure messages.
func (o contOp) String() string {
	switch {
	case o.code == fopClose:
		return "close"
	case o.code < fopCount:
		return fmt.Sprintf("%s %+v", copNames[o.code], o.dev)
	}
	return fmt.Sprintf("%s %v v=%#x", copNames[o.code], o.b[:copOperands[o.code]], o.v)
}

// decodeContOp decodes the next operation of in for the device env
// describes.
func decodeContOp(in *devFuzzIn, env *contEnv) contOp {
	c := in.u8()
	if c == fopClose {
		return contOp{code: fopClose, dev: devOp{code: fopClose}}
	}
	o := contOp{code: c % copCount}
	if o.code < fopCount {
		o.dev = decodeDevOp(in, o.code, env.geo, env.reg, env.bases)
		return o
	}
	for i := range copOperands[o.code] {
		o.b[i] = in.u8()
	}
	if o.code == copDMAReg || o.code == copEngineReg {
		o.v = in.u32()
	}
	return o
}

// decodeContOps decodes the operations of in, at most max of them.
func decodeContOps(in *devFuzzIn, env *contEnv, max int) []contOp {
	var ops []contOp
	for in.more() && len(ops) < max {
		ops = append(ops, decodeContOp(in, env))
	}
	return ops
}

// contEnv is what the operations of a sequence need to know of its
// devices, the same for all three (they share a configuration): the
// geometry, the register BAR, FuzzDeviceBAR's bases, the DMA engines the
// copies use, and the device addresses the copies move data between.
type contEnv struct {
	geo     *hwarch.Geometry
	reg     int
	bases   []uint64
	atlas   *bar.Atlas
	bar4    []bar.HBMWindow
	engines [4]int // the copies' engine slots: NC 0's first, NC 1's second, NC 0's H2T engine, the last engine
	hostPA  uint64 // the first host buffer, contHostSize bytes
	hbm0    uint64 // HBM channel 0: rings at +1 MiB, data at +2 MiB, programs at +4 MiB
	hbmLast uint64 // the last HBM channel's data, at +8 MiB
	hbmEnd  uint64 // 16 bytes before the end of channel 0
	sbuf    uint64 // NC 0's SBUF
	psum    uint64 // NC 1's PSUM
	semIncr uint64 // NC 1's semaphore INCR bank
	topSP   uint64 // TOP_SP 0's window, past its sync block
	misc    uint64 // the MISC RAM mailbox, through the device's address space
	far     uint64 // a neighbour window (none on V2: a misaligned HBM address instead)
}

// newContEnv describes d, whose first host buffer is at hostPA.
func newContEnv(t testing.TB, d *Device, hostPA uint64) *contEnv {
	t.Helper()
	geo := d.Geometry()
	e := &contEnv{geo: geo, reg: d.RegisterBAR(), bases: fuzzBases(d), atlas: d.Atlas(), bar4: d.BAR4().Windows(), hostPA: hostPA}
	h2t, _, err := udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	e.engines = [4]int{0, geo.DMAEnginesPerNC + 1, h2t, geo.DMAEngines - 1}
	win := func(k bar.Kind, i int) uint64 {
		w, ok := d.Atlas().Window(k, i)
		require.True(t, ok, "window %v %d", k, i)
		return w.DeviceAddr
	}
	e.hbm0 = geo.HBM[0].Base
	e.hbmLast = geo.HBM[len(geo.HBM)-1].Base + 8<<20
	e.hbmEnd = geo.HBM[0].Base + d.hbmSize[0] - 16
	e.sbuf = win(bar.SBUF, 0)
	e.psum = win(bar.PSUM, 1)
	e.semIncr = win(bar.NCSync, 1) + tpb.SemIncrOffset
	e.topSP = win(bar.TopSP, 0) + tpb.SyncSize
	e.misc = win(bar.Misc, 0)
	e.far = e.hbm0 + 2<<20 + 3 // V2: a misaligned HBM address (the engines take it)
	if len(geo.NeighbourWindows) > 0 {
		e.far = geo.NeighbourWindows[0]
	}
	return e
}

// place is the device address a copy's selector byte s names: s%10 picks
// HBM channel 0's data, the last channel's, the host buffer, NC 0's SBUF,
// NC 1's PSUM, NC 1's semaphore INCR bank, TOP_SP 0, the MISC RAM (the
// mailbox, with register semantics), the end of channel 0 (a long copy
// runs past it) or a neighbour window; s/10 the offset within it.
func (e *contEnv) place(s byte) uint64 {
	i := uint64(s / 10)
	switch s % 10 {
	case 0:
		return e.hbm0 + 2<<20 + i%16*64<<10
	case 1:
		return e.hbmLast + i%16*64<<10
	case 2:
		return e.geo.HostAddress(e.hostPA + i%4*64<<10)
	case 3:
		return e.sbuf + i*0x1000
	case 4:
		return e.psum + i*0x800
	case 5:
		return e.semIncr + 4*(i%8)
	case 6:
		return e.topSP + i*0x100
	case 7:
		return e.misc + 4*i
	case 8:
		return e.hbmEnd
	}
	return e.far + 64*i
}

// contLen is the bytes a copy's length byte names: 4, 8, 64, 1000, 4 KiB,
// 16 KiB, 64 KiB, or 1 to 32.
func contLen(l byte) int {
	if k := l % 8; k < 7 {
		return []int{4, 8, 64, 1000, 4096, 16384, 65536}[k]
	}
	return 1 + int(l>>3)%32
}

// ring is the device address of the ring of one half of queue q of engine
// slot es: 32 descriptors each, at HBM channel 0 + 1 MiB.
func (e *contEnv) ring(es, q int, half uint64) uint64 {
	r := e.hbm0 + 1<<20 + uint64(es*4+q)*0x400
	if half == udma.S2M {
		r += 0x200
	}
	return r
}

// program is the device address of the program area of engine eng of NC nc.
func (e *contEnv) program(nc, eng int) uint64 {
	return e.hbm0 + 4<<20 + uint64(nc*int(isa.TopSP)+eng)*0x1000
}

// bar4Off returns the BAR4 offset of device address addr, if BAR4 maps it.
func (e *contEnv) bar4Off(addr uint64) (uint64, bool) {
	for _, w := range e.bar4 {
		if addr >= w.DeviceAddr && addr-w.DeviceAddr < w.Size {
			return w.BAR4Offset + addr - w.DeviceAddr, true
		}
	}
	return 0, false
}

// contEngine is the DMA engine a dma-reg engine byte names: one of the
// copies' four, or (e ≥ 192) any engine.
func (e *contEnv) contEngine(b byte) int {
	if b >= 192 {
		return int(b) % e.geo.DMAEngines
	}
	return e.engines[b%4]
}

// dmaRegs are the registers dma-reg reaches: the first dmaQueueRegs are
// the registers of a queue's half (offsets in its block: udma.QueueReg
// makes them the engine's), every other one an engine register, as it is.
// Besides the modelled ones, the other half's q_sw_ctrl and 0x40 are a
// queue's plain storage, S2M 0x300 the engine's.
var dmaRegs = []uint64{udma.QCfg, udma.QStatus, udma.QBaseLo, udma.QBaseHi, udma.QLength, udma.QHead, udma.QTailInc, udma.QTail,
	udma.QSwCtrlM2S, udma.QSwCtrlS2M, 0x40,
	udma.M2S + udma.EngineState, udma.M2S + udma.ChangeState, udma.S2M + udma.ChangeState, udma.M2S + udma.ErrorQueues, udma.S2M + 0x300}

// dmaQueueRegs is how many of dmaRegs are a queue's.
const dmaQueueRegs = 11

// engineRegs are the NC engine control registers engine-reg reaches.
var engineRegs = []uint64{isa.EngineRegRunStall, isa.EngineRegStartCtrl, isa.EngineRegPCLo, isa.EngineRegPCHi, isa.EngineRegStatus,
	isa.EngineRegError, isa.EngineRegFaultOffset, isa.EngineRegRetired, isa.EngineRegBusyLo, isa.EngineRegBusyHi, 0x40}

// syncBase is the register-BAR offset of the synchronisation block a sync
// operation's blk byte names: blk%4 0 NC 0, 1 NC 1, 2 NC (blk>>2)%NCs, 3
// TOP_SP (blk>>2)%TOP_SPs.
func (e *contEnv) syncBase(blk byte) uint64 {
	m := e.geo.BAR0
	switch blk % 4 {
	case 0, 1:
		return m.TPBWindow(int(blk%4)) + m.EventsOffset
	case 2:
		return m.TPBWindow(int(blk>>2)%e.geo.NeuronCores) + m.EventsOffset
	}
	return m.TopSPWindow(int(blk>>2) % e.geo.TopSPs)
}

// contQueue is what the driver of the copies knows of one queue: the next
// slot of its rings, the slot's phase, and the pairs written and rung.
type contQueue struct {
	next, ring    uint32
	written, rung uint32
}

// reset is the queue as its init leaves it: empty rings at phase 1.
func (qs *contQueue) reset() { *qs = contQueue{ring: udma.FirstRingID} }

// add counts one more pair written at the next slot.
func (qs *contQueue) add() {
	qs.written++
	if qs.next++; qs.next == contRing {
		qs.next, qs.ring = 0, (qs.ring+1)%4
	}
}

// contDriver is the copies' driver: what it knows of its queues (from the
// operations alone: it reads nothing back, so a reset it did not make
// leaves it out of step with the device, which writes descriptors the
// engines refuse, as a confused driver would), and the host buffers it
// holds (from what the device never snapshotted answered: the three must
// answer the same).
type contDriver struct {
	queues [4 * 4]contQueue // engine slot × queue
	host   []contBuf        // host[0] is the first buffer
}

// contBuf is a host buffer the driver holds.
type contBuf struct{ pa, size uint64 }

// clone returns a copy that shares nothing with d.
func (d *contDriver) clone() *contDriver {
	c := *d
	c.host = slices.Clone(d.host)
	return &c
}

// contCall is what one call on a device returned: its error's text and
// which of contSentinels it wraps.
type contCall struct {
	err string // "" for none
	is  uint32 // bit i: the error wraps contSentinels[i]
}

// contSentinels are the errors a call's error is checked against with
// errors.Is.
var contSentinels = []error{hwarch.ErrBadBAR, hwarch.ErrBAROffset, hwarch.ErrAlignment, hwarch.ErrDeviceClosed,
	ErrTimeOverflow, ErrInvalidState, ErrHostNoMemory, ErrHostBadFree, ErrHostRange, ErrHostBadRequest, ErrHostLazy,
	ErrNoHostModel, ErrAddressRange, ErrPageBudget, dma.ErrNoMemory}

// contResult is what an operation did on one device: every call's error
// (or none), every value it read, and the device's clock, phase, counters
// and DMA totals after it.
type contResult struct {
	calls        []contCall
	vals         []uint64
	now          Time
	phase        Phase
	stats        DeviceStats
	pairs, bytes uint64
}

// call records a call's error and reports whether there was none.
func (r *contResult) call(err error) bool {
	c := contCall{}
	if err != nil {
		c.err = err.Error()
		for i, s := range contSentinels {
			if errors.Is(err, s) {
				c.is |= 1 << i
			}
		}
	}
	r.calls = append(r.calls, c)
	return err == nil
}

// words returns p as little-endian words.
func words(p []byte) []uint32 {
	w := make([]uint32, len(p)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(p[4*i:])
	}
	return w
}

// apply carries out op on d, with the driver's knowledge drv (which it
// leaves as it is: update changes it), and returns what it did.
func (o contOp) apply(d *Device, env *contEnv, drv *contDriver) contResult {
	var r contResult
	reg := env.reg
	switch o.code {
	case fopClose:
		r.call(d.Close())
	case fopRead32:
		v, err := d.Read32(o.dev.bar, o.dev.off)
		r.call(err)
		r.vals = append(r.vals, uint64(v))
	case fopWrite32:
		r.call(d.Write32(o.dev.bar, o.dev.off, o.dev.val))
	case fopReadBAR:
		dst := make([]uint32, o.dev.n)
		r.call(d.ReadBAR(o.dev.bar, o.dev.off, dst))
		for _, v := range dst {
			r.vals = append(r.vals, uint64(v))
		}
	case fopWriteBAR:
		r.call(d.WriteBAR(o.dev.bar, o.dev.off, o.dev.words()))
	case fopSleep:
		r.call(d.Sleep(o.dev.dur))
	case fopMailboxReset:
		misc := env.geo.BAR0.MiscRAM
		_ = r.call(d.WriteBAR(reg, misc+hwarch.MiscResetTPBMap, []uint32{o.dev.resetMap})) &&
			r.call(d.Write32(reg, misc+hwarch.MiscResetRequest, o.dev.val)) &&
			r.call(d.Write32(reg, misc+hwarch.MiscTrigger, 1))
	case fopQEMUReset:
		r.call(d.Write32(reg, env.geo.BAR0.QEMUResetReg, o.dev.val))
	case copDMAReg:
		o.dmaReg(d, env, &r)
	case copDMACopy:
		o.dmaCopy(d, env, drv, &r)
	case copSync:
		blk, bank, idx, w, v := o.b[0], o.b[1], o.b[2], o.b[3], o.b[4]
		i := uint64(idx % 8)
		if idx >= 224 {
			i = uint64(idx)
		}
		off := env.syncBase(blk) + []uint64{tpb.EventsOffset, tpb.SemReadOffset, tpb.SemSetOffset, tpb.SemIncrOffset, tpb.SemDecrOffset}[bank%5] + 4*i
		if w%2 == 1 {
			r.call(d.Write32(reg, off, uint32(v)))
		} else {
			got, err := d.Read32(reg, off)
			r.call(err)
			r.vals = append(r.vals, uint64(got))
		}
	case copEngineReg:
		nc, eng, ri, w := int(o.b[0])%env.geo.NeuronCores, isa.Engine(o.b[1]%uint8(isa.TopSP)), o.b[2], o.b[3]
		ctrl, _ := isa.EngineCtrlOffset(eng)
		rg := engineRegs[int(ri)%len(engineRegs)]
		off := env.geo.BAR0.TPBWindow(nc) + ctrl + rg
		if w%2 == 1 {
			v := o.v
			pc := env.program(nc%2, int(eng)) + uint64((v>>1)%8)*isa.RecordSize
			switch {
			case rg == isa.EngineRegStartCtrl && v%4 < 2:
				v = []uint32{isa.StartRun, isa.StartHalt}[v%4]
			case rg == isa.EngineRegPCLo && v%2 == 0:
				v = uint32(pc)
			case rg == isa.EngineRegPCHi && v%2 == 0:
				v = uint32(pc >> 32)
			}
			r.call(d.Write32(reg, off, v))
		} else {
			got, err := d.Read32(reg, off)
			r.call(err)
			r.vals = append(r.vals, uint64(got))
		}
	case copProgram:
		o.program(d, env, &r)
	case copHost:
		o.host(d, drv, &r)
	case copFLR:
		r.call(d.FunctionReset())
	case copSleepUntil:
		dt := FromDuration(time.Duration(uint16(o.b[0])|uint16(o.b[1])<<8) * 10 * time.Nanosecond)
		done, err := d.SleepUntil(uint64(d.Now()+dt), 1+int(o.b[2]%4))
		r.call(err)
		r.vals = append(r.vals, map[bool]uint64{false: 0, true: 1}[done])
	case copAdvance:
		dt := FromDuration(time.Duration(uint16(o.b[1])|uint16(o.b[2])<<8) * 10 * time.Nanosecond)
		var now Time
		switch o.b[0] % 3 {
		case 0:
			var err error
			now, err = d.AdvanceTo(d.Now() + dt)
			r.call(err)
		case 1:
			var err error
			now, err = d.AdvanceTo(d.Now() - min(dt, d.Now()))
			r.call(err)
		default:
			now = d.RunAhead(dt)
		}
		r.vals = append(r.vals, uint64(now))
	}
	r.now, r.phase, r.stats = d.Now(), d.Phase(), d.Stats()
	r.pairs, r.bytes = d.DMATotals()
	return r
}

// dmaReg is a dma-reg operation.
func (o contOp) dmaReg(d *Device, env *contEnv, r *contResult) {
	eng := env.contEngine(o.b[0])
	half := uint64(udma.M2S)
	if o.b[1]%2 == 1 {
		half = udma.S2M
	}
	k := int(o.b[2]) % len(dmaRegs)
	rg := dmaRegs[k]
	if k < dmaQueueRegs {
		rg = udma.QueueReg(half, int(o.b[1]>>1)%udma.Queues, rg)
	}
	base, _ := udma.EngineBAR0(env.geo, eng)
	if o.b[3]%2 == 1 {
		r.call(d.Write32(env.reg, base+rg, o.v))
		return
	}
	v, err := d.Read32(env.reg, base+rg)
	r.call(err)
	r.vals = append(r.vals, uint64(v))
}

// dmaCopy is a dma-copy operation: the driver's copy, as driver_h2t_test's
// driver makes it, on rings in HBM written through BAR4.
func (o contOp) dmaCopy(d *Device, env *contEnv, drv *contDriver, r *contResult) {
	es, q, k := int(o.b[0]%4), int(o.b[1]%4), 1+int(o.b[2]%4)
	src, dst, n, flags, fill := env.place(o.b[3]), env.place(o.b[4]), contLen(o.b[5]), o.b[6], o.b[7]
	eng := env.engines[es]
	base, _ := udma.EngineBAR0(env.geo, eng)
	w := func(off uint64, v uint32) { r.call(d.Write32(env.reg, base+off, v)) }
	qs := drv.queues[es*4+q]
	if flags&16 != 0 { // the engine back to normal (which the driver never writes)
		w(udma.M2S+udma.ChangeState, udma.ChangeNormal)
	}
	if flags&1 != 0 { // the queue's init (udma_q_init): pause, reset, rings, enable
		for _, half := range []uint64{udma.M2S, udma.S2M} {
			w(udma.QueueReg(half, q, udma.QCfg), udma.QCfgReset)
		}
		w(udma.QueueReg(udma.M2S, q, udma.QSwCtrlM2S), udma.QSwReset)
		for _, half := range []uint64{udma.M2S, udma.S2M} {
			ring := env.ring(es, q, half)
			w(udma.QueueReg(half, q, udma.QBaseLo), uint32(ring))
			w(udma.QueueReg(half, q, udma.QBaseHi), uint32(ring>>32))
			w(udma.QueueReg(half, q, udma.QLength), contRing)
			w(udma.QueueReg(half, q, udma.QCfg), udma.QCfgDriver)
		}
		qs.reset()
	}
	if flags&8 != 0 { // 64 bytes of the source: through BAR4, the host or the register BAR
		p := make([]byte, 64)
		for i := range p {
			p[i] = fill + byte(i)*7
		}
		a := src &^ 3
		if off, ok := env.bar4Off(a); ok {
			r.call(d.WriteBAR(hwarch.BAR4, off, words(p)))
		} else if pa, ok := env.geo.IsHostAddress(a); ok {
			r.call(d.HostWrite(pa, p))
		} else if win, rel, ok := env.atlas.LookupDevice(a); ok {
			r.call(d.WriteBAR(env.reg, win.Start+rel, words(p)))
		}
	}
	for i := range k {
		m2s, _ := udma.LenCtrl(n, uint8(qs.ring), udma.FlagFirst|udma.FlagLast)
		s2m, _ := udma.LenCtrl(n, uint8(qs.ring), 0)
		for _, h := range []struct {
			half uint64
			desc udma.Descriptor
		}{
			{udma.M2S, udma.Descriptor{LenCtrl: m2s, Meta: udma.DefaultMetaCtrl, Addr: src + uint64(i)*uint64(n)}},
			{udma.S2M, udma.Descriptor{LenCtrl: s2m, Addr: dst}},
		} {
			var raw [udma.DescriptorSize]byte
			h.desc.Put(raw[:])
			off, _ := env.bar4Off(env.ring(es, q, h.half) + uint64(qs.next)*udma.DescriptorSize)
			r.call(d.WriteBAR(hwarch.BAR4, off, words(raw[:])))
		}
		qs.add()
	}
	if ring := flags >> 1 & 3; ring != 0 { // the doorbell: S2M first, then M2S (driver-facts §4.6)
		w(udma.QueueReg(udma.S2M, q, udma.QTailInc), qs.written-qs.rung)
		if ring >= 2 {
			w(udma.QueueReg(udma.M2S, q, udma.QTailInc), qs.written-qs.rung)
		}
		qs.rung = qs.written
	}
}

// record is the program record kind byte r makes for engine eng (last: the
// program's last): (r&7)%5 0 a nop that waits for semaphore (r>>3)%4 ≥
// (r>>5)%4 and increments the next one, 1 a semaphore increment, 2 a DMA
// trigger of one descriptor pair on queue (r>>5)%4 of copy engine slot
// (r>>3)%4 (refused by PE and DVE, and for an engine neither the NC's nor
// a host engine), 3 a wait for event (r>>3)%4 that clears it, 4 an event
// set.
func (e *contEnv) record(eng isa.Engine, r byte, last bool) isa.Record {
	i := (r >> 3) % 4
	rec := isa.Record{Opcode: isa.OpSem, Engine: eng}
	switch (r & 7) % 5 {
	case 0:
		rec.Opcode = isa.OpNop
		rec.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: i, Value: uint16(r>>5) % 4}
		rec.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: (i + 1) % 4, Value: 1}
	case 1:
		rec.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: i, Value: 1}
	case 2:
		rec.Opcode, rec.Aux, rec.Imm0, rec.Imm1 = isa.OpDMATrigger, uint16(e.engines[i]), uint32(r>>5)%4, 1
	case 3:
		rec.Wait = isa.Sync{Mode: isa.WaitEvent, Index: i}
		rec.Signal = isa.Sync{Mode: isa.SignalEventClr, Index: i}
	case 4:
		rec.Signal = isa.Sync{Mode: isa.SignalEventSet, Index: i}
	}
	if last {
		rec.Flags = isa.FlagLast
	}
	return rec
}

// program is a program operation: its records written through BAR4, then
// the engine's PC and START_CTRL.
func (o contOp) program(d *Device, env *contEnv, r *contResult) {
	nc, eng, k := int(o.b[0]%2), isa.Engine(o.b[1]%uint8(isa.TopSP)), 1+int(o.b[2]%8)
	pc := env.program(nc, int(eng))
	off, _ := env.bar4Off(pc)
	raw := make([]byte, isa.RecordSize)
	for i := range k {
		rec := env.record(eng, o.b[3+i], i == k-1)
		rec.Encode(raw)
		r.call(d.WriteBAR(hwarch.BAR4, off+uint64(i)*isa.RecordSize, words(raw)))
	}
	ctrlOff, _ := isa.EngineCtrlOffset(eng)
	ctrl := env.geo.BAR0.TPBWindow(nc) + ctrlOff
	r.call(d.Write32(env.reg, ctrl+isa.EngineRegPCLo, uint32(pc)))
	r.call(d.Write32(env.reg, ctrl+isa.EngineRegPCHi, uint32(pc>>32)))
	r.call(d.Write32(env.reg, ctrl+isa.EngineRegStartCtrl, isa.StartRun))
}

// host is a host operation.
func (o contOp) host(d *Device, drv *contDriver, r *contResult) {
	kind, a, b := o.b[0]%4, o.b[1], o.b[2]
	buf := drv.host[int(a)%len(drv.host)]
	switch kind {
	case 0:
		pa, err := d.HostAlloc(uint64(1+a%16)*4096, 4096<<(b%4))
		r.call(err)
		r.vals = append(r.vals, pa)
	case 1:
		r.call(d.HostFree(buf.pa))
	case 2:
		p := make([]byte, 64)
		for i := range p {
			p[i] = a ^ byte(i)
		}
		r.call(d.HostWrite(buf.pa+uint64(b)*64%buf.size, p))
	case 3:
		p := make([]byte, 16)
		r.call(d.HostRead(buf.pa+uint64(b)*64%buf.size, p))
		for _, w := range words(p) {
			r.vals = append(r.vals, uint64(w))
		}
	}
}

// update records in drv what op did on the device never snapshotted (want):
// the queue a copy used, a host buffer allocated or freed.
func (o contOp) update(drv *contDriver, want contResult) {
	switch o.code {
	case copDMACopy:
		es, q, k, flags := int(o.b[0]%4), int(o.b[1]%4), 1+int(o.b[2]%4), o.b[6]
		qs := &drv.queues[es*4+q]
		if flags&1 != 0 {
			qs.reset()
		}
		for range k {
			qs.add()
		}
		if flags>>1&3 != 0 {
			qs.rung = qs.written
		}
	case copHost:
		kind, a := o.b[0]%4, o.b[1]
		switch {
		case kind == 0 && want.calls[0].err == "":
			drv.host = append(drv.host, contBuf{want.vals[0], uint64(1+a%16) * 4096})
		case kind == 1 && want.calls[0].err == "" && len(drv.host) > 1:
			drv.host = slices.Delete(drv.host, int(a)%len(drv.host), int(a)%len(drv.host)+1)
		}
	}
}

// newContDevice builds a device of cfg with its first host buffer and
// primed HBM (contPrime), and returns the buffer's address.
func newContDevice(t testing.TB, cfg DeviceConfig) (*Device, uint64) {
	t.Helper()
	d, err := NewDevice(cfg)
	require.NoError(t, err)
	pa, err := d.HostAlloc(contHostSize, 4096)
	require.NoError(t, err)
	contPrime(t, d)
	return d, pa
}

// contPrime writes, straight into d's HBM, a last nop for PE at device
// address 0, the PC every engine powers on with, and last nops filling
// every program area (contEnv.program), where program writes its records
// and engine-reg points PCs. A PE engine takes an all-zero record for a
// nop: started on empty HBM it would run nops for as long as a sequence
// sleeps, millions of records for nothing the test wants (seconds of host
// time an input). Started on these, any engine stops within 8 records.
func contPrime(t testing.TB, d *Device) {
	t.Helper()
	raw := make([]byte, isa.RecordSize)
	last := func(e isa.Engine, addr uint64) {
		rec := isa.Record{Opcode: isa.OpNop, Engine: e, Flags: isa.FlagLast}
		rec.Encode(raw)
		require.NoError(t, d.hbm.Write(addr, raw))
	}
	env := &contEnv{hbm0: d.Geometry().HBM[0].Base}
	last(isa.PE, 0)
	for nc := range 2 {
		for e := range isa.TopSP {
			for i := range uint64(8) {
				last(e, env.program(nc, int(e))+i*isa.RecordSize)
			}
		}
	}
}

// endOf advances d by contEndSleep past its last operation and returns the
// sleep's error (a closed device refuses it) and the snapshot it ends in.
func endOf(d *Device) (string, DeviceSnapshot) {
	var r contResult
	r.call(d.Sleep(contEndSleep))
	return fmt.Sprint(r.calls), d.Snapshot()
}

// requireSameSnapshot requires two snapshots to be equal: part by part
// first, so that a failure says which part differs, the memories page by
// page (their pages are 4 KiB arrays, which a plain diff would print
// whole) and the DMA engines one by one, then whole. Nothing is left out:
// Snapshot holds no cache or pointer identity of the device (the DMA
// scratch buffers, the host memory's lookup cache and the BAR4 buffer are
// not in it; the DMA prefetch bursts are state, dma.State.Bursts), so a
// restored device that goes on as the original gives an equal snapshot.
func requireSameSnapshot(t *testing.T, want, got DeviceSnapshot, what string) {
	t.Helper()
	require.Equal(t, want.Config, got.Config, "%s: configuration", what)
	require.Equal(t, want.State, got.State, "%s: device state (phase, MISC RAM, reset, sync blocks, counters)", what)
	require.Equal(t, want.Engine, got.Engine, "%s: clock and pending events", what)
	requireSameMemory(t, want.Regs, got.Regs, what+": register memory")
	requireSameMemory(t, want.HBM, got.HBM, what+": HBM")
	requireSameMemory(t, want.Host.Memory, got.Host.Memory, what+": host memory")
	require.Equal(t, len(want.DMA.Engines), len(got.DMA.Engines), "%s: DMA engines", what)
	for e := range want.DMA.Engines {
		require.Equal(t, want.DMA.Engines[e], got.DMA.Engines[e], "%s: DMA engine %d", what, e)
	}
	require.Equal(t, want.Cores, got.Cores, "%s: NeuronCores", what)
	require.Equal(t, want, got, "%s: the whole snapshot", what)
}

// requireSameMemory requires two memories to hold the same pages, with the
// same bytes: it names the first page and byte that differ.
func requireSameMemory(t *testing.T, want, got MemoryState, what string) {
	t.Helper()
	for _, pn := range slices.Sorted(maps.Keys(want.Pages)) {
		g, ok := got.Pages[pn]
		require.True(t, ok, "%s: page %#x (address %#x) is missing", what, pn, pn*PageSize)
		if w := want.Pages[pn]; *w != *g {
			for i := range w {
				require.Equal(t, w[i], g[i], "%s: byte at %#x", what, pn*PageSize+uint64(i))
			}
		}
	}
	for pn := range got.Pages {
		_, ok := want.Pages[pn]
		require.True(t, ok, "%s: page %#x (address %#x) is extra", what, pn, pn*PageSize)
	}
}

// runContinuation runs a sequence (a FuzzDeviceBAR input: header and
// operations, at most max of them) on device A, never snapshotted, and
// device B, snapshotted before operation cut modulo their number + 1
// (after the last when that is their number); C is built from the
// snapshot. Each later operation must do the same on all three, and they
// must end the same (endOf). Then B is restored in place from the
// snapshot and runs the later operations again, which must do what they
// did on C and end as C did. It returns the operations and the DMA pairs
// A completed before and after the cut, for the caller to judge the
// sequence's breadth: the rises of its DMATotals over each operation
// (the totals restart at a function-level reset, and a device or TPB
// reset clears its queues' counts).
func runContinuation(t *testing.T, data []byte, max, cut int) (ops []contOp, moved [2]uint64) {
	t.Helper()
	in := &devFuzzIn{b: data}
	cfg := decodeDevFuzzConfig(in)
	a, pa := newContDevice(t, cfg)
	b, pb := newContDevice(t, cfg)
	require.Equal(t, pa, pb, "the first host buffer")
	env := newContEnv(t, a, pa)
	ops = decodeContOps(in, env, max)
	cut %= len(ops) + 1
	drv := &contDriver{host: []contBuf{{pa, contHostSize}}}
	var pairs uint64 // A's DMATotals after the last operation
	count := func(i int, r contResult) {
		if r.pairs > pairs && i >= cut {
			moved[1] += r.pairs - pairs
		} else if r.pairs > pairs {
			moved[0] += r.pairs - pairs
		}
		pairs = r.pairs
	}
	for i, o := range ops[:cut] {
		want := o.apply(a, env, drv)
		require.Equal(t, want, o.apply(b, env, drv), "op %d (%v) before the cut at %d: the same operation on two devices of one configuration differs", i, o, cut)
		o.update(drv, want)
		count(i, want)
	}

	snap := b.Snapshot()
	c, err := NewDeviceFromSnapshot(snap)
	require.NoError(t, err, "restore before op %d", cut)
	atCut := drv.clone()
	names := []string{"snapshotted", "restored"}
	var results []contResult // C's, for the rerun on B
	for i, o := range ops[cut:] {
		want := o.apply(a, env, drv)
		for j, d := range []*Device{b, c} {
			require.Equal(t, want, o.apply(d, env, drv), "op %d (%v), cut at %d: the %s device differs from the one never snapshotted", cut+i, o, cut, names[j])
		}
		results = append(results, want)
		o.update(drv, want)
		count(cut+i, want)
	}
	wantErr, wantEnd := endOf(a)
	for j, d := range []*Device{b, c} {
		gotErr, gotEnd := endOf(d)
		require.Equal(t, wantErr, gotErr, "the end's sleep, cut at %d of %d: the %s device", cut, len(ops), names[j])
		requireSameSnapshot(t, wantEnd, gotEnd, fmt.Sprintf("the end, cut at %d of %d: the %s device against the one never snapshotted", cut, len(ops), names[j]))
	}

	// Restore in place: B, rewound to the snapshot, does again what C did.
	require.NoError(t, b.Restore(snap), "restore in place")
	drv = atCut
	for i, o := range ops[cut:] {
		require.Equal(t, results[i], o.apply(b, env, drv), "op %d (%v), cut at %d: the device restored in place differs", cut+i, o, cut)
		o.update(drv, results[i])
	}
	gotErr, gotEnd := endOf(b)
	require.Equal(t, wantErr, gotErr, "the end's sleep of the device restored in place")
	requireSameSnapshot(t, wantEnd, gotEnd, "the end of the device restored in place")
	return ops, moved
}

// contProg builds continuation inputs: a fuzzProg with this test's
// operations, the same encoding decodeContOp decodes.
type contProg struct{ fuzzProg }

// newContProg starts an input with FuzzDeviceBAR's header.
func newContProg(gen hwarch.Generation, rev uint8, ready bool) contProg {
	return contProg{newFuzzProg(gen, rev, ready)}
}

// op appends an operation of this test's code with its operand bytes.
func (p contProg) op(code byte, operands ...byte) contProg {
	return contProg{append(append(p.fuzzProg, code), operands...)}
}

// dev appends FuzzDeviceBAR operations built by f.
func (p contProg) dev(f func(fuzzProg) fuzzProg) contProg { return contProg{f(p.fuzzProg)} }

// sleep sleeps units × 10 ns.
func (p contProg) sleep(units uint16) contProg { return contProg{p.fuzzProg.sleep(units)} }

// Copy flags.
const (
	cpSetup  = 1      // reset and program the queue first
	cpHalf   = 1 << 1 // ring the doorbell of the S2M half only
	cpRing   = 2 << 1 // ring the doorbell
	cpFill   = 8      // fill the source first
	cpNormal = 16     // write the engine's change_state NORMAL first
)

// Place selectors (contEnv.place): s + 10·i is the i'th offset.
const (
	plHBM byte = iota
	plHBMLast
	plHost
	plSBUF
	plPSUM
	plSem
	plTopSP
	plMisc
	plEnd
	plFar
)

// Length selectors (contLen).
const (
	ln4 byte = iota
	ln8
	ln64
	ln1000
	ln4K
	ln16K
	ln64K
)

// copy appends a dma-copy.
func (p contProg) copy(es, q, k int, src, dst, length, flags, fill byte) contProg {
	return p.op(copDMACopy, byte(es), byte(q), byte(k-1), src, dst, length, flags, fill)
}

// dmaRead appends a dma-reg read of register dmaRegs[r] of queue q's half.
func (p contProg) dmaRead(es, q int, s2m bool, r byte) contProg {
	h := byte(0)
	if s2m {
		h = 1
	}
	return p.op(copDMAReg, byte(es), byte(q)<<1|h, r, 0, 0, 0, 0, 0)
}

// sync appends a sync access: a write of v when write.
func (p contProg) sync(blk, bank, idx byte, write bool, v byte) contProg {
	w := byte(0)
	if write {
		w = 1
	}
	return p.op(copSync, blk, bank, idx, w, v)
}

// program appends a program of records of kinds rs for engine eng of NC nc.
func (p contProg) program(nc int, eng isa.Engine, rs ...byte) contProg {
	b := make([]byte, 8)
	copy(b, rs)
	return p.op(copProgram, append([]byte{byte(nc), byte(eng), byte(len(rs) - 1)}, b...)...)
}

// engineRead appends a read of engine register engineRegs[r].
func (p contProg) engineRead(nc int, eng isa.Engine, r byte) contProg {
	return p.op(copEngineReg, byte(nc), byte(eng), r, 0, 0, 0, 0, 0)
}

// contSeed is a seed: the input and where to cut it.
type contSeed struct {
	cut  int
	data []byte
}

// contHeader is the length of an input's header (decodeDevFuzzConfig).
const contHeader = 3

// contCut returns the seed of prefix then suffix (whose header is
// dropped), cut between them.
func contCut(tb testing.TB, prefix, suffix contProg) contSeed {
	tb.Helper()
	in := &devFuzzIn{b: prefix.fuzzProg}
	d, err := NewDevice(decodeDevFuzzConfig(in))
	require.NoError(tb, err)
	n := len(decodeContOps(in, newContEnv(tb, d, 0), contMaxOps))
	return contSeed{n, slices.Concat(prefix.fuzzProg, suffix.fuzzProg[contHeader:])}
}

// contSeeds are the seeds of FuzzDeviceSnapshotContinues: on every
// generation, a cut while DMA transfers between HBM, the host, SBUF and a
// semaphore run and their queues wait on the other half, while a device
// reset and a TPB reset run, while a program waits on a semaphore a later
// write releases to trigger a copy, around host buffers allocated and
// freed, a function-level reset, and partial SleepUntil.
func contSeeds(tb testing.TB) []contSeed {
	tb.Helper()
	var seeds []contSeed
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		misc := geo.BAR0.MiscRAM
		start := newContProg(g, 0, true)
		empty := newContProg(g, 0, true)
		// Two copies of 64 KiB HBM to HBM in flight at the cut, then one
		// to the host and one into a semaphore after it.
		seeds = append(seeds, contCut(tb,
			start.copy(0, 0, 2, plHBM, plHBM+10, ln64K, cpSetup|cpRing|cpFill, 1).sleep(10),
			empty.sleep(10).dmaRead(0, 0, false, 5).dmaRead(0, 0, true, 1).sleep(200).
				copy(0, 0, 1, plHBM+10, plHost, ln64K, cpRing, 0).sleep(2).
				copy(0, 0, 1, plHBM, plSem, ln4, cpRing|cpFill, 5).sleep(1000).
				sync(1, 1, 0, false, 0).dev(func(p fuzzProg) fuzzProg { return p.readN(fzBAR4, 2<<20+64<<10, 16) })))
		// The S2M half rung before the cut, the M2S half after; a ring
		// wrapped by 4 KiB copies from the host into SBUF and PSUM.
		seeds = append(seeds, contCut(tb,
			start.copy(2, 1, 4, plHost, plSBUF, ln4K, cpSetup|cpHalf|cpFill, 9).sleep(50),
			empty.dmaRead(2, 1, false, 1).op(copDMAReg, 2, 2, 6, 1, 4, 0, 0, 0).sleep(20).
				copy(2, 1, 4, plHost+10, plPSUM, ln4K, cpRing, 0).copy(2, 1, 4, plHBM, plSBUF+10, ln16K, cpRing|cpFill, 3).
				copy(2, 1, 4, plSBUF, plHBMLast, ln4K, cpRing, 0).copy(2, 1, 4, plHBM, plHost, ln1000, cpRing, 0).
				copy(2, 1, 4, plHBM, plHost, ln64, cpRing, 0).copy(2, 1, 4, plHBM, plHost, ln8, cpRing, 0).
				copy(2, 1, 4, plHBM, plHost, ln64, cpRing, 0).copy(2, 1, 4, plHBM, plHost, ln4, cpRing, 0).
				copy(2, 1, 4, plHBM, plHost, ln64, cpRing, 0).sleep(0xFFFF).dmaRead(2, 1, true, 5)))
		// Refused pairs across the cut: past the end of HBM, a neighbour
		// window, the MISC RAM by DMA; then the queue reset and reused.
		seeds = append(seeds, contCut(tb,
			start.copy(3, 3, 1, plHBM, plEnd, ln64, cpSetup|cpRing, 0).copy(1, 2, 1, plFar, plHBM, ln64, cpSetup|cpRing, 0),
			empty.dmaRead(3, 3, false, 1).copy(3, 3, 1, plHBM, plHBM, ln64, cpSetup|cpRing|cpFill, 2).
				copy(1, 2, 2, plHBM, plMisc+30, ln8, cpSetup|cpRing|cpFill|cpNormal, 0).sleep(100).dmaRead(1, 2, false, 1).sleep(3000)))
		// A device reset cut part way (acknowledged, not done), with a copy
		// in flight that it cancels.
		seeds = append(seeds, contCut(tb,
			start.copy(0, 0, 2, plHBM, plHost, ln64K, cpSetup|cpRing|cpFill, 4).dev(func(p fuzzProg) fuzzProg {
				return p.mailbox(1, 0).sleep(500)
			}),
			empty.dev(func(p fuzzProg) fuzzProg {
				return p.read(fzReg, misc+hwarch.MiscFWStatus).read(fzReg, misc+hwarch.MiscResetRequest).sleep(500).
					read(fzReg, misc+hwarch.MiscTrigger).sleep(2000).read(fzBAR4, 2<<20)
			}).dmaRead(0, 0, false, 5).copy(0, 0, 1, plHBM, plHost, ln64, cpSetup|cpRing, 0).sleep(100)))
		// A TPB reset of NCs 0 and 1 cut before its acknowledgement, a
		// second request joining it after the cut.
		seeds = append(seeds, contCut(tb,
			start.copy(1, 0, 1, plHBM, plHBM, ln16K, cpSetup|cpRing|cpFill, 6).sync(1, 2, 3, true, 77).dev(func(p fuzzProg) fuzzProg {
				return p.mailbox(2, 3).sleep(100)
			}),
			empty.sync(1, 1, 3, false, 0).dev(func(p fuzzProg) fuzzProg {
				return p.mailbox(2, 1).sleep(100).read(fzReg, misc+hwarch.MiscResetRequest).sleep(5000)
			}).sync(1, 1, 3, false, 0).dmaRead(1, 0, false, 5)))
		// A program on NC 0's SP waiting on semaphore 0 at the cut; a write
		// after it releases the program, which triggers a copy prepared
		// (written, not rung) before the cut.
		seeds = append(seeds, contCut(tb,
			start.copy(0, 2, 1, plHBM, plHBMLast, ln4K, cpSetup|cpFill, 8).
				program(0, isa.SP, 0|0<<3|1<<5, 2|0<<3|2<<5, 1|2<<3, 4|1<<3).sleep(50),
			empty.engineRead(0, isa.SP, 4).sync(0, 2, 0, true, 1).sleep(50).engineRead(0, isa.SP, 4).
				engineRead(0, isa.SP, 7).sleep(1000).dmaRead(0, 2, false, 5).sync(0, 1, 2, false, 0).sync(0, 0, 1, false, 0)))
		// Host buffers allocated and freed around the cut, a copy into a
		// buffer freed after it, a function-level reset and a partial
		// SleepUntil.
		seeds = append(seeds, contCut(tb,
			start.op(copHost, 0, 3, 1).op(copHost, 0, 0, 0).op(copHost, 2, 1, 2).
				copy(0, 1, 2, plHost, plHBM, ln64K, cpSetup|cpRing|cpFill, 1).dev(func(p fuzzProg) fuzzProg { return p.mailbox(1, 0) }).sleep(2),
			empty.op(copHost, 3, 1, 2).op(copHost, 1, 1, 0).op(copHost, 0, 5, 3).op(copSleepUntil, 0x10, 0x27, 0).
				op(copSleepUntil, 0x10, 0x27, 2).op(copFLR).op(copAdvance, 2, 0xFF, 0x7F).op(copAdvance, 1, 4, 0).
				op(copAdvance, 0, 0, 0x10).copy(0, 1, 1, plHBM, plHost, ln64, cpSetup|cpRing, 0).op(copAdvance, 2, 0, 1)))
	}
	// The hand-written continuation of TestSnapshotRestoreContinuesExactly:
	// a TPB reset of NC 1 snapshotted part way, on a device that boots.
	geo := hwarch.MustGeometry(hwarch.Cayman)
	m := geo.BAR0
	seeds = append(seeds, contCut(tb,
		newContProg(hwarch.Cayman, 0, false).sleep(2100).dev(func(p fuzzProg) fuzzProg {
			return p.write(fzReg, m.TPBWindow(1)+m.SemSetOffset, 99).write(fzBAR4, 0x1000, 0xABCD).
				write(fzReg, m.MiscRAM+hwarch.MiscResetTPBMap, geo.TPBResetMap(2)).
				write(fzReg, m.MiscRAM+hwarch.MiscResetRequest, hwarch.ResetTypeTPB).write(fzReg, m.MiscRAM+hwarch.MiscTrigger, 1)
		}),
		newContProg(hwarch.Cayman, 0, false).dev(func(p fuzzProg) fuzzProg {
			for range 10 {
				p = p.read(fzReg, m.MiscRAM+hwarch.MiscFWStatus).read(fzReg, m.TPBWindow(1)+m.SemReadOffset).
					write(fzReg, m.TPBWindow(0)+m.SemIncrOffset, 1).sleep(100)
			}
			return p.read(fzBAR4, 0x1000)
		})))
	return seeds
}

// FuzzDeviceSnapshotContinues: a device of any configuration FuzzDeviceBAR
// decodes, snapshotted before operation cut of a sequence (cut modulo the
// operations + 1) of FuzzDeviceBAR's operations and this test's (contOp) —
// register and memory accesses of every BAR, DMA queues programmed and
// rung through their registers on descriptor rings in HBM, semaphores and
// events, NC engine registers and programs, mailbox and QEMU resets, host
// memory, function-level resets, Sleep, SleepUntil, AdvanceTo, RunAhead,
// Close — goes on after the cut as the device never snapshotted: every
// operation returns the same errors (text and sentinels), values, clock,
// phase, counters and DMA totals on the device never snapshotted, the
// device snapshotted and the device built from the snapshot; the three
// end, contEndSleep later, with equal snapshots; and the snapshotted
// device restored in place from the snapshot does the operations after
// the cut again exactly as the one built from it did. Its seeds are
// FuzzDeviceBAR's, cut after their first and third operations, and
// contSeeds.
//
// Two inputs in testdata/fuzz/FuzzDeviceSnapshotContinues are the
// defects of the DMA model this test found, fixed since:
// dma-queue-storage-register-refused-by-restore (a write to a queue
// register the model keeps as plain storage, such as the rate limit mask
// driver 2.24.7.0 writes in udma_q_init, made a snapshot that
// NewDeviceFromSnapshot and Restore refused) and
// dma-prefetch-burst-not-in-snapshot (a descriptor rewritten in its ring
// after it was made available and prefetched: the device went on with the
// prefetched copy, a restored one fetched the new one, until the bursts
// were kept in dma.State).
func FuzzDeviceSnapshotContinues(f *testing.F) {
	for _, s := range fuzzSeeds() {
		for _, cut := range []uint8{1, 3} {
			f.Add(cut, []byte(s))
		}
	}
	for _, s := range contSeeds(f) {
		f.Add(uint8(s.cut), s.data)
	}
	f.Fuzz(func(t *testing.T, cut uint8, data []byte) {
		runContinuation(t, data, contMaxOps, int(cut))
	})
}

// contWeights are how often TestDeviceSnapshotContinues draws each code:
// copies most, then sleeps, synchronisation and programs; the resets
// (mailbox, QEMU, function-level) least, since each undoes the copies'
// queues.
var contWeights = [copCount]int{
	fopRead32: 1, fopWrite32: 1, fopReadBAR: 1, fopWriteBAR: 1, fopSleep: 4, fopMailboxReset: 1, fopQEMUReset: 1,
	copDMAReg: 2, copDMACopy: 6, copSync: 3, copEngineReg: 2, copProgram: 3, copHost: 2, copFLR: 1, copSleepUntil: 1, copAdvance: 1,
}

// TestDeviceSnapshotContinues: FuzzDeviceSnapshotContinues' property on
// fixed pseudo-random sequences of contTableOps operations, cut in the
// middle, for every generation, silicon booting and QEMU ready, so that
// every run of the tests checks it (about 0.2 s, 2 s under the race
// detector). The operations are drawn by contWeights, never Close; each
// sequence must have moved DMA pairs both before and after its cut, or it
// would not be checking what it is for.
func TestDeviceSnapshotContinues(t *testing.T) {
	const n = contTableOps
	// Codes by weight: a copy 6 times as often as a reset, a sleep 4
	// times, and so on (contWeights).
	var codes []byte
	for c := range byte(copCount) {
		for range contWeights[c] {
			codes = append(codes, c)
		}
	}
	for _, g := range hwarch.Generations() {
		for _, rev := range []uint8{0, hwarch.RevisionQEMU} {
			t.Run(fmt.Sprintf("%s/rev%#x", g, rev), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(0xC0FFEE, uint64(g)<<8|uint64(rev)))
				p := newFuzzProg(g, rev, rev != 0)
				env := func() *contEnv {
					d, err := NewDevice(decodeDevFuzzConfig(&devFuzzIn{b: p}))
					require.NoError(t, err)
					return newContEnv(t, d, 0)
				}()
				data := []byte(p)
				for range n {
					// An operation: its code, then random operands, cut to
					// what the decoder takes.
					chunk := []byte{codes[rng.IntN(len(codes))]}
					for range 24 {
						chunk = append(chunk, byte(rng.Uint32()))
					}
					in := &devFuzzIn{b: chunk}
					decodeContOp(in, env)
					data = append(data, chunk[:len(chunk)-len(in.b)]...)
				}
				ops, moved := runContinuation(t, data, n, n/2)
				require.Len(t, ops, n)
				t.Logf("%d operations: %d DMA pairs before the cut, %d after", n, moved[0], moved[1])
				require.NotZero(t, moved[0], "no DMA pair completed before the cut")
				require.NotZero(t, moved[1], "no DMA pair completed after the cut")
			})
		}
	}
}
