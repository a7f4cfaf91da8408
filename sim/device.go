package sim

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/bar"
	"github.com/neuronsim/neuronsim/sim/dma"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// FirmwareTiming is how long the device's firmware takes for the steps of its
// life cycle (docs/timing-model.md §Firmware). None is published; the
// defaults are chosen to fit inside the driver's polling budgets.
type FirmwareTiming struct {
	Boot        time.Duration // power-on until registers answer
	ResetAck    time.Duration // reset trigger until +0x1EC reads 0
	DeviceReset time.Duration // acknowledge until a device reset is done
	TPBReset    time.Duration // acknowledge until a TPB reset is done
	QEMUReset   time.Duration // QEMU reset register write until it reads 0
}

// DefaultFirmwareTiming returns the firmware times the model uses unless a
// caller overrides them.
func DefaultFirmwareTiming() FirmwareTiming {
	return FirmwareTiming{
		Boot:        500 * time.Millisecond,
		ResetAck:    10 * time.Millisecond,
		DeviceReset: 250 * time.Millisecond,
		TPBReset:    50 * time.Millisecond,
		QEMUReset:   1 * time.Second,
	}
}

// DefaultFWAPIVersion is what MISC RAM +0x00 reports: 7, the first version
// with the new mailbox protocol.
const DefaultFWAPIVersion = 7

// DeviceConfig chooses what kind of device NewDevice builds: what the device
// is, and nothing of what it is attached to (that is its [Wiring]), so a
// configuration is a plain comparable value that a snapshot can carry. Zero
// fields take their defaults.
type DeviceConfig struct {
	Name       string            // for errors and listings; default "nd<RoutingID>"
	Generation hwarch.Generation // required unless DeviceID is set
	DeviceID   uint16            // PCI device id; default the generation's first id
	Revision   uint8             // PCI revision: silicon, hwarch.RevisionEMU or hwarch.RevisionQEMU
	RoutingID  uint32            // MISC RAM +0x24
	Serial     uint64            // MISC RAM +0x38/+0x3c; default derived from the routing id
	BARs       bar.Sizes         // default bar.DefaultSizes
	MMIO       hwarch.MMIOLatency
	Firmware   FirmwareTiming
	FWAPI      uint32 // MISC RAM +0x00; default DefaultFWAPIVersion
	// DMA is the DMA timing model; zero takes dma.DefaultTiming.
	DMA dma.Timing
	// TimingOnly runs DMA without payloads: only control writes (at most
	// dma.ControlBytes) and transfers from host memory (staging) move their
	// bytes (see dma.Options).
	TimingOnly bool
	// Ready starts the device with its firmware already booted, as if Boot
	// had passed before time 0.
	Ready bool
}

// Wiring is what a device is attached to: live objects it shares with what
// is around it, not part of what the device is. It is given to
// [NewWiredDevice] (and [NewWiredDeviceFromSnapshot]) apart from the
// [DeviceConfig], and no snapshot carries it. The zero Wiring is a device
// alone: its own engine, lock and private host-memory model.
type Wiring struct {
	// Host is the host memory the device's DMA reaches through its host
	// window (a HostPort: the host-memory model, or a guest's memory when
	// the device is served over vfio-user); nil gives the device a private
	// host-memory model. Devices of one system share one, unless each is
	// served to a guest with its own (fabric.Config.HostPorts).
	Host HostPort
	// Engine and Lock, when set, are the event engine and the mutex the
	// device shares with the other devices of a system (sim/fabric): one
	// clock for all, and one lock, since an event of one device may touch
	// another. Handler names are then prefixed with the device's Name.
	// Both or neither must be set.
	Engine *Engine
	Lock   *sync.Mutex
}

// Phase is where the device is in its life cycle.
type Phase uint8

// The phases.
const (
	PhaseBooting     Phase = iota // firmware not up: every read returns 0xDEADBEEF
	PhaseReady                    // registers answer
	PhaseDeviceReset              // a device reset runs: reads outside MISC RAM return 0xDEADBEEF
)

