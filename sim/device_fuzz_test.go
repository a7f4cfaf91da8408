package sim

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// devFuzzIn hands out the bytes of a fuzz input, zeros once it is used up.
type devFuzzIn struct{ b []byte }

func (in *devFuzzIn) more() bool { return len(in.b) > 0 }

func (in *devFuzzIn) u8() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *devFuzzIn) u16() uint16 { return uint16(in.u8()) | uint16(in.u8())<<8 }
func (in *devFuzzIn) u32() uint32 { return uint32(in.u16()) | uint32(in.u16())<<16 }
func (in *devFuzzIn) u64() uint64 { return uint64(in.u32()) | uint64(in.u32())<<32 }

// fuzzFirmware shrinks the firmware's times so that a short input sees boots,
// acknowledgements and completions.
var fuzzFirmware = FirmwareTiming{
	Boot:        20 * time.Microsecond,
	ResetAck:    3 * time.Microsecond,
	DeviceReset: 15 * time.Microsecond,
	TPBReset:    8 * time.Microsecond,
	QEMUReset:   25 * time.Microsecond,
}

// fuzzFirmwareInstant does every reset step at once (only boot takes time).
var fuzzFirmwareInstant = FirmwareTiming{Boot: 20 * time.Microsecond}

// fuzzFirmwareSlowAck acknowledges later than the work takes, so requests
// that join a running reset are acknowledged after its work would be done.
var fuzzFirmwareSlowAck = FirmwareTiming{
	Boot:        20 * time.Microsecond,
	ResetAck:    30 * time.Microsecond,
	DeviceReset: 5 * time.Microsecond,
	TPBReset:    2 * time.Microsecond,
	QEMUReset:   10 * time.Microsecond,
}

var fuzzRevisions = []uint8{0x00, hwarch.RevisionEMU, hwarch.RevisionQEMU, 0x01}

// devFuzzOps are the operation codes of a FuzzDeviceBAR input.
const (
	fopRead32 = iota
	fopWrite32
	fopReadBAR
	fopWriteBAR
	fopSleep
	fopMailboxReset
	fopQEMUReset
	fopCount
	fopClose = 0xFF // only this exact byte closes the device
)

// fuzzBases are the offsets a fuzzed offset is drawn near: the plain
// registers the invariant watches, the mailbox words, the QEMU register,
// every window's start and end, every BAR4 channel's, the BAR ends, and the
// top of the 64-bit space.
func fuzzBases(d *Device) []uint64 {
	m := d.Geometry().BAR0
	bases := []uint64{0, 1 << 63, math.MaxUint64 &^ 3}
	bases = append(bases, plainAPB(d.Geometry())...)
	for _, off := range []uint64{0, hwarch.MiscRoutingID, hwarch.MiscSerialLo, 0x100, hwarch.MiscResetTPBMap,
		hwarch.MiscResetRequest, hwarch.MiscTrigger, hwarch.MiscFWStatus, bar.MiscRAMSize - 4, bar.MiscRAMSize} {
		bases = append(bases, m.MiscRAM+off)
	}
	bases = append(bases, m.QEMUResetReg)
	for _, w := range d.Atlas().Windows() {
		bases = append(bases, w.Start, w.End())
	}
	for _, w := range d.BAR4().Windows() {
		bases = append(bases, w.BAR4Offset, w.BAR4Offset+w.Size)
	}
	for b := range 6 {
		if s := d.BARSize(b); s != 0 {
			bases = append(bases, s)
		}
	}
	return bases
}

// fuzzBARs are the BAR numbers an access is drawn from; the register BAR and
// BAR4 come first and twice as often.
func fuzzBAR(in *devFuzzIn, reg int) int {
	bars := []int{reg, hwarch.BAR4, reg, hwarch.BAR4, 0, 2, 1, 3, 5, 6, -1}
	return bars[int(in.u8())%len(bars)]
}

func fuzzOffset(in *devFuzzIn, bases []uint64) uint64 {
	mode := in.u8()
	if mode%4 == 0 {
		return in.u64() // any 64-bit offset
	}
	off := bases[int(in.u8())%len(bases)] + uint64(int64(int8(in.u8()))*4)
	if mode >= 0xF0 {
		off += uint64(mode & 3) // sometimes misaligned
	}
	return off
}

