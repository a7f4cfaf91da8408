// Package ndltest is the contract every ndl backend keeps: RunContract runs
// one suite of checks against any implementation of ndl.Device and of the
// optional interfaces it declares (ndl.Sleeper, ndl.SliceSleeper, ndl.Clock,
// ndl.HostMemory, ndl.LazyHostMemory),
// so the in-process simulated device, the remote client and the kernel
// backend are held to the same behaviour, and a backend that gains or loses
// an optional interface without saying so fails.
//
// Expectations come from hw/arch and the ndl interfaces, never from a model:
// the scratch register the round trips use is the first word of NeuronCore
// 0's SBUF window (hwarch.BAR0Map.TPBWindow(0)), plain on-chip RAM on every
// generation, which the simulated device stores and the kernel driver's fake
// (runtime/ndl/kernelfake) keeps in its register file.
//
// The package imports only the runtime side (ndl, hw/arch): the runs
// against the simulated and remote backends live outside runtime/
// (internal/ndlcontract), since runtime/ never imports sim/.
package ndltest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Capabilities is what a backend under test must show: its identity, its
// BAR sizes and which optional interfaces it implements. Every field is an
// expectation; a backend that differs in any fails.
type Capabilities struct {
	// Identity is the PCI identity the device must report: a known Amazon
	// device id (hwarch.GenerationOfDevice) and the revision it was opened
	// with.
	Identity hwarch.PCIIdentity
	// BARs is the size each PCI BAR 0..5 must report (0: absent, and every
	// access to it fails with ndl.ErrBadBAR).
	BARs [6]uint64
	// Sleeper, Clock, HostMemory and LazyHostMemory say whether the
	// backend implements ndl.Sleeper, ndl.Clock, ndl.HostMemory and
	// ndl.LazyHostMemory (which is checked only with ndl.HostMemory, whose
	// HostRead, HostWrite and HostFree reach its buffers).
	Sleeper, Clock, HostMemory, LazyHostMemory bool
	// SliceSleeper says whether the backend implements ndl.SliceSleeper
	// (which embeds ndl.Sleeper and ndl.Clock: those are declared too).
	SliceSleeper bool
	// HostFreeErr and HostAccessErr are the sentinels the backend's errors
	// wrap for HostFree of an address that is not an allocated buffer's
	// base, and for HostRead/HostWrite of a range outside every allocated
	// buffer. Required when HostMemory is set.
	HostFreeErr, HostAccessErr error
	// HostLazyErr is the sentinel the backend's error wraps for HostWrite
	// into a lazy buffer. Required when LazyHostMemory is set.
	HostLazyErr error
}

// check is one part of the contract. run returns nil when dev keeps it, or
// an error naming every way it does not.
type check struct {
	name string
	// applies reports whether the check concerns a backend of these
	// capabilities (nil: every backend).
	applies func(Capabilities) bool
	run     func(dev ndl.Device, want Capabilities) error
	// runPair, when set instead of run, checks dev against other, a
	// second device opened alike.
	runPair func(dev, other ndl.Device, want Capabilities) error
}

// runOn runs c on devices from open.
func (c check) runOn(open func() ndl.Device, want Capabilities) error {
	if c.runPair != nil {
		return c.runPair(open(), open(), want)
	}
	return c.run(open(), want)
}

// checks is the contract, in the order RunContract runs it.
var checks = []check{
	{"interfaces", nil, checkInterfaces, nil},
	{"identity", nil, checkIdentity, nil},
	{"bar-sizes", nil, checkBARSizes, nil},
	{"round-trip", nil, checkRoundTrip, nil},
	{"zero-length", nil, checkZeroLength, nil},
	{"absent-bars", nil, checkAbsentBARs, nil},
	{"alignment", nil, checkAlignment, nil},
	{"bounds", nil, checkBounds, nil},
	{"close", nil, checkClose, nil},
	{"sleeper", func(c Capabilities) bool { return c.Sleeper }, checkSleeper, nil},
	{"slice-sleeper", func(c Capabilities) bool { return c.SliceSleeper }, nil, checkSliceSleeper},
	{"clock", func(c Capabilities) bool { return c.Clock }, checkClock, nil},
	{"host-memory", func(c Capabilities) bool { return c.HostMemory }, checkHostMemory, nil},
	{"lazy-host-memory", func(c Capabilities) bool { return c.LazyHostMemory }, checkLazyHostMemory, nil},
}