var phaseNames = [...]string{"booting", "ready", "device-reset"}

// String returns the phase's name.
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// DeviceStats counts what the device saw. Unmapped accesses, reads answered
// with 0xDEADBEEF and dropped writes are counted, never fatal.
type DeviceStats struct {
	Reads, Writes                 uint64 // 32-bit words
	UnmappedReads, UnmappedWrites uint64
	LastUnmapped                  uint64 // BAR offset of the last unmapped access
	LastUnmappedBAR               int
	NotReadyReads, DroppedWrites  uint64 // 0xDEADBEEF answers; writes while not ready
	ReadOnlyWrites                uint64 // stores to a semaphore READ bank
	DeviceResets, TPBResets       uint64 // completed
	ResetRequests                 uint64 // reset requests started or coalesced
	UnservedTriggers              uint64 // mailbox triggers for a request the model does not serve
	LostEvents                    uint64 // events that could not be scheduled (the clock saturated)
	FunctionResets                uint64 // function-level resets (FunctionReset: vfio-user DEVICE_RESET)
}

// ResetState is the reset in progress, if any. Requests that arrive while one
// runs are coalesced into it (their maps OR-ed), as the driver's reset worker
// does with its queue.
type ResetState struct {
	Active bool
	Device bool            // a whole-device reset (else a TPB reset)
	Map    hwarch.ResetMap // the units a TPB reset covers
	Acked  bool            // the firmware has acknowledged (+0x1EC = 0)
	Until  Time            // when the work finishes, once acknowledged
	Seq    uint64          // identifies the reset's events
	QEMU   bool            // started through the QEMU reset register
}

// DeviceState is the whole mutable state of a Device besides its engine and
// memories.
type DeviceState struct {
	Phase     Phase
	Misc      [bar.MiscRAMSize / 4]uint32
	QEMUReg   uint32
	Reset     ResetState
	NCSync    []tpb.SyncState
	TopSPSync []tpb.SyncState
	Closed    bool
	Stats     DeviceStats
	Boot      uint64 // firmware boots started since power-on (FunctionReset starts one): names the current boot event
}

// Device is one simulated Neuron PCI function. It answers BAR reads and
// writes as the hardware does — the CSR atlas of its generation, semaphores
// and events, the MISC RAM mailbox, the reset handshake, BAR4 onto HBM — and
// every access costs its modelled MMIO latency on the device's clock, running
// the events that fall due.
//
// Device implements the runtime's ndl.Device and its optional ndl.Sleeper,
// ndl.Clock, ndl.HostMemory and ndl.LazyHostMemory without importing it
// (internal/ndlcontract asserts all five and runs the ndl contract against
// it). It is safe for
// concurrent use: accesses are serialised.
type Device struct {
	mu      *sync.Mutex // its own, or the system's (Wiring.Lock)
	cfg     DeviceConfig
	system  bool // the engine and lock are a system's (Wiring.Engine)
	geo     *hwarch.Geometry
	id      hwarch.PCIIdentity
	regBAR  int
	atlas   *bar.Atlas
	bar4    *bar.BAR4
	read    Time   // MMIO read latency
	write   Time   // MMIO write latency
	bar4Buf []byte // scratch of the BAR4 bulk path
	pci     *pciConfig

	engine    *Engine
	regs      *Memory // backing of plain register and SRAM windows, by BAR0 offset
	hbm       *Memory // device memory, by device address
	hbmSize   []uint64
	hbmApart  bool        // no HBM address is in another window decode knows (hbmApart)
	fastCheck []hbmRange  // with hbmApart and fabricApart, the HBM channels (bases and sizes) for deviceBus.Check's fast path; nil: none
	host      HostPort    // where host-window DMA goes
	hostMem   *HostMemory // host as the host-memory model; nil when it is another port
	dma       *dma.Controller
	cores     []*tpb.Core
	hCore     []HandlerID
	bounce    []byte     // DMA bounce buffer, reused
	fabric    dma.Fabric // the system's port for this device; nil: a device alone
	st        DeviceState

	hBoot, hAck, hDone, hDMA HandlerID
}