// fuzzWantErr is the reference rule for a refused access: closed, then an
// absent BAR, then a misaligned offset, then a range that leaves the BAR
// (computed without overflow).
func fuzzWantErr(closed bool, sizes bar.Sizes, b int, off uint64, n int) error {
	switch {
	case closed:
		return hwarch.ErrDeviceClosed
	case b < 0 || b >= len(sizes) || sizes[b] == 0:
		return hwarch.ErrBadBAR
	case off%4 != 0:
		return hwarch.ErrAlignment
	}
	hi, lo := bits.Mul64(4, uint64(n))
	end, carry := bits.Add64(off, lo, 0)
	if hi != 0 || carry != 0 || end > sizes[b] {
		return hwarch.ErrBAROffset
	}
	return nil
}

// decodeDevFuzzConfig decodes the header of a FuzzDeviceBAR input — three
// bytes: the generation, the revision (fuzzRevisions), and flags (bit 0:
// start ready; bits 1-2: firmware timing 0 fuzzFirmware, 1
// fuzzFirmwareInstant, 2 fuzzFirmwareSlowAck) — into the configuration of
// the device it drives.
func decodeDevFuzzConfig(in *devFuzzIn) DeviceConfig {
	g := hwarch.Generations()[int(in.u8())%3]
	rev := fuzzRevisions[int(in.u8())%len(fuzzRevisions)]
	flags := in.u8()
	fw := fuzzFirmware
	switch flags & 6 {
	case 2:
		fw = fuzzFirmwareInstant
	case 4:
		fw = fuzzFirmwareSlowAck
	}
	return DeviceConfig{Generation: g, Revision: rev, Firmware: fw, Ready: flags&1 != 0, RoutingID: 1}
}

// devOp is one operation of a FuzzDeviceBAR input, decoded (decodeDevOp):
// what to call on the device, with which arguments.
type devOp struct {
	code     byte          // fopRead32 … fopQEMUReset, or fopClose
	bar      int           // the BAR of an access
	off      uint64        // its offset
	n        int           // the words of fopReadBAR and fopWriteBAR (0..64)
	val      uint32        // the word written (fopWriteBAR: the first; words), the mailbox request's type, the QEMU register's value
	resetMap uint32        // the mailbox request's TPB reset map
	dur      time.Duration // fopSleep's duration
}

// decodeDevOp decodes the operation of code byte op (already read from in:
// fopClose, or any other byte modulo fopCount) and its operands, for a
// device of geometry geo whose registers are on BAR reg and whose
// fuzzBases are bases. It reads the operands the device would take, in
// that order, and depends on nothing the device does.
func decodeDevOp(in *devFuzzIn, op byte, geo *hwarch.Geometry, reg int, bases []uint64) devOp {
	if op == fopClose {
		return devOp{code: fopClose}
	}
	o := devOp{code: op % fopCount}
	switch o.code {
	case fopRead32:
		o.bar = fuzzBAR(in, reg)
		o.off = fuzzOffset(in, bases)
	case fopWrite32:
		o.bar = fuzzBAR(in, reg)
		o.off = fuzzOffset(in, bases)
		o.val = in.u32()
	case fopReadBAR:
		o.bar = fuzzBAR(in, reg)
		o.off = fuzzOffset(in, bases)
		o.n = int(in.u8()) % 65
	case fopWriteBAR:
		o.bar = fuzzBAR(in, reg)
		o.off = fuzzOffset(in, bases)
		o.n = int(in.u8()) % 65
		o.val = in.u32()
	case fopSleep:
		o.dur = time.Duration(in.u16()) * 10 * time.Nanosecond
	case fopMailboxReset:
		o.val = uint32(in.u8() % 4)
		o.resetMap = geo.TPBResetMap(uint32(in.u8()))
	case fopQEMUReset:
		v, asMap := uint32(in.u8()), in.u8()&1 == 0
		if geo.Generation != hwarch.Sunda && asMap {
			v = geo.TPBResetMap(v)
		}
		o.val = v
	}
	return o
}

// words returns the words an fopWriteBAR writes: val, val+1, … (n of them).
func (o devOp) words() []uint32 {
	src := make([]uint32, o.n)
	for i := range src {
		src[i] = o.val + uint32(i)
	}
	return src
}