// RunContract runs the contract against the backend open returns, one
// subtest per check, each on a device of its own (two for the check that
// compares slices of a sleep with one sleep): open is called once per
// device and must return a device that is up (its registers answer), and
// release it when t ends (t.Cleanup). A check that does not apply to want
// (an optional interface the backend does not declare) is not run; the
// "interfaces" check fails when the backend implements an optional interface
// want does not declare, or lacks one it does.
func RunContract(t *testing.T, open func(t *testing.T) ndl.Device, want Capabilities) {
	t.Helper()
	for _, c := range checks {
		if c.applies != nil && !c.applies(want) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			if err := c.runOn(func() ndl.Device { return open(t) }, want); err != nil {
				t.Error(err)
			}
		})
	}
}

// failures collects a check's findings.
type failures []error

func (f *failures) add(format string, args ...any) { *f = append(*f, fmt.Errorf(format, args...)) }

func (f failures) err() error { return errors.Join(f...) }

// want expects err to wrap sentinel.
func (f *failures) want(what string, err, sentinel error) {
	switch {
	case err == nil:
		f.add("%s succeeded, want an error wrapping %v", what, sentinel)
	case !errors.Is(err, sentinel):
		f.add("%s: %v, want an error wrapping %v", what, err, sentinel)
	}
}

// ok expects err to be nil.
func (f *failures) ok(what string, err error) {
	if err != nil {
		f.add("%s: %v", what, err)
	}
}

func checkInterfaces(dev ndl.Device, want Capabilities) error {
	var f failures
	_, sleeper := dev.(ndl.Sleeper)
	_, clock := dev.(ndl.Clock)
	_, host := dev.(ndl.HostMemory)
	_, lazy := dev.(ndl.LazyHostMemory)
	_, slicer := dev.(ndl.SliceSleeper)
	for _, i := range []struct {
		name      string
		has, want bool
	}{
		{"ndl.Sleeper", sleeper, want.Sleeper}, {"ndl.Clock", clock, want.Clock}, {"ndl.HostMemory", host, want.HostMemory},
		{"ndl.LazyHostMemory", lazy, want.LazyHostMemory}, {"ndl.SliceSleeper", slicer, want.SliceSleeper},
	} {
		switch {
		case i.has && !i.want:
			f.add("%T implements %s but the backend's capabilities do not declare it", dev, i.name)
		case !i.has && i.want:
			f.add("%T does not implement %s but the backend's capabilities declare it", dev, i.name)
		}
	}
	if want.HostMemory && (want.HostFreeErr == nil || want.HostAccessErr == nil) {
		f.add("capabilities declare ndl.HostMemory without the sentinels of its errors (HostFreeErr, HostAccessErr)")
	}
	if want.LazyHostMemory && (!want.HostMemory || want.HostLazyErr == nil) {
		f.add("capabilities declare ndl.LazyHostMemory without ndl.HostMemory or without the sentinel of a write into a lazy buffer (HostLazyErr)")
	}
	return f.err()
}

func checkIdentity(dev ndl.Device, want Capabilities) error {
	var f failures
	id := dev.Identity()
	if id != want.Identity {
		f.add("Identity() = %v, want %v", id, want.Identity)
	}
	if id.Vendor != hwarch.VendorAmazon {
		f.add("Identity() vendor %#04x, want %#04x (Amazon)", id.Vendor, hwarch.VendorAmazon)
	}
	if _, err := hwarch.GenerationOfDevice(id.Vendor, id.Device); err != nil {
		f.add("Identity() %v is not a known Neuron device: %v", id, err)
	}
	return f.err()
}

