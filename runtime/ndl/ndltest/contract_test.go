package ndltest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// ref is a reference backend written to the contract: every BAR word is
// storage, the clock is a counter, host memory a map of buffers. The
// contract's own tests break it one way at a time.
type ref struct {
	id     hwarch.PCIIdentity
	bars   [6]uint64
	words  map[[2]uint64]uint32
	closed bool
	ps     uint64
	host   map[uint64][]byte
	lazy   map[uint64]func(off uint64, p []byte) error // the lazy buffers' fill functions, by base
	next   uint64
}

func newRef() *ref {
	geo := hwarch.MustGeometry(hwarch.Cayman)
	r := &ref{id: hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: hwarch.DeviceTrn2, Revision: 1},
		words: map[[2]uint64]uint32{}, host: map[uint64][]byte{}, lazy: map[uint64]func(uint64, []byte) error{}, next: 1 << 20}
	r.bars[0], r.bars[4] = geo.BAR0.MinimumBAR0, 1<<20
	return r
}

var (
	errFree   = errors.New("ref: not a buffer")
	errAccess = errors.New("ref: not in a buffer")
	errLazy   = errors.New("ref: a lazy buffer")
)

func refWant() Capabilities {
	r := newRef()
	return Capabilities{Identity: r.id, BARs: r.bars, Sleeper: true, SliceSleeper: true, Clock: true, HostMemory: true, LazyHostMemory: true,
		HostFreeErr: errFree, HostAccessErr: errAccess, HostLazyErr: errLazy}
}

func (r *ref) Identity() hwarch.PCIIdentity { return r.id }

func (r *ref) BARSize(b int) uint64 {
	if b < 0 || b >= len(r.bars) {
		return 0
	}
	return r.bars[b]
}

func (r *ref) check(b int, off uint64, n int) error {
	switch {
	case r.closed:
		return ndl.ErrClosed
	case r.BARSize(b) == 0:
		return ndl.ErrBadBAR
	case off%4 != 0:
		return ndl.ErrAlignment
	case uint64(n) > r.bars[b]/4 || off > r.bars[b]-4*uint64(n):
		return ndl.ErrBAROffset
	}
	return nil
}

func (r *ref) ReadBAR(b int, off uint64, dst []uint32) error {
	if err := r.check(b, off, len(dst)); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = r.words[[2]uint64{uint64(b), off + 4*uint64(i)}]
	}
	return nil
}

func (r *ref) WriteBAR(b int, off uint64, src []uint32) error {
	if err := r.check(b, off, len(src)); err != nil {
		return err
	}
	for i, v := range src {
		r.words[[2]uint64{uint64(b), off + 4*uint64(i)}] = v
	}
	return nil
}

func (r *ref) Read32(b int, off uint64) (uint32, error) {
	var w [1]uint32
	err := r.ReadBAR(b, off, w[:])
	return w[0], err
}

func (r *ref) Write32(b int, off uint64, v uint32) error { return r.WriteBAR(b, off, []uint32{v}) }

func (r *ref) Close() error {
	if r.closed {
		return ndl.ErrClosed
	}
	r.closed = true
	return nil
}

func (r *ref) Sleep(d time.Duration) error {
	if r.closed {
		return ndl.ErrClosed
	}
	ps, err := units.DurationToPS("sleep", d)
	if err != nil || ps > units.MaxTimePS-r.ps {
		return errors.New("ref: sleep refused")
	}
	r.ps += ps
	return nil
}

func (r *ref) ClockPS() (uint64, error) { return r.ps, nil }

// refTick is the ref's event period: an event falls due every
// microsecond, and SleepUntil runs at most maxEvents of them a call.
const refTick = 1_000_000

// SleepUntil runs the clock towards ps an event at a time.
func (r *ref) SleepUntil(ps uint64, maxEvents int) (bool, error) {
	if r.closed {
		return false, ndl.ErrClosed
	}
	if ps > units.MaxTimePS {
		return false, errors.New("ref: past the latest time")
	}
	for range max(maxEvents, 1) {
		next := (r.ps/refTick + 1) * refTick
		if next > ps {
			break
		}
		r.ps = next
	}
	if next := (r.ps/refTick + 1) * refTick; next <= ps {
		return false, nil
	}
	r.ps = max(r.ps, ps)
	return true, nil
}