// NewDevice builds a device alone (the zero [Wiring]) and powers it on: its
// firmware boots for cfg.Firmware.Boot of device time (0xDEADBEEF until
// then) unless cfg.Ready.
func NewDevice(cfg DeviceConfig) (*Device, error) {
	return NewWiredDevice(cfg, Wiring{})
}

// NewWiredDevice is [NewDevice] for a device attached as w says: to a host
// port, and to the engine and lock of a system.
func NewWiredDevice(cfg DeviceConfig, w Wiring) (*Device, error) {
	if err := fillDefaults(&cfg); err != nil {
		return nil, err
	}
	if (w.Engine == nil) != (w.Lock == nil) {
		return nil, fmt.Errorf("sim device %s: a shared Engine and Lock go together (one is nil)", cfg.Name)
	}
	geo := hwarch.MustGeometry(cfg.Generation)
	atlas, err := bar.NewAtlas(geo)
	if err != nil {
		return nil, err
	}
	mode := hwarch.ModeOf(cfg.Revision)
	regBAR := geo.BAR0.RegisterBAR(mode)
	if cfg.BARs[regBAR] < atlas.End() {
		return nil, fmt.Errorf("sim device %s: register BAR%d of %#x bytes cannot hold the atlas (needs %#x)", cfg.Name, regBAR, cfg.BARs[regBAR], atlas.End())
	}
	bar4, err := bar.NewBAR4(geo, mode, cfg.BARs[hwarch.BAR4])
	if err != nil {
		return nil, fmt.Errorf("sim device %s: %w", cfg.Name, err)
	}
	if err := checkBARSizes(cfg.Name, cfg.BARs); err != nil {
		return nil, err
	}
	d := &Device{
		cfg: cfg, geo: geo, regBAR: regBAR, atlas: atlas, bar4: bar4,
		id:     hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: cfg.DeviceID, Revision: cfg.Revision},
		read:   FromDuration(cfg.MMIO.Read),
		write:  FromDuration(cfg.MMIO.Write),
		engine: w.Engine, mu: w.Lock, system: w.Engine != nil, regs: NewMemory(), hbm: NewMemory(),
	}
	d.pci = newPCIConfig(d.id, cfg.Generation, cfg.BARs)
	if d.engine == nil {
		d.engine, d.mu = NewEngine(), new(sync.Mutex)
	}
	d.st.NCSync = make([]tpb.SyncState, geo.NeuronCores)
	d.st.TopSPSync = make([]tpb.SyncState, geo.TopSPs)
	if d.host, d.hostMem, err = hostPort(cfg.Name, w.Host); err != nil {
		return nil, err
	}
	d.hbmSize = make([]uint64, len(geo.HBM))
	for ch, c := range geo.HBM {
		d.hbmSize[ch] = c.ActiveSize
		if mode == hwarch.ModeQEMU && geo.Generation != hwarch.Sunda {
			d.hbmSize[ch] = bar4.ChannelSize(ch)
		}
	}
	d.hbmApart = hbmApart(geo, d.hbmSize)
	if d.hbmApart && fabricApart(geo) {
		d.fastCheck = make([]hbmRange, 0, len(geo.HBM)+1) // never nil, even with no channel
		for ch, c := range geo.HBM {
			d.fastCheck = append(d.fastCheck, hbmRange{c.Base, d.hbmSize[ch]})
		}
	}
	d.dma = dma.New(geo, (*deviceBus)(d), (*deviceClock)(d), dma.Options{Timing: cfg.DMA, TimingOnly: cfg.TimingOnly})
	if err := d.registerHandlers(); err != nil {
		return nil, err
	}
	if err := d.newCores(); err != nil {
		return nil, err
	}
	d.powerOn()
	return d, nil
}