// scratchWords is the length of the scratch range: long enough that the
// kernel backend (1024 words per ioctl) splits an access of it.
const scratchWords = 2*1024 + 3

// scratch returns the register BAR of dev's identity and the scratch
// range's offset and size in words: the start of NeuronCore 0's SBUF
// window.
func scratch(id hwarch.PCIIdentity) (bar int, off uint64, words int, err error) {
	g, err := id.Generation()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("identity %v: %w", id, err)
	}
	geo, err := hwarch.GeometryOf(g)
	if err != nil {
		return 0, 0, 0, err
	}
	if geo.SBUFWindowSize < 4*scratchWords {
		return 0, 0, 0, fmt.Errorf("%s: SBUF window of %d bytes cannot hold the %d-word scratch range", g, geo.SBUFWindowSize, scratchWords)
	}
	return geo.BAR0.RegisterBAR(id.Mode()), geo.BAR0.TPBWindow(0), scratchWords, nil
}

func checkBARSizes(dev ndl.Device, want Capabilities) error {
	var f failures
	for b := range want.BARs {
		if got := dev.BARSize(b); got != want.BARs[b] {
			f.add("BARSize(%d) = %#x, want %#x", b, got, want.BARs[b])
		}
	}
	for _, b := range []int{-1, 6, 7, math.MaxInt} {
		if got := dev.BARSize(b); got != 0 {
			f.add("BARSize(%d) = %#x, want 0 (no such PCI BAR)", b, got)
		}
	}
	bar, off, words, err := scratch(dev.Identity())
	if err != nil {
		f.add("%v", err)
	} else if size := dev.BARSize(bar); off+4*uint64(words) > size {
		f.add("register BAR%d of %#x bytes does not hold the scratch range [%#x, +%d words)", bar, size, off, words)
	}
	return f.err()
}

// pattern returns n words that differ from each other and from 0, seeded by
// seed so two patterns differ too.
func pattern(n int, seed uint32) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = seed ^ uint32(i)*0x9E37_79B9 ^ 0x8000_0001
	}
	return p
}

func checkRoundTrip(dev ndl.Device, _ Capabilities) error {
	var f failures
	bar, off, words, err := scratch(dev.Identity())
	if err != nil {
		return err
	}
	for i, v := range []uint32{0xA5A5_5A5A, 0, 0xFFFF_FFFF, 0x0123_4567} {
		f.ok("Write32", dev.Write32(bar, off, v))
		got, err := dev.Read32(bar, off)
		f.ok("Read32", err)
		if got != v {
			f.add("round trip %d: Write32(%d, %#x, %#x) then Read32 = %#x", i, bar, off, v, got)
		}
	}
	block := pattern(words, 0x1111_0000)
	f.ok("WriteBAR", dev.WriteBAR(bar, off, block))
	got := make([]uint32, words)
	f.ok("ReadBAR", dev.ReadBAR(bar, off, got))
	if i := firstDiff(got, block); i >= 0 {
		f.add("WriteBAR then ReadBAR of %d words at BAR%d %#x: word %d is %#x, want %#x", words, bar, off, i, got[i], block[i])
	}
	// Words written one at a time are seen by a block read, and the other
	// way round.
	for _, i := range []int{0, 1, 1023, 1024, words - 1} {
		v, err := dev.Read32(bar, off+4*uint64(i))
		f.ok("Read32", err)
		if v != block[i] {
			f.add("WriteBAR then Read32 of word %d: %#x, want %#x", i, v, block[i])
		}
		block[i] = ^block[i]
		f.ok("Write32", dev.Write32(bar, off+4*uint64(i), block[i]))
	}
	f.ok("ReadBAR", dev.ReadBAR(bar, off, got))
	if i := firstDiff(got, block); i >= 0 {
		f.add("Write32 then ReadBAR: word %d is %#x, want %#x", i, got[i], block[i])
	}
	return f.err()
}