func (r *ref) HostAlloc(size, align uint64) (uint64, error) {
	if size == 0 || align == 0 || align&(align-1) != 0 {
		return 0, errors.New("ref: bad request")
	}
	pa := (r.next + align - 1) &^ (align - 1)
	r.host[pa] = make([]byte, size)
	r.next = pa + size
	return pa, nil
}

func (r *ref) HostFree(pa uint64) error {
	if r.host[pa] == nil {
		return errFree
	}
	delete(r.host, pa)
	delete(r.lazy, pa)
	return nil
}

func (r *ref) HostAllocLazy(size, align uint64, fill func(off uint64, p []byte) error) (uint64, error) {
	pa, err := r.HostAlloc(size, align)
	if err == nil {
		r.lazy[pa] = fill
	}
	return pa, err
}

// buf returns the bytes of [pa, pa+n) and the base of the buffer holding
// them.
func (r *ref) buf(pa uint64, n int) ([]byte, uint64, error) {
	for base, b := range r.host {
		if pa >= base && pa-base <= uint64(len(b)) && uint64(n) <= uint64(len(b))-(pa-base) {
			return b[pa-base:][:n], base, nil
		}
	}
	return nil, 0, errAccess
}

func (r *ref) HostRead(pa uint64, p []byte) error {
	b, base, err := r.buf(pa, len(p))
	if fill := r.lazy[base]; err == nil && fill != nil {
		return fill(pa-base, p)
	}
	copy(p, b)
	return err
}

func (r *ref) HostWrite(pa uint64, p []byte) error {
	b, base, err := r.buf(pa, len(p))
	if err == nil && r.lazy[base] != nil {
		return errLazy
	}
	copy(b, p)
	return err
}

// failing runs every applicable check on fresh devices from open and
// returns the names of those that fail.
func failing(open func() ndl.Device, want Capabilities) []string {
	var names []string
	for _, c := range checks {
		if c.applies != nil && !c.applies(want) {
			continue
		}
		if err := c.runOn(open, want); err != nil {
			names = append(names, c.name)
		}
	}
	return names
}

func TestReferenceKeepsTheContract(t *testing.T) {
	if got := failing(func() ndl.Device { return newRef() }, refWant()); len(got) != 0 {
		t.Fatalf("the reference backend fails %v", got)
	}
	RunContract(t, func(*testing.T) ndl.Device { return newRef() }, refWant())
}

// Broken backends, each broken one way, fail the check that covers it.
type (
	// plain hides every optional interface of the device it wraps.
	plain struct{ ndl.Device }
	// noHost has a clock and sleeps but hands out no host memory.
	noHost struct {
		ndl.Device
		ndl.Sleeper
		ndl.Clock
	}
	forgetful   struct{ *ref } // Read32 returns 0
	chunky      struct{ *ref } // ReadBAR reads only 1024 words
	misaligned  struct{ *ref } // writes at a misaligned offset first, then refuses
	lenient     struct{ *ref } // accepts an access that straddles a BAR's end
	wrongBadBAR struct{ *ref } // an absent BAR is ErrBAROffset
	leaky       struct{ *ref } // Close stops nothing
	wideBARs    struct{ *ref } // BARSize wraps the BAR number
	otherRev    struct{ *ref } // reports another revision
	slowClock   struct{ *ref } // Sleep moves the clock by half
	backwards   struct{ *ref } // the clock goes back on every read
	doubleFree  struct{ *ref } // HostFree of anything succeeds
	staleRead   struct{ *ref } // HostRead of a freed buffer succeeds
	zeroRefused struct{ *ref } // a zero-length WriteBAR fails
	// eager stores a lazy buffer's bytes as a plain buffer's: reads give
	// zeros and writes succeed.
	eager    struct{ *ref }
	lostFill struct{ *ref } // a lazy buffer's fill error is dropped (the read succeeds)
	// Slice sleepers broken one way each.
	neverDone    struct{ *ref } // SleepUntil never reports done
	rewinds      struct{ *ref } // SleepUntil to a time passed sets the clock back to it
	clampsPast   struct{ *ref } // SleepUntil past the latest time goes to it instead
	overshoots   struct{ *ref } // SleepUntil ends a nanosecond past the time asked
	slicesClosed struct{ *ref } // SleepUntil works after Close
	// noSlices sleeps and has a clock but does not sleep in slices.
	noSlices struct {
		ndl.Device
		ndl.Sleeper
		ndl.Clock
		ndl.HostMemory
		ndl.LazyHostMemory
	}
	staleFill struct{ *ref } // HostFree keeps the lazy buffer's fill, which a new buffer at its address reads through
)