var fuzzSentinels = []error{hwarch.ErrBadBAR, hwarch.ErrBAROffset, hwarch.ErrAlignment, hwarch.ErrDeviceClosed}

// fuzzProg builds FuzzDeviceBAR inputs: seeds stay readable and correct.
type fuzzProg []byte

// Selectors of fuzzBAR.
const (
	fzReg  byte = 0 // the register BAR
	fzBAR4 byte = 1
	fzBAR0 byte = 4
	fzBAR2 byte = 5
	fzBAR1 byte = 6
)

func newFuzzProg(gen hwarch.Generation, rev uint8, ready bool) fuzzProg {
	r := byte(slices.Index(fuzzRevisions, rev))
	return fuzzProg{byte(gen - hwarch.Sunda), r, map[bool]byte{false: 0, true: 1}[ready]}
}

// off encodes a raw 64-bit offset (mode 0).
func fzOff(off uint64) []byte {
	return []byte{0, byte(off), byte(off >> 8), byte(off >> 16), byte(off >> 24), byte(off >> 32), byte(off >> 40), byte(off >> 48), byte(off >> 56)}
}

func fzU32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

func (p fuzzProg) op(code byte, parts ...[]byte) fuzzProg {
	p = append(p, code)
	for _, b := range parts {
		p = append(p, b...)
	}
	return p
}

func (p fuzzProg) read(bar byte, off uint64) fuzzProg {
	return p.op(fopRead32, []byte{bar}, fzOff(off))
}

func (p fuzzProg) write(bar byte, off uint64, v uint32) fuzzProg {
	return p.op(fopWrite32, []byte{bar}, fzOff(off), fzU32(v))
}

func (p fuzzProg) readN(bar byte, off uint64, n byte) fuzzProg {
	return p.op(fopReadBAR, []byte{bar}, fzOff(off), []byte{n})
}

func (p fuzzProg) writeN(bar byte, off uint64, n byte, v uint32) fuzzProg {
	return p.op(fopWriteBAR, []byte{bar}, fzOff(off), []byte{n}, fzU32(v))
}

// sleep sleeps units × 10 ns.
func (p fuzzProg) sleep(units uint16) fuzzProg {
	return p.op(fopSleep, []byte{byte(units), byte(units >> 8)})
}

func (p fuzzProg) mailbox(typ, ncs byte) fuzzProg { return p.op(fopMailboxReset, []byte{typ, ncs}) }

// qemu writes ncs to the QEMU reset register, as a TPB map on V3/V4 when asMap.
func (p fuzzProg) qemu(ncs byte, asMap bool) fuzzProg {
	return p.op(fopQEMUReset, []byte{ncs, map[bool]byte{true: 0, false: 1}[asMap]})
}

func (p fuzzProg) close() fuzzProg { return p.op(fopClose) }