func firstDiff(a, b []uint32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func checkZeroLength(dev ndl.Device, _ Capabilities) error {
	var f failures
	bar, off, _, err := scratch(dev.Identity())
	if err != nil {
		return err
	}
	f.ok("Write32", dev.Write32(bar, off, 0x5EED))
	f.ok("ReadBAR of no words", dev.ReadBAR(bar, off, nil))
	f.ok("WriteBAR of no words", dev.WriteBAR(bar, off, []uint32{}))
	v, err := dev.Read32(bar, off)
	f.ok("Read32", err)
	if v != 0x5EED {
		f.add("after zero-length accesses the scratch word is %#x, want 0x5eed", v)
	}
	return f.err()
}

// attempt is one BAR access and what it returned.
type attempt struct {
	name string
	err  error
}

// access runs the four BAR accesses at off of bar: Read32 and Write32 of
// one word, ReadBAR and WriteBAR of words words. With words > 1 only the
// block accesses run.
func access(dev ndl.Device, bar int, off uint64, words int) []attempt {
	var as []attempt
	if words == 1 {
		_, rerr := dev.Read32(bar, off)
		as = append(as,
			attempt{fmt.Sprintf("Read32(%d, %#x)", bar, off), rerr},
			attempt{fmt.Sprintf("Write32(%d, %#x)", bar, off), dev.Write32(bar, off, 0xBAD0_BAD0)})
	}
	return append(as,
		attempt{fmt.Sprintf("ReadBAR(%d, %#x, %d words)", bar, off, words), dev.ReadBAR(bar, off, make([]uint32, words))},
		attempt{fmt.Sprintf("WriteBAR(%d, %#x, %d words)", bar, off, words), dev.WriteBAR(bar, off, pattern(words, 0xBAD))})
}

func checkAbsentBARs(dev ndl.Device, want Capabilities) error {
	var f failures
	bars := []int{-1, 6, 255, 256}
	for b, size := range want.BARs {
		if size == 0 {
			bars = append(bars, b)
		}
	}
	for _, b := range bars {
		for _, a := range access(dev, b, 0, 1) {
			f.want(a.name, a.err, ndl.ErrBadBAR)
		}
	}
	return f.err()
}

func checkAlignment(dev ndl.Device, _ Capabilities) error {
	var f failures
	bar, off, _, err := scratch(dev.Identity())
	if err != nil {
		return err
	}
	f.ok("WriteBAR", dev.WriteBAR(bar, off, []uint32{0x600D_0000, 0x600D_0001}))
	for _, o := range []uint64{off + 1, off + 2, off + 3} {
		for _, a := range access(dev, bar, o, 1) {
			f.want(a.name, a.err, ndl.ErrAlignment)
		}
	}
	got := make([]uint32, 2)
	f.ok("ReadBAR", dev.ReadBAR(bar, off, got))
	if !slices.Equal(got, []uint32{0x600D_0000, 0x600D_0001}) {
		f.add("misaligned writes refused, yet the words around them changed: %#x, want [0x600d0000 0x600d0001]", got)
	}
	return f.err()
}

func checkBounds(dev ndl.Device, want Capabilities) error {
	var f failures
	for b, size := range want.BARs {
		if size == 0 {
			continue
		}
		if _, err := dev.Read32(b, size-4); err != nil {
			f.add("Read32 of BAR%d's last word (%#x): %v", b, size-4, err)
		}
		for _, c := range []struct {
			off   uint64
			words int
		}{{size, 1}, {size - 4, 2}, {size - 4, 1 << 16}, {math.MaxUint64 &^ 3, 1}, {math.MaxUint64 &^ 3, 2}} {
			for _, a := range access(dev, b, c.off, c.words) {
				f.want(a.name, a.err, ndl.ErrBAROffset)
			}
		}
	}
	return f.err()
}

func checkClose(dev ndl.Device, want Capabilities) error {
	var f failures
	id := dev.Identity()
	var sizes [6]uint64
	for b := range sizes {
		sizes[b] = dev.BARSize(b)
	}
	bar, off, _, err := scratch(id)
	if err != nil {
		return err
	}
	f.ok("Close", dev.Close())
	for _, b := range []int{bar, 6} {
		for _, a := range access(dev, b, off, 1) {
			f.want(a.name+" after Close", a.err, ndl.ErrClosed)
		}
	}
	f.want("a second Close", dev.Close(), ndl.ErrClosed)
	if s, ok := dev.(ndl.Sleeper); ok && want.Sleeper {
		f.want("Sleep after Close", s.Sleep(time.Microsecond), ndl.ErrClosed)
	}
	if s, ok := dev.(ndl.SliceSleeper); ok && want.SliceSleeper {
		_, err := s.SleepUntil(1<<40, 1)
		f.want("SleepUntil after Close", err, ndl.ErrClosed)
	}
	if got := dev.Identity(); got != id {
		f.add("Identity() after Close = %v, want %v", got, id)
	}
	for b := range sizes {
		if got := dev.BARSize(b); got != sizes[b] {
			f.add("BARSize(%d) after Close = %#x, want %#x", b, got, sizes[b])
		}
	}
	return f.err()
}

func checkSleeper(dev ndl.Device, want Capabilities) error {
	s, ok := dev.(ndl.Sleeper)
	if !ok {
		return fmt.Errorf("%T does not implement ndl.Sleeper", dev)
	}
	var f failures
	c, _ := dev.(ndl.Clock)
	if !want.Clock {
		c = nil // measured only where the backend declares a clock
	}
	now := func() uint64 {
		if c == nil {
			return 0
		}
		ps, err := c.ClockPS()
		f.ok("ClockPS", err)
		return ps
	}
	for _, d := range []time.Duration{0, time.Nanosecond, time.Microsecond, 3 * time.Millisecond} {
		before := now()
		f.ok(fmt.Sprintf("Sleep(%v)", d), s.Sleep(d))
		if after := now(); c != nil && (after < before || after-before < uint64(d.Nanoseconds())*1000) {
			f.add("Sleep(%v) moved the clock from %d ps to %d ps, want at least %d ps later", d, before, after, d.Nanoseconds()*1000)
		}
	}
	if c == nil {
		return f.err() // a wall-clock sleeper may treat these as it likes
	}
	// A device clock refuses to go back or past units.MaxTimePS (math.MaxInt64
	// ns is past it from any time), and does not move.
	for _, d := range []time.Duration{-time.Nanosecond, math.MinInt64, math.MaxInt64} {
		before := now()
		if err := s.Sleep(d); err == nil {
			f.add("Sleep(%v) succeeded, want it refused (negative, or past the latest time %d ps)", d, units.MaxTimePS)
		}
		if after := now(); after != before {
			f.add("a refused Sleep(%v) moved the clock from %d ps to %d ps", d, before, after)
		}
	}
	return f.err()
}

// maxSlices bounds the SleepUntil calls of one sleep in slices: a backend
// that never reports done fails rather than hangs.
const maxSlices = 1 << 20

// checkSliceSleeper holds ndl.SliceSleeper to its documentation: calls
// repeated until done, at any event bound, take the clock exactly to the
// time asked and as far as one Sleep of the same span takes another device
// opened alike; a further call at that time is done at once; a time
// already passed is done at once without moving the clock; a time past
// units.MaxTimePS is refused without moving it. (After Close: "close".)
func checkSliceSleeper(dev, other ndl.Device, want Capabilities) error {
	ss, ok := dev.(ndl.SliceSleeper)
	if !ok {
		return fmt.Errorf("%T does not implement ndl.SliceSleeper", dev)
	}
	one, ok := other.(ndl.SliceSleeper)
	if !ok {
		return fmt.Errorf("%T does not implement ndl.SliceSleeper", other)
	}
	var f failures
	clock := func(c ndl.Clock) uint64 {
		ps, err := c.ClockPS()
		f.ok("ClockPS", err)
		return ps
	}
	for _, d := range []time.Duration{0, time.Nanosecond, 3 * time.Microsecond, 3 * time.Millisecond} {
		for _, maxEvents := range []int{0, 1, 1024} {
			b0 := clock(one)
			f.ok(fmt.Sprintf("Sleep(%v)", d), one.Sleep(d))
			slept := clock(one) - b0

			a0 := clock(ss)
			to := a0 + uint64(d.Nanoseconds())*1000
			calls, prev, done := 0, a0, false
			for !done && calls < maxSlices {
				var err error
				done, err = ss.SleepUntil(to, maxEvents)
				calls++
				if err != nil {
					f.add("SleepUntil(%d, %d) from %d ps, call %d: %v", to, maxEvents, a0, calls, err)
					break
				}
				now := clock(ss)
				if now < prev || now > to {
					f.add("SleepUntil(%d, %d), call %d, took the clock from %d ps to %d ps, want within [%d, %d]", to, maxEvents, calls, prev, now, prev, to)
					break
				}
				prev = now
			}
			if !done {
				f.add("SleepUntil(%d, %d) from %d ps not done after %d calls", to, maxEvents, a0, calls)
				return f.err()
			}
			if a1 := clock(ss); a1 != to || a1-a0 != slept {
				f.add("SleepUntil(%d, %d) until done took the clock from %d ps to %d ps; want %d ps, %d ps on, as one Sleep(%v) goes", to, maxEvents, a0, a1, to, slept, d)
			}
			done, err := ss.SleepUntil(to, maxEvents)
			if err != nil || !done {
				f.add("SleepUntil(%d, %d) again once done: done %v, %v; want done", to, maxEvents, done, err)
			}
			if now := clock(ss); now != to {
				f.add("SleepUntil(%d, %d) again once done moved the clock to %d ps", to, maxEvents, now)
			}
		}
	}
	// A time already passed: done at once, the clock kept (it never goes back).
	now := clock(ss)
	for _, ps := range []uint64{0, now - 1, now} {
		if ps > now {
			continue // now is 0
		}
		done, err := ss.SleepUntil(ps, 1)
		if err != nil || !done {
			f.add("SleepUntil(%d, 1) at %d ps, a time passed: done %v, %v; want done", ps, now, done, err)
		}
		if after := clock(ss); after != now {
			f.add("SleepUntil(%d, 1) at %d ps, a time passed, moved the clock to %d ps", ps, now, after)
		}
	}
	// Past the latest time: refused, nothing run.
	for _, ps := range []uint64{units.MaxTimePS + 1, math.MaxUint64} {
		done, err := ss.SleepUntil(ps, 1)
		if err == nil {
			f.add("SleepUntil(%d, 1), past the latest time %d ps: done %v, want it refused", ps, units.MaxTimePS, done)
		}
		if after := clock(ss); after != now {
			f.add("a refused SleepUntil(%d, 1) moved the clock from %d ps to %d ps", ps, now, after)
		}
	}
	return f.err()
}

func checkClock(dev ndl.Device, _ Capabilities) error {
	c, ok := dev.(ndl.Clock)
	if !ok {
		return fmt.Errorf("%T does not implement ndl.Clock", dev)
	}
	var f failures
	bar, off, _, err := scratch(dev.Identity())
	if err != nil {
		return err
	}
	prev, err := c.ClockPS()
	f.ok("ClockPS", err)
	for i := range 4 {
		if i%2 == 0 {
			_, err = dev.Read32(bar, off)
			f.ok("Read32", err)
		}
		now, err := c.ClockPS()
		f.ok("ClockPS", err)
		if now < prev {
			f.add("ClockPS went back from %d ps to %d ps", prev, now)
		}
		prev = now
	}
	return f.err()
}

func checkHostMemory(dev ndl.Device, want Capabilities) error {
	h, ok := dev.(ndl.HostMemory)
	if !ok {
		return fmt.Errorf("%T does not implement ndl.HostMemory", dev)
	}
	if want.HostFreeErr == nil || want.HostAccessErr == nil {
		return errors.New("capabilities declare ndl.HostMemory without HostFreeErr and HostAccessErr")
	}
	var f failures
	const size, align = 8192, 4096
	a, err := h.HostAlloc(size, align)
	if err != nil {
		return fmt.Errorf("HostAlloc(%d, %d): %w", size, align, err)
	}
	if a%align != 0 {
		f.add("HostAlloc(%d, %d) = %#x, not %d-aligned", size, align, a, align)
	}
	b, err := h.HostAlloc(size, 64)
	if err != nil {
		return errors.Join(append(f, fmt.Errorf("HostAlloc(%d, 64): %w", size, err))...)
	}
	if b < a+size && a < b+size {
		f.add("HostAlloc returned overlapping buffers [%#x, +%d) and [%#x, +%d)", a, size, b, size)
	}
	got := make([]byte, size)
	f.ok("HostRead of a new buffer", h.HostRead(a, got))
	if i := slices.IndexFunc(got, func(c byte) bool { return c != 0 }); i >= 0 {
		f.add("a new buffer's byte %d is %#x, want 0 (dma_alloc_coherent memory is zeroed)", i, got[i])
	}
	pa, pb := bytesOf(size, 1), bytesOf(size, 2)
	f.ok("HostWrite", h.HostWrite(a, pa))
	f.ok("HostWrite", h.HostWrite(b, pb))
	f.ok("HostRead", h.HostRead(a, got))
	if !slices.Equal(got, pa) {
		f.add("HostWrite then HostRead of buffer %#x: bytes differ", a)
	}
	part := make([]byte, 100)
	f.ok("HostRead of part of a buffer", h.HostRead(b+4000, part))
	if !slices.Equal(part, pb[4000:4100]) {
		f.add("HostRead(%#x+4000, 100 bytes) differs from what was written", b)
	}

	// Ranges outside every buffer, and frees of what is not a buffer.
	one := make([]byte, 1)
	unknown := max(a, b) + 1<<30
	f.want("HostRead past a buffer's end", h.HostRead(a+size-50, part), want.HostAccessErr)
	f.want("HostRead of an address never allocated", h.HostRead(unknown, one), want.HostAccessErr)
	f.want("HostWrite of an address never allocated", h.HostWrite(unknown, one), want.HostAccessErr)
	f.want("HostFree of an address never allocated", h.HostFree(unknown), want.HostFreeErr)
	f.want("HostFree inside a buffer", h.HostFree(a+64), want.HostFreeErr)

	f.ok("HostFree", h.HostFree(a))
	f.want("HostFree of a freed buffer", h.HostFree(a), want.HostFreeErr)
	f.want("HostRead of a freed buffer", h.HostRead(a, one), want.HostAccessErr)
	f.want("HostWrite of a freed buffer", h.HostWrite(a, one), want.HostAccessErr)
	f.ok("HostRead of the buffer still allocated", h.HostRead(b, got))
	if !slices.Equal(got, pb) {
		f.add("freeing buffer %#x changed buffer %#x", a, b)
	}
	f.ok("HostFree", h.HostFree(b))

	for _, r := range []struct{ size, align uint64 }{{0, 64}, {64, 3}, {64, 48}} {
		if pa, err := h.HostAlloc(r.size, r.align); err == nil {
			f.add("HostAlloc(%d, %d) = %#x, want it refused", r.size, r.align, pa)
		}
	}
	return f.err()
}

// lazyFill is the fill function of the lazy-host-memory check: byte i of the
// buffer is lazyByte(i), unless err is set, which it returns; it records
// every call.
type lazyFill struct {
	calls []lazyCall
	err   error
}

// lazyCall is one call of a fill function: the offset and length asked.
type lazyCall struct {
	off uint64
	n   int
}

func lazyByte(i uint64) byte { return byte(i*13) ^ byte(i>>8) ^ 0x5A }

func (l *lazyFill) fill(off uint64, p []byte) error {
	l.calls = append(l.calls, lazyCall{off, len(p)})
	if l.err != nil {
		return l.err
	}
	for i := range p {
		p[i] = lazyByte(off + uint64(i))
	}
	return nil
}

// errLazyGone is the lazy-host-memory check's fill error.
var errLazyGone = errors.New("ndltest: fill no longer holds this range")

func checkLazyHostMemory(dev ndl.Device, want Capabilities) error {
	lz, ok := dev.(ndl.LazyHostMemory)
	h, hok := dev.(ndl.HostMemory)
	switch {
	case !ok:
		return fmt.Errorf("%T does not implement ndl.LazyHostMemory", dev)
	case !hok || want.HostAccessErr == nil || want.HostFreeErr == nil || want.HostLazyErr == nil:
		return errors.New("capabilities declare ndl.LazyHostMemory without ndl.HostMemory and its sentinels (HostFreeErr, HostAccessErr, HostLazyErr)")
	}
	var f failures
	const size, align = 8192, 4096
	var l lazyFill
	a, err := lz.HostAllocLazy(size, align, l.fill)
	if err != nil {
		return fmt.Errorf("HostAllocLazy(%d, %d): %w", size, align, err)
	}
	if a%align != 0 {
		f.add("HostAllocLazy(%d, %d) = %#x, not %d-aligned", size, align, a, align)
	}
	for _, r := range []struct{ off, n uint64 }{{0, size}, {0, 16}, {4000, 100}, {size - 1, 1}, {64, 4096}} {
		l.calls = nil
		got := make([]byte, r.n)
		f.ok(fmt.Sprintf("HostRead of [+%d, +%d) of a lazy buffer", r.off, r.n), h.HostRead(a+r.off, got))
		for i := range got {
			if got[i] != lazyByte(r.off+uint64(i)) {
				f.add("HostRead of [+%d, +%d) of a lazy buffer: byte %d is %#x, want fill's %#x", r.off, r.n, i, got[i], lazyByte(r.off+uint64(i)))
				break
			}
		}
		var asked uint64
		for _, c := range l.calls {
			if c.off < r.off || c.off+uint64(c.n) > r.off+r.n {
				f.add("HostRead of [+%d, +%d) called fill for [+%d, +%d), outside the range read", r.off, r.n, c.off, c.off+uint64(c.n))
			}
			asked += uint64(c.n)
		}
		if asked < r.n {
			f.add("HostRead of [+%d, +%d) asked fill for %d bytes, fewer than it read", r.off, r.n, asked)
		}
	}
	one := make([]byte, 1)
	f.want("HostRead of a lazy buffer past its end", h.HostRead(a+size-50, make([]byte, 100)), want.HostAccessErr)
	f.want("HostWrite into a lazy buffer", h.HostWrite(a+64, one), want.HostLazyErr)
	l.err = errLazyGone
	f.want("HostRead of a lazy buffer whose fill fails", h.HostRead(a, one), errLazyGone)
	l.err, l.calls = nil, nil
	f.ok("HostFree of a lazy buffer", h.HostFree(a))
	f.want("HostRead of a freed lazy buffer", h.HostRead(a, one), want.HostAccessErr)
	f.want("HostFree of a freed lazy buffer", h.HostFree(a), want.HostFreeErr)
	if len(l.calls) != 0 {
		f.add("fill called %d times after its buffer was freed", len(l.calls))
	}
	// A plain buffer in the freed one's place is zeroed, as every new one.
	b, err := h.HostAlloc(size, align)
	if err != nil {
		return errors.Join(append(f, fmt.Errorf("HostAlloc(%d, %d) after freeing a lazy buffer: %w", size, align, err))...)
	}
	got := make([]byte, size)
	f.ok("HostRead of a buffer allocated after a lazy one was freed", h.HostRead(b, got))
	if i := slices.IndexFunc(got, func(c byte) bool { return c != 0 }); i >= 0 {
		f.add("a buffer allocated after a lazy one was freed: byte %d is %#x, want 0", i, got[i])
	}
	if len(l.calls) != 0 {
		f.add("fill called for a plain buffer allocated after its own was freed")
	}
	f.ok("HostFree", h.HostFree(b))
	return f.err()
}

// bytesOf returns n bytes of a pattern seeded by seed.
func bytesOf(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) ^ seed<<4 ^ byte(i>>8)
	}
	return p
}