func fillDefaults(cfg *DeviceConfig) error {
	if cfg.DeviceID != 0 {
		g, err := hwarch.GenerationOfDevice(hwarch.VendorAmazon, cfg.DeviceID)
		if err != nil {
			return fmt.Errorf("sim device: %w", err)
		}
		if cfg.Generation != hwarch.Invalid && cfg.Generation != g {
			return fmt.Errorf("sim device: device id %#04x is a %s device, not %s", cfg.DeviceID, g, cfg.Generation)
		}
		cfg.Generation = g
	}
	if !cfg.Generation.Valid() {
		return fmt.Errorf("sim device: %w %d (want 2, 3 or 4)", hwarch.ErrUnknownGeneration, uint8(cfg.Generation))
	}
	if cfg.DeviceID == 0 {
		cfg.DeviceID, _ = hwarch.DefaultDeviceID(cfg.Generation)
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("nd%d", cfg.RoutingID)
	}
	if cfg.Serial == 0 {
		cfg.Serial = 0x4E53_0000_0000_0000 | uint64(cfg.Generation)<<32 | uint64(cfg.RoutingID)
	}
	geo := hwarch.MustGeometry(cfg.Generation)
	if cfg.BARs == (bar.Sizes{}) {
		cfg.BARs = bar.DefaultSizes(geo, hwarch.ModeOf(cfg.Revision))
	}
	if cfg.MMIO == (hwarch.MMIOLatency{}) {
		cfg.MMIO = bar.DefaultMMIOLatency(cfg.Generation)
	}
	if cfg.Firmware == (FirmwareTiming{}) {
		cfg.Firmware = DefaultFirmwareTiming()
	}
	if cfg.FWAPI == 0 {
		cfg.FWAPI = DefaultFWAPIVersion
	}
	if cfg.DMA == (dma.Timing{}) {
		cfg.DMA = dma.DefaultTiming(cfg.Generation)
	}
	if err := cfg.DMA.Validate(); err != nil {
		return fmt.Errorf("sim device %s: DMA timing: %w", cfg.Name, err)
	}
	return nil
}

// register adds an event handler to the device's engine, under the device's
// name when the engine is a system's.
func (d *Device) register(name string, h Handler) (HandlerID, error) {
	if d.system {
		name = d.cfg.Name + "/" + name
	}
	return d.engine.Register(name, h)
}

// Identity returns the PCI vendor, device id and revision.
func (d *Device) Identity() hwarch.PCIIdentity { return d.id }

// BARSize returns the size of PCI BAR bar, 0 when the device has none.
func (d *Device) BARSize(b int) uint64 {
	if b < 0 || b >= len(d.cfg.BARs) {
		return 0
	}
	return d.cfg.BARs[b]
}

// Config returns the configuration the device was built with, defaults filled in.
func (d *Device) Config() DeviceConfig { return d.cfg }

// InSystem reports whether the device is wired to a system's engine and lock
// ([Wiring].Engine): its clock is then the system's.
func (d *Device) InSystem() bool { return d.system }

// Geometry returns the device's generation geometry (shared; do not modify).
func (d *Device) Geometry() *hwarch.Geometry { return d.geo }

// Atlas returns the BAR0 decode of the device.
func (d *Device) Atlas() *bar.Atlas { return d.atlas }

// BAR4 returns the BAR4 decode of the device.
func (d *Device) BAR4() *bar.BAR4 { return d.bar4 }

// RegisterBAR returns the PCI BAR that carries the registers.
func (d *Device) RegisterBAR() int { return d.regBAR }

// Now returns the device's clock.
func (d *Device) Now() Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.engine.Now()
}

// ClockPS returns the device's clock in picoseconds (the runtime's
// ndl.Clock); it never fails.
func (d *Device) ClockPS() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return uint64(d.engine.Now()), nil
}