// fuzzSeeds are the FuzzDeviceBAR seeds: boot, mailbox and QEMU resets,
// unmapped and refused accesses on each generation.
func fuzzSeeds() []fuzzProg {
	v4 := hwarch.MustGeometry(hwarch.Mariana).BAR0
	v3 := hwarch.MustGeometry(hwarch.Cayman).BAR0
	v2 := hwarch.MustGeometry(hwarch.Sunda).BAR0
	return []fuzzProg{
		{0, 0, 0},
		// Mariana silicon: 0xDEADBEEF before boot, the routing id after,
		// then a mailbox device reset that clears a plain register.
		newFuzzProg(hwarch.Mariana, 0, false).
			read(fzReg, v4.MiscRAM+hwarch.MiscRoutingID).write(fzReg, 0x680_0000, 5).
			sleep(2000).read(fzReg, v4.MiscRAM+hwarch.MiscRoutingID).
			write(fzReg, 0x680_0000, 0x1234_5678).mailbox(1, 0).sleep(100).
			write(fzReg, 0x680_0000, 9).sleep(0xFFFF).read(fzReg, 0x680_0000),
		// Cayman QEMU: a TPB reset through the QEMU register, an array
		// across the end of the MISC RAM, unmapped accesses.
		newFuzzProg(hwarch.Cayman, hwarch.RevisionQEMU, true).
			write(fzReg, 0x4000_0100, 0x1234_5678).qemu(0x06, true).
			writeN(fzReg, v3.MiscRAM+bar.MiscRAMSize-8, 4, 0x11).
			write(fzReg, 0x2000_0000, 1).read(fzReg, 0x2000_0000).
			sleep(0xFFFF).read(fzReg, 0x4000_0100).readN(fzBAR4, 16*hwarch.GiB-16, 8),
		// Sunda QEMU: no BAR0, registers on BAR2, the QEMU device reset,
		// out-of-range and misaligned accesses, then close.
		newFuzzProg(hwarch.Sunda, hwarch.RevisionQEMU, true).
			read(fzBAR0, 0).write(fzReg, 0x3000_0000, 7).qemu(1, false).
			readN(fzReg, math.MaxUint64-3, 64).write(fzReg, v2.MiscRAM+2, 1).
			sleep(0xFFFF).read(fzReg, 0x3000_0000).close().read(fzReg, 0).sleep(1),
		// Mariana EMU: the BAR4 gap, a mailbox TPB reset, semaphore INCRs
		// through an array.
		newFuzzProg(hwarch.Mariana, hwarch.RevisionEMU, true).
			write(fzBAR4, 36*hwarch.GiB, 5).read(fzBAR4, 36*hwarch.GiB).mailbox(2, 0x0F).
			readN(fzReg, v4.TPBWindow(0)+v4.EventsOffset, 16).sleep(0x1000).
			writeN(fzReg, v4.TPBWindow(1)+v4.SemIncrOffset, 4, 1).sleep(0x4000),
		// Sunda silicon: writes before boot are dropped; a write during a
		// device reset is dropped; coalesced requests.
		newFuzzProg(hwarch.Sunda, 0, false).
			write(fzReg, 0x30E0_4000, 1).sleep(2100).write(fzReg, 0x30E0_4000, 2).
			mailbox(1, 0).sleep(400).write(fzReg, 0x30E0_4000, 3).mailbox(2, 1).
			sleep(0xFFFF).writeN(fzReg, 0x30E0_3FF8, 4, 0xAA).read(fzReg, 0x30E0_4000),
		// Cayman, slow acknowledgement: a request joins a reset after its
		// acknowledgement; it must be acknowledged too.
		fuzzProg{1, 0, 1 | 4}.mailbox(2, 1).sleep(3100).mailbox(2, 2).sleep(0xFFFF),
		// Mariana, instant firmware: resets complete within the doorbell write.
		fuzzProg{2, 0, 1 | 2}.write(fzReg, 0x680_0000, 3).mailbox(1, 0).
			read(fzReg, 0x680_0000).mailbox(2, 0x81).qemu(0xFF, true),
	}
}

func FuzzDeviceBAR(f *testing.F) {
	// Header: generation, revision, flags (bit 0: start ready; bits 1-2:
	// firmware timing 0 short, 1 instant resets, 2 slow acknowledgement); then
	// operations (see fuzzDeviceBAR and fuzzProg).
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(fuzzDeviceBAR)
}