func (d forgetful) Read32(int, uint64) (uint32, error) { return 0, nil }
func (d chunky) ReadBAR(b int, off uint64, dst []uint32) error {
	return d.ref.ReadBAR(b, off, dst[:min(len(dst), 1024)])
}
func (d misaligned) Write32(b int, off uint64, v uint32) error {
	d.words[[2]uint64{uint64(b), off &^ 3}] = v
	return d.ref.Write32(b, off, v)
}
func (d lenient) ReadBAR(b int, off uint64, dst []uint32) error {
	if d.BARSize(b) != 0 && off == d.BARSize(b)-4 {
		return nil
	}
	return d.ref.ReadBAR(b, off, dst)
}
func (d wrongBadBAR) Read32(b int, off uint64) (uint32, error) {
	if d.BARSize(b) == 0 {
		return 0, ndl.ErrBAROffset
	}
	return d.ref.Read32(b, off)
}
func (d leaky) Close() error { return nil }
func (d wideBARs) BARSize(b int) uint64 {
	return d.ref.BARSize(((b % 6) + 6) % 6)
}
func (d otherRev) Identity() hwarch.PCIIdentity { id := d.id; id.Revision++; return id }
func (d slowClock) Sleep(dur time.Duration) error {
	if dur > 0 {
		dur /= 2
	}
	return d.ref.Sleep(dur)
}
func (d backwards) ClockPS() (uint64, error)  { d.ps -= 1000; return d.ps, nil }
func (d doubleFree) HostFree(pa uint64) error { _ = d.ref.HostFree(pa); return nil }
func (d staleRead) HostRead(pa uint64, p []byte) error {
	if err := d.ref.HostRead(pa, p); err != nil && len(p) == 1 {
		return nil
	}
	return d.ref.HostRead(pa, p)
}
func (d eager) HostAllocLazy(size, align uint64, _ func(uint64, []byte) error) (uint64, error) {
	return d.ref.HostAlloc(size, align)
}
func (d lostFill) HostRead(pa uint64, p []byte) error {
	if err := d.ref.HostRead(pa, p); err != nil && !errors.Is(err, errAccess) {
		return nil
	}
	return d.ref.HostRead(pa, p)
}
func (d staleFill) HostFree(pa uint64) error {
	fill := d.lazy[pa]
	err := d.ref.HostFree(pa)
	if fill != nil {
		d.ref.next = pa // the next buffer takes the freed one's place
		d.lazy[pa] = fill
	}
	return err
}
func (d neverDone) SleepUntil(ps uint64, n int) (bool, error) {
	_, err := d.ref.SleepUntil(ps, n)
	return false, err
}
func (d rewinds) SleepUntil(ps uint64, n int) (bool, error) {
	if ps < d.ps {
		d.ps = ps
		return true, nil
	}
	return d.ref.SleepUntil(ps, n)
}
func (d clampsPast) SleepUntil(ps uint64, n int) (bool, error) {
	return d.ref.SleepUntil(min(ps, units.MaxTimePS), n)
}
func (d overshoots) SleepUntil(ps uint64, n int) (bool, error) {
	done, err := d.ref.SleepUntil(ps, n)
	if done && d.ps == ps && ps > 0 {
		d.ps++
	}
	return done, err
}
func (d slicesClosed) SleepUntil(ps uint64, n int) (bool, error) {
	closed := d.closed
	d.closed = false
	defer func() { d.closed = closed }()
	return d.ref.SleepUntil(ps, n)
}
func (d zeroRefused) WriteBAR(b int, off uint64, src []uint32) error {
	if len(src) == 0 {
		return errors.New("zero-length write")
	}
	return d.ref.WriteBAR(b, off, src)
}