// Phase returns where the device is in its life cycle.
func (d *Device) Phase() Phase {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Phase
}

// Stats returns a copy of the device's counters.
func (d *Device) Stats() DeviceStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.Stats
}

// Sleep lets dur pass on the device's clock, running the events that fall
// due (the driver's msleep between polls). A negative dur, and one that
// would take the clock past [MaxTime], is refused (the latter with an error
// wrapping [ErrTimeOverflow]) and the clock does not move.
func (d *Device) Sleep(dur time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Closed {
		return fmt.Errorf("sim device %s: sleep: %w", d.cfg.Name, hwarch.ErrDeviceClosed)
	}
	ps, err := units.DurationToPS("sleep", dur)
	if err != nil {
		return fmt.Errorf("sim device %s: %w", d.cfg.Name, err)
	}
	if err := d.advance(Time(ps)); err != nil {
		return fmt.Errorf("sim device %s: sleep %v: %w", d.cfg.Name, dur, err)
	}
	return nil
}

// SleepUntil runs the device's clock — the system's, for a device of a
// system — towards t picoseconds, running in order the events due at or
// before t, but at most maxEvents of them (at least one), with the device's
// lock held; it reports done once none is left due by t, the clock then at
// t (or past it, if a nested run or another caller took it there). It is
// the runtime's ndl.SliceSleeper: the remote server calls it until done,
// releasing its own lock and so the device's between calls, so that a long
// sleep of a busy device does not hold off its other clients for the host
// time the events take. Calls repeated until done run the same events at
// the same times as one Sleep from the clock of the first call to t, and
// leave the device in the same state, when nothing else calls the device
// between them. A t past [MaxTime] is refused with an error wrapping
// [ErrTimeOverflow], and nothing runs; a closed device refuses it as Sleep
// does.
func (d *Device) SleepUntil(t uint64, maxEvents int) (done bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Closed {
		return false, fmt.Errorf("sim device %s: sleep until %dps: %w", d.cfg.Name, t, hwarch.ErrDeviceClosed)
	}
	if t > uint64(MaxTime) {
		return false, fmt.Errorf("sim device %s: sleep until %dps: past the latest time %dps (%v): %w",
			d.cfg.Name, t, uint64(MaxTime), MaxTime, ErrTimeOverflow)
	}
	to := Time(t)
	for ran := 0; ran < max(maxEvents, 1); ran++ {
		at, ok := d.engine.NextAt()
		if !ok || at > to {
			break
		}
		d.engine.Step() // what RunUntil(to) runs next, at the same time
	}
	if at, ok := d.engine.NextAt(); ok && at <= to {
		return false, nil // the event bound: the rest in the next slice
	}
	d.engine.RunUntil(to) // nothing left due: the clock to t, unless already past it
	return true, nil
}

// Close marks the device closed; later BAR accesses fail with an error
// wrapping hwarch.ErrDeviceClosed. The device's state is kept.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.Closed {
		return fmt.Errorf("sim device %s: close: %w", d.cfg.Name, hwarch.ErrDeviceClosed)
	}
	d.st.Closed = true
	return nil
}

// advance moves the clock forward by dt, running every event due; a dt that
// would take the clock past [MaxTime] is refused with an error wrapping
// [ErrTimeOverflow], and the clock does not move.
func (d *Device) advance(dt Time) error {
	_, err := d.engine.RunFor(dt)
	return err
}

// roomFor checks that n accesses of per each fit before [MaxTime], so that
// an access is refused whole rather than stopped part way.
func (d *Device) roomFor(op string, b int, off uint64, n int, per Time) error {
	hi, lo := bits.Mul64(uint64(n), uint64(per))
	if hi != 0 || Time(lo) > d.engine.Room() {
		return fmt.Errorf("sim device %s: %s bar %d offset %#x: %d accesses of %v from %v: %w (the latest time is %v)",
			d.cfg.Name, op, b, off, n, per, d.engine.Now(), ErrTimeOverflow, MaxTime)
	}
	return nil
}