// fuzzDeviceBAR runs the operations data encodes on a device and checks, after
// every one:
//
//   - the device never panics, and every error wraps one of the four
//     hwarch sentinels — exactly the one the reference rule fuzzWantErr
//     names, and an access fails if and only if that rule says so;
//   - a refused access changes nothing: not the clock, not the counters;
//   - an accepted access of n words moves the clock by exactly n read (or
//     write) latencies and counts n reads (or writes); a sleep moves it by
//     exactly its duration;
//   - shadow invariant: a few plain APB registers (plainAPB) hold what the
//     fuzzer's own accepted writes to them stored, or 0 after a completed
//     device reset. No other access — unmapped, out of range, to another
//     BAR, to another block, or a TPB reset — changes them. A write that the
//     device drops (booting, device reset) leaves them as they were. When
//     one array write both covers a shadow register and sees a drop or a
//     reset complete, the register's value is no longer predicted;
//   - while the device is ready with no reset in flight, a single read of an
//     unmapped offset answers 0xFFFFFFFF and a read of a shadow register its
//     shadow value;
//   - at the end, once a second has passed, no reset is left running and
//     every doorbell has been answered (+0x800 reads 0).
func fuzzDeviceBAR(t *testing.T, data []byte) {
	in := &devFuzzIn{b: data}
	cfg := decodeDevFuzzConfig(in)
	d, err := NewDevice(cfg)
	if err != nil {
		t.Fatalf("NewDevice(%s, rev %#x): %v", cfg.Generation, cfg.Revision, err)
	}
	geo := d.Geometry()
	reg := d.RegisterBAR()
	sizes := d.Config().BARs
	rLat, wLat := FromDuration(d.Config().MMIO.Read), FromDuration(d.Config().MMIO.Write)
	bases := fuzzBases(d)

	shadowOffs := plainAPB(geo)
	known := map[uint64]uint32{} // shadow register -> the value it must hold
	for _, off := range shadowOffs {
		known[off] = 0
	}
	closed := false

	checkErr := func(op string, b int, off uint64, n int, err error) bool {
		t.Helper()
		want := fuzzWantErr(closed, sizes, b, off, n)
		if want == nil {
			if err != nil {
				t.Fatalf("%s bar %d off %#x n %d: unexpected error %v", op, b, off, n, err)
			}
			return true
		}
		if err == nil {
			t.Fatalf("%s bar %d off %#x n %d: no error, want %v", op, b, off, n, want)
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s bar %d off %#x n %d: error %v does not wrap %v", op, b, off, n, err, want)
		}
		for _, s := range fuzzSentinels {
			if s != want && errors.Is(err, s) {
				t.Fatalf("%s: error %v also wraps %v", op, err, s)
			}
		}
		return false
	}
	// quiet reports whether no event can change anything during the next
	// access: the device is up and no reset is in flight.
	quiet := func() bool { return d.st.Phase == PhaseReady && !d.st.Reset.Active }
	shadowed := func(off uint64, n int) []int {
		var idx []int
		for _, s := range shadowOffs {
			if s >= off && (s-off)/4 < uint64(n) && (s-off)%4 == 0 {
				idx = append(idx, int((s-off)/4))
			}
		}
		return idx
	}

	for step := 0; in.more() && step < 128; step++ {
		before, now := d.Stats(), d.Now()
		wasQuiet := quiet()
		var wroteShadow map[uint64]uint32 // shadow offsets an accepted write covered, with the values
		accepted, words, isWrite, sleep := false, 0, false, false

		switch o := decodeDevOp(in, in.u8(), geo, reg, bases); o.code {
		case fopClose:
			if err := d.Close(); (err == nil) == closed {
				t.Fatalf("Close: err %v with closed=%v", err, closed)
			} else if err != nil && !errors.Is(err, hwarch.ErrDeviceClosed) {
				t.Fatalf("Close: %v", err)
			}
			closed = true
		case fopRead32:
			b, off := o.bar, o.off
			v, err := d.Read32(b, off)
			if accepted = checkErr("Read32", b, off, 1, err); accepted {
				words = 1
				if wasQuiet {
					if b == reg {
						if _, _, ok := d.Atlas().Lookup(off); !ok && v != bar.UnmappedRead {
							t.Fatalf("unmapped read bar %d %#x = %#x", b, off, v)
						}
						if want, ok := known[off]; ok && v != want {
							t.Fatalf("shadow register %#x reads %#x, want %#x", off, v, want)
						}
					}
					if b == hwarch.BAR4 {
						if _, ok := d.BAR4().Translate(off); !ok && v != bar.UnmappedRead {
							t.Fatalf("unmapped BAR4 read %#x = %#x", off, v)
						}
					}
				}
			} else if v != 0 {
				t.Fatalf("refused Read32 returned %#x", v)
			}
		case fopWrite32:
			b, off, v := o.bar, o.off, o.val
			err := d.Write32(b, off, v)
			if accepted = checkErr("Write32", b, off, 1, err); accepted {
				words, isWrite = 1, true
				if b == reg {
					if _, ok := known[off]; ok {
						wroteShadow = map[uint64]uint32{off: v}
					}
				}
			}
		case fopReadBAR:
			b, off, n := o.bar, o.off, o.n
			if accepted = checkErr("ReadBAR", b, off, n, d.ReadBAR(b, off, make([]uint32, n))); accepted {
				words = n
			}
		case fopWriteBAR:
			b, off, n := o.bar, o.off, o.n
			src := o.words()
			if accepted = checkErr("WriteBAR", b, off, n, d.WriteBAR(b, off, src)); accepted {
				words, isWrite = n, true
				if b == reg {
					for _, i := range shadowed(off, n) {
						if wroteShadow == nil {
							wroteShadow = map[uint64]uint32{}
						}
						wroteShadow[off+4*uint64(i)] = src[i]
					}
				}
			}
		case fopSleep:
			sleep = true
			dur := o.dur
			err := d.Sleep(dur)
			if closed {
				if !errors.Is(err, hwarch.ErrDeviceClosed) {
					t.Fatalf("Sleep on a closed device: %v", err)
				}
			} else {
				if err != nil {
					t.Fatalf("Sleep: %v", err)
				}
				if got := d.Now(); got != now+FromDuration(dur) {
					t.Fatalf("Sleep(%v) moved the clock from %v to %v", dur, now, got)
				}
			}
		case fopMailboxReset: // a whole mailbox request: map, type, doorbell
			typ, m := o.val, o.resetMap
			misc := geo.BAR0.MiscRAM
			err := d.WriteBAR(reg, misc+hwarch.MiscResetTPBMap, []uint32{m})
			if err == nil {
				err = d.Write32(reg, misc+hwarch.MiscResetRequest, typ)
			}
			if err == nil {
				err = d.Write32(reg, misc+hwarch.MiscTrigger, 1)
			}
			if accepted = checkErr("mailbox reset", reg, misc, 1, err); accepted {
				words, isWrite = 3, true
			}
		case fopQEMUReset:
			v := o.val
			off := geo.BAR0.QEMUResetReg
			if accepted = checkErr("QEMU reset", reg, off, 1, d.Write32(reg, off, v)); accepted {
				words, isWrite = 1, true
			}
		}

		after := d.Stats()
		switch {
		case accepted && isWrite:
			if got := d.Now(); got != now+Time(words)*wLat {
				t.Fatalf("step %d: %d writes moved the clock from %v to %v", step, words, now, got)
			}
			if after.Writes != before.Writes+uint64(words) {
				t.Fatalf("step %d: writes counted %d -> %d for %d words", step, before.Writes, after.Writes, words)
			}
		case accepted:
			if got := d.Now(); got != now+Time(words)*rLat {
				t.Fatalf("step %d: %d reads moved the clock from %v to %v", step, words, now, got)
			}
			if after.Reads != before.Reads+uint64(words) {
				t.Fatalf("step %d: reads counted %d -> %d for %d words", step, before.Reads, after.Reads, words)
			}
		case !sleep:
			// Refused, or Close: nothing moves.
			if after != before || d.Now() != now {
				t.Fatalf("step %d: a refused access changed the device: %+v at %v -> %+v at %v", step, before, now, after, d.Now())
			}
		}

		// Update the shadow, then check it against the register store.
		reset := after.DeviceResets != before.DeviceResets
		dropped := after.DroppedWrites != before.DroppedWrites
		if reset {
			for off := range known {
				known[off] = 0
			}
		}
		for off, v := range wroteShadow {
			switch {
			case !dropped && !reset:
				known[off] = v
			case words == 1 && !dropped:
				// The store came first, the completed reset cleared it.
			case words == 1 && dropped && !reset:
				// Dropped: unchanged.
			default:
				delete(known, off)
			}
		}
		for off, want := range known {
			if got, _ := d.regs.ReadU32(off); got != want {
				t.Fatalf("step %d: shadow register %#x holds %#x, want %#x (stats %+v)", step, off, got, want, after)
			}
		}
		if p := d.Phase(); p > PhaseDeviceReset {
			t.Fatalf("step %d: phase %v", step, p)
		}
	}

	if closed {
		return
	}
	// Liveness: a second later the firmware is up and no reset is left.
	if err := d.Sleep(time.Second); err != nil {
		t.Fatal(err)
	}
	if d.Phase() != PhaseReady || d.st.Reset.Active {
		t.Fatalf("a second after the last operation: phase %v, reset %+v", d.Phase(), d.st.Reset)
	}
	// Every doorbell has been answered: a non-zero trigger either started or
	// joined a reset, which acknowledges it, or was dropped as unserved.
	if v := d.st.Misc[hwarch.MiscTrigger/4]; v != 0 {
		t.Fatalf("a second after the last operation the doorbell still reads %#x (stats %+v)", v, d.Stats())
	}
}