func TestContractCatchesBrokenBackends(t *testing.T) {
	tests := []struct {
		name string
		open func() ndl.Device
		edit func(*Capabilities)
		fail string // the check that must fail
	}{
		{"undeclared clock", func() ndl.Device { return newRef() }, func(c *Capabilities) { c.Clock = false }, "interfaces"},
		{"optional interfaces hidden", func() ndl.Device { return plain{newRef()} }, nil, "interfaces"},
		{"host memory lost", func() ndl.Device { r := newRef(); return noHost{r, r, r} }, nil, "interfaces"},
		{"host memory without sentinels", func() ndl.Device { return newRef() }, func(c *Capabilities) { c.HostFreeErr = nil }, "interfaces"},
		{"identity", func() ndl.Device { return otherRev{newRef()} }, nil, "identity"},
		{"BAR sizes beyond BAR5", func() ndl.Device { return wideBARs{newRef()} }, nil, "bar-sizes"},
		{"BAR size expected", func() ndl.Device { return newRef() }, func(c *Capabilities) { c.BARs[2] = 4096 }, "bar-sizes"},
		{"reads forget writes", func() ndl.Device { return forgetful{newRef()} }, nil, "round-trip"},
		{"long reads cut short", func() ndl.Device { return chunky{newRef()} }, nil, "round-trip"},
		{"zero-length write refused", func() ndl.Device { return zeroRefused{newRef()} }, nil, "zero-length"},
		{"absent BAR sentinel", func() ndl.Device { return wrongBadBAR{newRef()} }, nil, "absent-bars"},
		{"refused misaligned write applied", func() ndl.Device { return misaligned{newRef()} }, nil, "alignment"},
		{"straddling read accepted", func() ndl.Device { return lenient{newRef()} }, nil, "bounds"},
		{"close stops nothing", func() ndl.Device { return leaky{newRef()} }, nil, "close"},
		{"sleep too short", func() ndl.Device { return slowClock{newRef()} }, nil, "sleeper"},
		{"clock goes back", func() ndl.Device { return backwards{newRef()} }, nil, "clock"},
		{"double free accepted", func() ndl.Device { return doubleFree{newRef()} }, nil, "host-memory"},
		{"freed buffer readable", func() ndl.Device { return staleRead{newRef()} }, nil, "host-memory"},
		{"undeclared lazy host memory", func() ndl.Device { return newRef() }, func(c *Capabilities) { c.LazyHostMemory = false }, "interfaces"},
		{"lazy host memory without its sentinel", func() ndl.Device { return newRef() }, func(c *Capabilities) { c.HostLazyErr = nil }, "interfaces"},
		{"lazy buffer stored", func() ndl.Device { return eager{newRef()} }, nil, "lazy-host-memory"},
		{"fill error lost", func() ndl.Device { return lostFill{newRef()} }, nil, "lazy-host-memory"},
		{"fill kept past free", func() ndl.Device { return staleFill{newRef()} }, nil, "lazy-host-memory"},
		{"undeclared slice sleeper", func() ndl.Device { return newRef() }, func(c *Capabilities) { c.SliceSleeper = false }, "interfaces"},
		{"slice sleeper lost", func() ndl.Device { r := newRef(); return noSlices{r, r, r, r, r} }, nil, "interfaces"},
		{"slices never done", func() ndl.Device { return neverDone{newRef()} }, nil, "slice-sleeper"},
		{"slices rewind the clock", func() ndl.Device { return rewinds{newRef()} }, nil, "slice-sleeper"},
		{"slices past the latest time clamped", func() ndl.Device { return clampsPast{newRef()} }, nil, "slice-sleeper"},
		{"slices overshoot", func() ndl.Device { return overshoots{newRef()} }, nil, "slice-sleeper"},
		{"slices after close", func() ndl.Device { return slicesClosed{newRef()} }, nil, "close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := refWant()
			if tt.edit != nil {
				tt.edit(&want)
			}
			if got := failing(tt.open, want); !slices.Contains(got, tt.fail) {
				t.Fatalf("failing checks %v, want %q among them", got, tt.fail)
			}
		})
	}
}

// A check's error names what failed.
func TestContractErrorsSayWhat(t *testing.T) {
	err := checkRoundTrip(forgetful{newRef()}, refWant())
	if err == nil || !strings.Contains(err.Error(), "Read32") {
		t.Fatalf("got %v, want an error naming Read32", err)
	}
}