// check validates an access of n words at off of BAR b.
func (d *Device) check(op string, b int, off uint64, n int) error {
	switch {
	case d.st.Closed:
		return fmt.Errorf("sim device %s: %s bar %d offset %#x: %w", d.cfg.Name, op, b, off, hwarch.ErrDeviceClosed)
	case b < 0 || b >= len(d.cfg.BARs) || d.cfg.BARs[b] == 0:
		return fmt.Errorf("sim device %s: %s bar %d offset %#x: %w (BARs present: %s)", d.cfg.Name, op, b, off, hwarch.ErrBadBAR, d.presentBARs())
	case off%4 != 0:
		return fmt.Errorf("sim device %s: %s bar %d offset %#x: %w", d.cfg.Name, op, b, off, hwarch.ErrAlignment)
	}
	size := d.cfg.BARs[b]
	if uint64(n) > size/4 || off > size-4*uint64(n) {
		return fmt.Errorf("sim device %s: %s bar %d offset %#x count %d: %w (BAR size %#x)", d.cfg.Name, op, b, off, n, hwarch.ErrBAROffset, size)
	}
	return nil
}

func (d *Device) presentBARs() string {
	s := ""
	for b, size := range d.cfg.BARs {
		if size != 0 {
			s += fmt.Sprintf(" BAR%d", b)
		}
	}
	if s == "" {
		return "none"
	}
	return s[1:]
}

// ReadBAR reads len(dst) consecutive words from byte offset off of BAR b,
// each costing one MMIO read latency.
func (d *Device) ReadBAR(b int, off uint64, dst []uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("read", b, off, len(dst)); err != nil {
		return err
	}
	if err := d.roomFor("read", b, off, len(dst), d.read); err != nil {
		return err
	}
	for i := 0; i < len(dst); {
		o := off + 4*uint64(i)
		if addr, k := d.bar4Run(b, o, len(dst)-i, d.read, 1); k > 0 {
			buf := d.bar4Bytes(k)
			_ = d.hbm.Read(addr, buf) // in range: the BAR4 decode keeps channels inside the 48-bit space
			for j := range k {
				dst[i+j] = binary.LittleEndian.Uint32(buf[4*j:])
			}
			d.st.Stats.Reads += uint64(k)
			if err := d.advance(Time(k) * d.read); err != nil {
				return err // not reached: roomFor checked the whole access
			}
			i += k
			continue
		}
		v, err := d.readWord(b, o)
		if err != nil {
			return err
		}
		dst[i] = v
		i++
	}
	return nil
}

// WriteBAR writes src as consecutive words from byte offset off of BAR b,
// each costing one MMIO write latency.
func (d *Device) WriteBAR(b int, off uint64, src []uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("write", b, off, len(src)); err != nil {
		return err
	}
	if err := d.roomFor("write", b, off, len(src), d.write); err != nil {
		return err
	}
	if m, err := d.reserveWrite(b, off, src); err != nil {
		return err
	} else if m != nil {
		defer m.Release()
	}
	for i := 0; i < len(src); {
		o := off + 4*uint64(i)
		if addr, k := d.bar4Run(b, o, len(src)-i, d.write, 0); k > 0 {
			buf := d.bar4Bytes(k)
			for j, v := range src[i : i+k] {
				binary.LittleEndian.PutUint32(buf[4*j:], v)
			}
			_ = d.hbm.Write(addr, buf) // in range, as above
			d.st.Stats.Writes += uint64(k)
			if err := d.advance(Time(k) * d.write); err != nil {
				return err // not reached: roomFor checked the whole access
			}
			i += k
			continue
		}
		if err := d.writeWord(b, o, src[i]); err != nil {
			return err
		}
		i++
	}
	return nil
}

// bar4Bulk turns the BAR4 bulk path on; tests turn it off to check that it
// changes nothing.
var bar4Bulk = true

// bar4Run returns how many of the n words from BAR4 offset off can be
// accessed at once, with the device address of the first: words in one
// window of a device that is up, that no event can observe part way — the
// words one by one would each cost per (a read's latency passes before
// its word, lead 1; a write's after, lead 0), and no event falls due before
// the last of them. 0 means one word at a time.
func (d *Device) bar4Run(b int, off uint64, n int, per Time, lead int) (uint64, int) {
	if !bar4Bulk || b != hwarch.BAR4 || n < 2 || d.st.Phase == PhaseBooting || d.st.Phase == PhaseDeviceReset {
		return 0, 0
	}
	addr, span, ok := d.bar4.Span(off)
	if !ok {
		return 0, 0
	}
	k := min(n, int(span/4))
	if next, ok := d.engine.NextAt(); ok {
		// Word j is seen after the events due by now + (j+lead)·per.
		gap := next - d.engine.Now()
		switch {
		case next <= d.engine.Now():
			return 0, 0
		case per > 0:
			k = min(k, int(min((gap-1)/per+1-Time(lead), Time(n))))
		}
	}
	if k < 2 {
		return 0, 0
	}
	return addr, k
}

// bar4Bytes returns a scratch buffer for k words.
func (d *Device) bar4Bytes(k int) []byte {
	if cap(d.bar4Buf) < 4*k {
		d.bar4Buf = make([]byte, 4*k)
	}
	return d.bar4Buf[:4*k]
}

// Read32 reads one word (readl).
func (d *Device) Read32(b int, off uint64) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("read", b, off, 1); err != nil {
		return 0, err
	}
	if err := d.roomFor("read", b, off, 1, d.read); err != nil {
		return 0, err
	}
	return d.readWord(b, off)
}

// Write32 writes one word (writel).
func (d *Device) Write32(b int, off uint64, v uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("write", b, off, 1); err != nil {
		return err
	}
	if err := d.roomFor("write", b, off, 1, d.write); err != nil {
		return err
	}
	if m, err := d.reserveWrite(b, off, []uint32{v}); err != nil {
		return err
	} else if m != nil {
		defer m.Release()
	}
	return d.writeWord(b, off, v)
}

// readWord performs one checked read: the read's latency passes first (its
// completion carries the value as it is when it arrives), then the word is
// decoded.
func (d *Device) readWord(b int, off uint64) (uint32, error) {
	if err := d.advance(d.read); err != nil {
		return 0, fmt.Errorf("sim device %s: read bar %d offset %#x: %w", d.cfg.Name, b, off, err)
	}
	d.st.Stats.Reads++
	if d.st.Phase == PhaseBooting {
		d.st.Stats.NotReadyReads++
		return hwarch.NotReady, nil
	}
	if b == hwarch.BAR4 {
		if d.st.Phase == PhaseDeviceReset {
			d.st.Stats.NotReadyReads++
			return hwarch.NotReady, nil
		}
		addr, ok := d.bar4.Translate(off)
		if !ok {
			return d.unmappedRead(b, off), nil
		}
		v, _ := d.hbm.ReadU32(addr) // addresses come from the BAR4 decode and are in range
		return v, nil
	}
	if b != d.regBAR {
		return d.unmappedRead(b, off), nil
	}
	return d.regRead(off), nil
}

// regRead decodes a read of register-BAR offset off (an MMIO read after
// its latency, or a DMA read of an on-chip address).
func (d *Device) regRead(off uint64) uint32 {
	w, rel, ok := d.atlas.Lookup(off)
	if d.blockedByReset(w) {
		d.st.Stats.NotReadyReads++
		return hwarch.NotReady
	}
	if !ok {
		return d.unmappedRead(d.regBAR, off)
	}
	switch w.Kind {
	case bar.DMAEngine:
		return d.dma.ReadReg(w.Index, rel)
	case bar.EngineCtrl:
		nc, eng := engineCtrl(w.Index)
		return d.cores[nc].ReadReg(eng, rel)
	case bar.NCSync, bar.TopSPSync:
		if v, ok := d.syncBlock(w).Read(rel); ok {
			return v
		}
	case bar.Misc:
		return d.st.Misc[rel/4]
	case bar.QEMUReset:
		if hwarch.ModeOf(d.cfg.Revision) == hwarch.ModeQEMU {
			return d.st.QEMUReg
		}
	}
	v, _ := d.regs.ReadU32(off)
	return v
}

// writeWord performs one checked write: the store takes effect, then the
// write's (posted) latency passes.
func (d *Device) writeWord(b int, off uint64, v uint32) error {
	d.st.Stats.Writes++
	d.store(b, off, v)
	if err := d.advance(d.write); err != nil {
		return fmt.Errorf("sim device %s: write bar %d offset %#x: %w", d.cfg.Name, b, off, err)
	}
	return nil
}

func (d *Device) store(b int, off uint64, v uint32) {
	if d.st.Phase == PhaseBooting {
		d.st.Stats.DroppedWrites++
		return
	}
	if b == hwarch.BAR4 {
		if d.st.Phase == PhaseDeviceReset {
			d.st.Stats.DroppedWrites++
			return
		}
		addr, ok := d.bar4.Translate(off)
		if !ok {
			d.unmappedWrite(b, off)
			return
		}
		_ = d.hbm.WriteU32(addr, v) // the BAR4 decode keeps channels inside the 48-bit space
		return
	}
	if b != d.regBAR {
		d.unmappedWrite(b, off)
		return
	}
	d.regWrite(off, v)
}

// regWrite decodes a write of register-BAR offset off (an MMIO write, or a
// DMA write of an on-chip address).
func (d *Device) regWrite(off uint64, v uint32) {
	w, rel, ok := d.atlas.Lookup(off)
	if d.blockedByReset(w) {
		d.st.Stats.DroppedWrites++
		return
	}
	if !ok {
		d.unmappedWrite(d.regBAR, off)
		return
	}
	switch w.Kind {
	case bar.DMAEngine:
		d.dma.WriteReg(w.Index, rel, v)
		return
	case bar.EngineCtrl:
		nc, eng := engineCtrl(w.Index)
		d.cores[nc].WriteReg(eng, rel, v)
		return
	case bar.NCSync, bar.TopSPSync:
		blk := d.syncBlock(w)
		if blk.Write(rel, v) {
			if w.Kind == bar.NCSync {
				d.cores[w.Index].SyncChanged() // a waiting engine may now run
			}
			return
		}
		if bk, _, ok := tpb.Decode(rel); ok && bk == tpb.BankSemRead {
			d.st.Stats.ReadOnlyWrites++
			return
		}
	case bar.Misc:
		d.miscWrite(rel, v)
		return
	case bar.QEMUReset:
		if hwarch.ModeOf(d.cfg.Revision) == hwarch.ModeQEMU {
			d.qemuResetWrite(v)
			return
		}
	}
	_ = d.regs.WriteU32(off, v) // BAR0 offsets are far below the 48-bit limit
}

func (d *Device) syncBlock(w *bar.Window) *tpb.SyncState {
	if w.Kind == bar.NCSync {
		return &d.st.NCSync[w.Index]
	}
	return &d.st.TopSPSync[w.Index]
}

func (d *Device) unmappedRead(b int, off uint64) uint32 {
	d.st.Stats.UnmappedReads++
	d.st.Stats.LastUnmapped, d.st.Stats.LastUnmappedBAR = off, b
	return bar.UnmappedRead
}

func (d *Device) unmappedWrite(b int, off uint64) {
	d.st.Stats.UnmappedWrites++
	d.st.Stats.LastUnmapped, d.st.Stats.LastUnmappedBAR = off, b
}
