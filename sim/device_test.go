package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim/bar"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

// testRevisions are the PCI revisions every device test runs under.
var testRevisions = []struct {
	name string
	rev  uint8
}{
	{"silicon", 0x00},
	{"emu", hwarch.RevisionEMU},
	{"qemu", hwarch.RevisionQEMU},
}

// forEachDevice runs f for every generation × revision.
func forEachDevice(t *testing.T, f func(t *testing.T, g hwarch.Generation, rev uint8)) {
	t.Helper()
	for _, g := range hwarch.Generations() {
		for _, r := range testRevisions {
			t.Run(g.String()+"/"+r.name, func(t *testing.T) { f(t, g, r.rev) })
		}
	}
}

// dev wraps a Device for tests: register accesses go to the register BAR and
// fail the test on an error.
type dev struct {
	t   testing.TB
	d   *Device
	geo *hwarch.Geometry
	reg int
}

func newDev(t testing.TB, cfg DeviceConfig) dev {
	t.Helper()
	return newWiredDev(t, cfg, Wiring{})
}

// newWiredDev is newDev for a device attached as w says.
func newWiredDev(t testing.TB, cfg DeviceConfig, w Wiring) dev {
	t.Helper()
	d, err := NewWiredDevice(cfg, w)
	require.NoError(t, err)
	return dev{t: t, d: d, geo: d.Geometry(), reg: d.RegisterBAR()}
}

// readyDev returns a device whose firmware has already booted.
func readyDev(t testing.TB, g hwarch.Generation, rev uint8) dev {
	t.Helper()
	return newDev(t, DeviceConfig{Generation: g, Revision: rev, RoutingID: 3, Ready: true})
}

func (h dev) read(off uint64) uint32 {
	h.t.Helper()
	v, err := h.d.Read32(h.reg, off)
	require.NoError(h.t, err, "read %#x", off)
	return v
}

func (h dev) write(off uint64, v uint32) {
	h.t.Helper()
	require.NoError(h.t, h.d.Write32(h.reg, off, v), "write %#x", off)
}

func (h dev) read4(off uint64) uint32 {
	h.t.Helper()
	v, err := h.d.Read32(hwarch.BAR4, off)
	require.NoError(h.t, err, "read BAR4 %#x", off)
	return v
}

func (h dev) write4(off uint64, v uint32) {
	h.t.Helper()
	require.NoError(h.t, h.d.Write32(hwarch.BAR4, off, v), "write BAR4 %#x", off)
}

func (h dev) sleep(d time.Duration) {
	h.t.Helper()
	require.NoError(h.t, h.d.Sleep(d))
}

// sleepUntil lets the device's clock reach at.
func (h dev) sleepUntil(at Time) {
	h.t.Helper()
	now := h.d.Now()
	require.LessOrEqual(h.t, now, at, "the clock is already past %v", at)
	h.sleep((at - now).Duration())
	require.Equal(h.t, at, h.d.Now())
}

func (h dev) readLatency() Time  { return FromDuration(h.d.Config().MMIO.Read) }
func (h dev) writeLatency() Time { return FromDuration(h.d.Config().MMIO.Write) }
func (h dev) fw() FirmwareTiming { return h.d.Config().Firmware }

// Register offsets.
func (h dev) misc(off uint64) uint64 { return h.geo.BAR0.MiscRAM + off }
func (h dev) ncSync(nc int) uint64   { return h.geo.BAR0.TPBWindow(nc) + h.geo.BAR0.EventsOffset }
func (h dev) topSync(t int) uint64   { return h.geo.BAR0.TopSPWindow(t) }

// ncSem returns the BAR offset of semaphore i of NC nc in a bank (one of the
// geometry's Sem*Offset values).
func (h dev) ncSem(nc int, bankOff uint64, i int) uint64 {
	return h.geo.BAR0.TPBWindow(nc) + bankOff + 4*uint64(i)
}

func (h dev) ncEvent(nc, i int) uint64 {
	return h.geo.BAR0.TPBWindow(nc) + h.geo.BAR0.EventsOffset + 4*uint64(i)
}

// topSem returns semaphore i of TOP_SP ts in a bank (a tpb.Sem*Offset).
func (h dev) topSem(ts int, bankOff uint64, i int) uint64 {
	return h.geo.BAR0.TopSPWindow(ts) + bankOff + 4*uint64(i)
}

// plainAPB returns a few plain APB register offsets of a generation: words
// in APB IO, APB SE and PREPROC blocks that no special block (DMA engines
// included) covers.
func plainAPB(geo *hwarch.Geometry) []uint64 {
	if geo.Generation == hwarch.Sunda {
		return []uint64{0x3040_0000, 0x3040_0100, 0x30B0_0020, 0x30E0_4000, 0x30FF_FFFC}
	}
	return []uint64{0x0, 0x6A0_0000, 0x4000_0100, 0x8204_0000, 0xB404_0040, 0xC000_0000, 0xCF4B_FFFC}
}

// unmappedReg returns register BAR offsets inside the BAR that no window decodes.
func unmappedReg(geo *hwarch.Geometry) []uint64 {
	if geo.Generation == hwarch.Sunda {
		return []uint64{0x800_0000, 0xFFF_FFFC, 0x1180_0000, 0x2000_0000, 0x3100_0000, 0x3FFF_FFFC}
	}
	return []uint64{0x2000_0000, 0x3FFF_FFFC, 0x6000_0000, 0x8C80_0000, 0xCF4C_0000, 0xF200_0000, 0xF480_0000, 0xFFFF_FFFC}
}

func TestNewDeviceDefaults(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		d, err := NewDevice(DeviceConfig{Generation: g, Revision: rev, RoutingID: 12})
		require.NoError(t, err)
		geo := hwarch.MustGeometry(g)
		mode := hwarch.ModeOf(rev)
		wantID, _ := hwarch.DefaultDeviceID(g)

		id := d.Identity()
		assert.Equal(t, hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: wantID, Revision: rev}, id)
		gotGen, err := id.Generation()
		require.NoError(t, err)
		assert.Equal(t, g, gotGen)
		assert.Equal(t, mode, id.Mode())

		cfg := d.Config()
		assert.Equal(t, "nd12", cfg.Name)
		assert.Equal(t, g, cfg.Generation)
		assert.Equal(t, wantID, cfg.DeviceID)
		assert.Equal(t, uint64(0x4E53_0000_0000_0000)|uint64(g)<<32|12, cfg.Serial)
		assert.Equal(t, bar.DefaultSizes(geo, mode), cfg.BARs)
		assert.Equal(t, bar.DefaultMMIOLatency(g), cfg.MMIO)
		assert.Equal(t, DefaultFirmwareTiming(), cfg.Firmware)
		assert.EqualValues(t, DefaultFWAPIVersion, cfg.FWAPI)
		assert.False(t, cfg.Ready)

		wantReg := hwarch.BAR0
		if g != hwarch.Mariana && mode == hwarch.ModeQEMU { // driver 2.24.7.0: V2 and V3 on BAR2
			wantReg = hwarch.BAR2
		}
		assert.Equal(t, wantReg, d.RegisterBAR())
		for b := -1; b <= 6; b++ {
			want := uint64(0)
			if b >= 0 && b < 6 {
				want = cfg.BARs[b]
			}
			assert.Equal(t, want, d.BARSize(b), "BAR%d", b)
		}
		assert.NotZero(t, d.BARSize(d.RegisterBAR()))
		assert.NotZero(t, d.BARSize(hwarch.BAR4))

		assert.Same(t, geo, d.Geometry())
		assert.Equal(t, g, d.Atlas().Generation())
		assert.Len(t, d.BAR4().Windows(), len(geo.HBM))
		assert.Equal(t, PhaseBooting, d.Phase())
		assert.Zero(t, d.Now())
		assert.Equal(t, DeviceStats{}, d.Stats())
	})
}

func TestNewDeviceOverrides(t *testing.T) {
	fw := FirmwareTiming{Boot: time.Millisecond, ResetAck: 2 * time.Millisecond, DeviceReset: 3 * time.Millisecond, TPBReset: 4 * time.Millisecond, QEMUReset: 5 * time.Millisecond}
	mmio := hwarch.MMIOLatency{Read: 2 * time.Microsecond, Write: 300 * time.Nanosecond}
	h := newDev(t, DeviceConfig{
		Name: "custom", Generation: hwarch.Mariana, DeviceID: hwarch.DeviceTrn3B, RoutingID: 1, Serial: 0x1122_3344_5566_7788,
		MMIO: mmio, Firmware: fw, FWAPI: 9, Ready: true,
	})
	cfg := h.d.Config()
	assert.Equal(t, "custom", cfg.Name)
	assert.Equal(t, hwarch.DeviceTrn3B, h.d.Identity().Device)
	assert.Equal(t, fw, cfg.Firmware)
	assert.Equal(t, mmio, cfg.MMIO)
	assert.EqualValues(t, 9, h.read(h.misc(hwarch.MiscFWAPIVersion)))
	assert.EqualValues(t, 0x5566_7788, h.read(h.misc(hwarch.MiscSerialLo)))
	assert.EqualValues(t, 0x1122_3344, h.read(h.misc(hwarch.MiscSerialHi)))
	assert.Equal(t, 3*FromDuration(mmio.Read), h.d.Now())
}

func TestNewDeviceByDeviceID(t *testing.T) {
	tests := []struct {
		id  uint16
		gen hwarch.Generation
	}{
		{hwarch.DeviceTrn1, hwarch.Sunda}, {hwarch.DeviceInf2, hwarch.Sunda}, {hwarch.DeviceTrn2, hwarch.Cayman},
		{hwarch.DeviceTrn3, hwarch.Mariana}, {hwarch.DeviceTrn3B, hwarch.Mariana},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%#04x", tt.id), func(t *testing.T) {
			for _, withGen := range []bool{false, true} {
				cfg := DeviceConfig{DeviceID: tt.id}
				if withGen {
					cfg.Generation = tt.gen
				}
				d, err := NewDevice(cfg)
				require.NoError(t, err)
				assert.Equal(t, tt.gen, d.Config().Generation)
				assert.Equal(t, tt.id, d.Identity().Device)
			}
		})
	}
}

func TestNewDeviceConfigErrors(t *testing.T) {
	v2QEMUOnBAR0 := bar.Sizes{0: hwarch.GiB, 4: 32 * hwarch.GiB}
	tests := []struct {
		name   string
		cfg    DeviceConfig
		target error  // nil: only the message is checked
		msg    string // substring of the error
	}{
		{"no generation", DeviceConfig{}, hwarch.ErrUnknownGeneration, "unknown generation"},
		{"reserved generation", DeviceConfig{Generation: hwarch.Reserved1}, hwarch.ErrUnknownGeneration, ""},
		{"generation 5", DeviceConfig{Generation: hwarch.NumGenerations}, hwarch.ErrUnknownGeneration, ""},
		{"generation 200", DeviceConfig{Generation: 200}, hwarch.ErrUnknownGeneration, ""},
		{"unknown device id", DeviceConfig{DeviceID: 0x1234}, hwarch.ErrUnknownDeviceID, "0x1234"},
		{"device id of another generation", DeviceConfig{Generation: hwarch.Sunda, DeviceID: hwarch.DeviceTrn2}, nil, "is a cayman device, not sunda"},
		{"trn3 as cayman", DeviceConfig{Generation: hwarch.Cayman, DeviceID: hwarch.DeviceTrn3B}, nil, "not cayman"},
		{"register BAR too small", DeviceConfig{Generation: hwarch.Cayman, BARs: bar.Sizes{0: 0x1000, 4: 256 * hwarch.GiB}}, nil, "cannot hold the atlas"},
		{"register BAR one word short", DeviceConfig{Generation: hwarch.Mariana, BARs: bar.Sizes{0: 0xF480_0000 - 4}}, nil, "cannot hold the atlas"},
		{"no register BAR", DeviceConfig{Generation: hwarch.Sunda, BARs: bar.Sizes{4: 32 * hwarch.GiB}}, nil, "register BAR0"},
		{"V2 QEMU registers on BAR0", DeviceConfig{Generation: hwarch.Sunda, Revision: hwarch.RevisionQEMU, BARs: v2QEMUOnBAR0}, nil, "register BAR2"},
		{"BAR4 no power of two", DeviceConfig{Generation: hwarch.Sunda, BARs: bar.Sizes{0: hwarch.GiB, 4: 3 * hwarch.GiB}}, nil, "BAR4 of 0xc0000000 bytes: a PCI memory BAR's size is a power of two"},
		{"BAR on an upper-half slot", DeviceConfig{Generation: hwarch.Sunda, BARs: bar.Sizes{0: hwarch.GiB, 3: 4096, 4: 32 * hwarch.GiB}}, nil, "upper half of 64-bit BAR2"},
		{"BAR below 16 bytes", DeviceConfig{Generation: hwarch.Sunda, BARs: bar.Sizes{0: hwarch.GiB, 2: 8, 4: 32 * hwarch.GiB}}, nil, "at least 16 bytes"},
		{"V3 QEMU registers on BAR0", DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, BARs: bar.Sizes{0: 4 * hwarch.GiB, 4: 16 * hwarch.GiB}}, nil, "register BAR2"},
		{"bad QEMU BAR4", DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, BARs: bar.Sizes{2: 4 * hwarch.GiB, 4: 5 * hwarch.MiB}}, nil, "QEMU BAR4 size"},
		{"QEMU BAR4 past the channel windows", DeviceConfig{Generation: hwarch.Mariana, Revision: hwarch.RevisionQEMU, BARs: bar.Sizes{0: 4 * hwarch.GiB, 4: 1 << 40}}, nil, "device-address window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDevice(tt.cfg)
			require.Error(t, err)
			assert.Nil(t, d)
			if tt.target != nil {
				assert.ErrorIs(t, err, tt.target)
			}
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	// A register BAR that holds the atlas but is no power of two is not a
	// PCI BAR: refused. The smallest one that holds the atlas is 4 GiB.
	_, err := NewDevice(DeviceConfig{Generation: hwarch.Mariana, BARs: bar.Sizes{0: 0xF480_0000}})
	assert.ErrorContains(t, err, "power of two")
	_, err = NewDevice(DeviceConfig{Generation: hwarch.Mariana, BARs: bar.Sizes{0: 4 * hwarch.GiB}})
	assert.NoError(t, err)
}

func TestPhaseString(t *testing.T) {
	assert.Equal(t, "booting", PhaseBooting.String())
	assert.Equal(t, "ready", PhaseReady.String())
	assert.Equal(t, "device-reset", PhaseDeviceReset.String())
	assert.Equal(t, "phase(7)", Phase(7).String())
}

// TestSemaphoresThroughBAR drives every NC's semaphores through the BAR
// banks: SET, READ, INCR, DECR below zero, and a store to the READ bank.
func TestSemaphoresThroughBAR(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		m := h.geo.BAR0
		banks := []uint64{m.SemReadOffset, m.SemSetOffset, m.SemIncrOffset, m.SemDecrOffset}
		roWrites := uint64(0)
		for nc := range h.geo.NeuronCores {
			for _, i := range []int{0, 1, 100, 255} {
				h.write(h.ncSem(nc, m.SemSetOffset, i), 3)
				require.EqualValues(t, 3, h.read(h.ncSem(nc, m.SemReadOffset, i)))
				h.write(h.ncSem(nc, m.SemIncrOffset, i), 5)
				require.EqualValues(t, 8, h.read(h.ncSem(nc, m.SemReadOffset, i)))
				h.write(h.ncSem(nc, m.SemSetOffset, i), 0)
				h.write(h.ncSem(nc, m.SemIncrOffset, i), 5)
				h.write(h.ncSem(nc, m.SemDecrOffset, i), 7)
				require.Equal(t, uint32(0xFFFF_FFFE), h.read(h.ncSem(nc, m.SemReadOffset, i)), "-2 as a 32-bit word")
				for _, b := range banks { // every bank reads the value, without side effect
					require.Equal(t, uint32(0xFFFF_FFFE), h.read(h.ncSem(nc, b, i)))
				}
				h.write(h.ncSem(nc, m.SemReadOffset, i), 99)
				roWrites++
				require.Equal(t, uint32(0xFFFF_FFFE), h.read(h.ncSem(nc, m.SemReadOffset, i)))
				h.write(h.ncSem(nc, m.SemSetOffset, i), uint32(1000*nc+i))
			}
		}
		// Each NC has its own block.
		for nc := range h.geo.NeuronCores {
			for _, i := range []int{0, 1, 100, 255} {
				require.EqualValues(t, 1000*nc+i, h.read(h.ncSem(nc, m.SemReadOffset, i)))
			}
			require.Zero(t, h.read(h.ncSem(nc, m.SemReadOffset, 2)))
		}
		st := h.d.Stats()
		assert.Equal(t, roWrites, st.ReadOnlyWrites)
		assert.Zero(t, st.UnmappedReads+st.UnmappedWrites+st.NotReadyReads+st.DroppedWrites)
	})
}

func TestEventsThroughBAR(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		for nc := range h.geo.NeuronCores {
			for _, i := range []int{0, 7, 255} {
				h.write(h.ncEvent(nc, i), 3)
				require.EqualValues(t, 1, h.read(h.ncEvent(nc, i)), "event stores keep bit 0")
				h.write(h.ncEvent(nc, i), 2)
				require.Zero(t, h.read(h.ncEvent(nc, i)))
				h.write(h.ncEvent(nc, i), 1)
			}
			// Event 256 (the driver's off-by-one) is not an event: it lands
			// between the event bank and the semaphores and changes neither.
			h.write(h.ncEvent(nc, 256), 1)
			require.EqualValues(t, 1, h.read(h.ncEvent(nc, 255)))
			require.Zero(t, h.read(h.ncSem(nc, h.geo.BAR0.SemReadOffset, 0)))
			require.Equal(t, tpb.SyncState{}.Semaphores, h.d.st.NCSync[nc].Semaphores)
		}
		st := h.d.Stats()
		assert.Zero(t, st.UnmappedWrites+st.ReadOnlyWrites)
	})
}

func TestTopSPSemaphoresThroughBAR(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		for ts := range h.geo.TopSPs {
			for _, i := range []int{0, 255} {
				h.write(h.topSem(ts, tpb.SemSetOffset, i), 10)
				require.EqualValues(t, 10, h.read(h.topSem(ts, tpb.SemReadOffset, i)))
				h.write(h.topSem(ts, tpb.SemIncrOffset, i), 5)
				require.EqualValues(t, 15, h.read(h.topSem(ts, tpb.SemReadOffset, i)))
				h.write(h.topSem(ts, tpb.SemDecrOffset, i), 22)
				require.Equal(t, uint32(math.MaxUint32-6), h.read(h.topSem(ts, tpb.SemReadOffset, i)), "-7")
				h.write(h.topSem(ts, tpb.SemReadOffset, i), 1)
				require.Equal(t, uint32(math.MaxUint32-6), h.read(h.topSem(ts, tpb.SemReadOffset, i)))
				h.write(h.topSem(ts, tpb.EventsOffset, i), 0xFF)
				require.EqualValues(t, 1, h.read(h.topSem(ts, tpb.EventsOffset, i)))
				h.write(h.topSem(ts, tpb.SemSetOffset, i), uint32(ts+1))
			}
		}
		for ts := range h.geo.TopSPs {
			require.EqualValues(t, ts+1, h.read(h.topSem(ts, tpb.SemReadOffset, 0)))
			require.EqualValues(t, ts+1, h.d.st.TopSPSync[ts].Semaphores[255])
		}
		// TOP_SP and NC blocks are distinct.
		for nc := range h.geo.NeuronCores {
			require.Zero(t, h.read(h.ncSem(nc, h.geo.BAR0.SemReadOffset, 0)))
		}
		assert.EqualValues(t, 2*h.geo.TopSPs, h.d.Stats().ReadOnlyWrites)
	})
}

// TestPlainRegisters writes and reads words of every plain window: SBUF,
// PSUM (outside the sync block), a TOP_SP past its sync block, and APB.
func TestPlainRegisters(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		var offs []uint64
		for _, w := range h.d.Atlas().Windows() {
			switch w.Kind {
			case bar.SBUF, bar.PSUM, bar.APB:
				offs = append(offs, w.Start, w.End()-4)
			case bar.TopSP:
				offs = append(offs, w.Start+tpb.SyncSize, w.End()-4)
			case bar.NCSync:
				offs = append(offs, w.Start+0x400, w.Start+0xFFC) // between the event and semaphore banks
			}
		}
		if hwarch.ModeOf(rev) != hwarch.ModeQEMU {
			offs = append(offs, h.geo.BAR0.QEMUResetReg) // a plain register on silicon and EMU
		}
		for i, off := range offs {
			h.write(off, uint32(0xA500_0000+i))
		}
		for i, off := range offs {
			require.Equal(t, uint32(0xA500_0000+i), h.read(off), "%#x", off)
		}
		st := h.d.Stats()
		assert.Zero(t, st.UnmappedReads+st.UnmappedWrites+st.ReadOnlyWrites+st.ResetRequests)
		assert.EqualValues(t, len(offs), st.Reads)
		assert.EqualValues(t, len(offs), st.Writes)
	})
}

// TestHBMThroughBAR4 writes the first and last word of every channel through
// BAR4 and finds them at the channel's device addresses.
func TestHBMThroughBAR4(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		ws := h.d.BAR4().Windows()
		require.Len(t, ws, len(h.geo.HBM))
		for ch, w := range ws {
			assert.Equal(t, h.geo.HBM[ch].Base, w.DeviceAddr)
			for _, rel := range []uint64{0, 0x1000, w.Size - 4} {
				v := uint32(0xC0DE_0000 + ch<<8 + int(rel&0xFF))
				h.write4(w.BAR4Offset+rel, v)
				require.Equal(t, v, h.read4(w.BAR4Offset+rel))
				got, err := h.d.hbm.ReadU32(w.DeviceAddr + rel)
				require.NoError(t, err)
				require.Equal(t, v, got, "channel %d +%#x", ch, rel)
			}
		}
		// V2: BAR4 16 GiB is channel 1's first word, 64 GiB up in device addresses.
		if g == hwarch.Sunda {
			h.write4(16*hwarch.GiB+8, 0x5151)
			got, _ := h.d.hbm.ReadU32(0x10_0000_0008)
			assert.EqualValues(t, 0x5151, got)
		}
		assert.Zero(t, h.d.Stats().UnmappedWrites)
	})
}

func TestArrayAccess(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		// An array across an NC's semaphore banks: SET 4 words, READ them back.
		set := h.ncSem(0, h.geo.BAR0.SemSetOffset, 10)
		require.NoError(t, h.d.WriteBAR(h.reg, set, []uint32{1, 2, 3, 0xFFFF_FFFF}))
		got := make([]uint32, 4)
		require.NoError(t, h.d.ReadBAR(h.reg, h.ncSem(0, h.geo.BAR0.SemReadOffset, 10), got))
		assert.Equal(t, []uint32{1, 2, 3, 0xFFFF_FFFF}, got)

		// An array that runs from the last words of MISC RAM into the APB
		// block around it (V2 apb_io, V3/V4 apb_io_0).
		end := h.misc(bar.MiscRAMSize)
		require.NoError(t, h.d.WriteBAR(h.reg, end-8, []uint32{7, 8, 9, 10}))
		require.NoError(t, h.d.ReadBAR(h.reg, end-8, got))
		assert.Equal(t, []uint32{7, 8, 9, 10}, got)
		assert.EqualValues(t, 7, h.d.st.Misc[len(h.d.st.Misc)-2])
		v, _ := h.d.regs.ReadU32(end)
		assert.EqualValues(t, 9, v)

		// Zero-length accesses are valid and cost nothing.
		before := h.d.Now()
		require.NoError(t, h.d.ReadBAR(h.reg, 0, nil))
		require.NoError(t, h.d.WriteBAR(h.reg, 0, []uint32{}))
		assert.Equal(t, before, h.d.Now())
	})
}

func TestBARAccessErrors(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		regSize := h.d.BARSize(h.reg)
		bar4Size := h.d.BARSize(hwarch.BAR4)
		badBARs := []int{1, 3, 5, -1, 6, 7, math.MaxInt, math.MinInt}
		if h.reg == hwarch.BAR2 {
			badBARs = append(badBARs, hwarch.BAR0)
		} else {
			badBARs = append(badBARs, hwarch.BAR2)
		}
		type access struct {
			name   string
			bar    int
			off    uint64
			n      int
			target error
		}
		var tests []access
		for _, b := range badBARs {
			tests = append(tests, access{fmt.Sprintf("bar %d", b), b, 0, 1, hwarch.ErrBadBAR})
		}
		for _, b := range []int{h.reg, hwarch.BAR4} {
			size := h.d.BARSize(b)
			tests = append(tests,
				access{fmt.Sprintf("bar %d off 1", b), b, 1, 1, hwarch.ErrAlignment},
				access{fmt.Sprintf("bar %d off 2", b), b, 2, 1, hwarch.ErrAlignment},
				access{fmt.Sprintf("bar %d off 3", b), b, 3, 1, hwarch.ErrAlignment},
				access{fmt.Sprintf("bar %d off size-2", b), b, size - 2, 1, hwarch.ErrAlignment},
				access{fmt.Sprintf("bar %d off size", b), b, size, 1, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off size-4 n 2", b), b, size - 4, 2, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off size+4", b), b, size + 4, 1, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off size+4 n 0", b), b, size + 4, 0, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off 2^64-4", b), b, math.MaxUint64 - 3, 1, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off 2^64-8 n 2 (wraps to 0)", b), b, math.MaxUint64 - 7, 2, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off 2^64-4 n 64", b), b, math.MaxUint64 - 3, 64, hwarch.ErrBAROffset},
				access{fmt.Sprintf("bar %d off 2^63", b), b, 1 << 63, 1, hwarch.ErrBAROffset},
			)
		}
		// A bad BAR is reported before a bad offset, a misaligned offset
		// before a range error.
		tests = append(tests,
			access{"bad bar and misaligned", 3, 1, 1, hwarch.ErrBadBAR},
			access{"misaligned past the end", h.reg, math.MaxUint64, 1, hwarch.ErrAlignment},
		)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before, now := h.d.Stats(), h.d.Now()
				check := func(op string, err error) {
					t.Helper()
					require.Error(t, err, op)
					assert.ErrorIs(t, err, tt.target, op)
					for _, other := range []error{hwarch.ErrBadBAR, hwarch.ErrAlignment, hwarch.ErrBAROffset, hwarch.ErrDeviceClosed} {
						if other != tt.target {
							assert.NotErrorIs(t, err, other, op)
						}
					}
					assert.Contains(t, err.Error(), "nd3")
				}
				if tt.n == 1 {
					_, err := h.d.Read32(tt.bar, tt.off)
					check("Read32", err)
					check("Write32", h.d.Write32(tt.bar, tt.off, 1))
				}
				check("ReadBAR", h.d.ReadBAR(tt.bar, tt.off, make([]uint32, tt.n)))
				check("WriteBAR", h.d.WriteBAR(tt.bar, tt.off, make([]uint32, tt.n)))
				// A refused access has no effect at all: no time, no counts.
				assert.Equal(t, before, h.d.Stats())
				assert.Equal(t, now, h.d.Now())
			})
		}
		// The last word of each BAR is in range.
		_, err := h.d.Read32(h.reg, regSize-4)
		assert.NoError(t, err)
		_, err = h.d.Read32(hwarch.BAR4, bar4Size-4)
		assert.NoError(t, err)
		assert.NoError(t, h.d.ReadBAR(hwarch.BAR4, bar4Size-64*4, make([]uint32, 64)))
		assert.NoError(t, h.d.ReadBAR(h.reg, regSize, nil), "an empty access at the end")

		// The error names the BARs that exist.
		_, err = h.d.Read32(1, 0)
		assert.Contains(t, err.Error(), fmt.Sprintf("BARs present: BAR%d BAR4", h.reg))
	})
}

// TestBAROffsetNoOverflow uses a device with a tiny BAR4 so that arrays as
// long as the BAR and longer can be built: the range check must not
// overflow for huge offsets or counts.
func TestBAROffsetNoOverflow(t *testing.T) {
	h := newDev(t, DeviceConfig{Generation: hwarch.Sunda, Ready: true, BARs: bar.Sizes{0: hwarch.GiB, 4: 4096}})
	tests := []struct {
		off uint64
		n   int
		ok  bool
	}{
		{0, 1024, true},
		{4, 1023, true},
		{4, 1024, false},
		{0, 1025, false},
		{4096, 0, true},
		{4096, 1, false},
		{math.MaxUint64 - 3, 1, false},
		{math.MaxUint64 - 4095, 1024, false}, // off + 4n wraps to exactly 0
		{math.MaxUint64 - 4095 + 4, 1024, false},
		{1 << 62, 1024, false},
		{0, 1 << 20, false},
		{math.MaxUint64 &^ 3, 1 << 20, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%#x+%d", tt.off, tt.n), func(t *testing.T) {
			buf := make([]uint32, tt.n)
			errR := h.d.ReadBAR(hwarch.BAR4, tt.off, buf)
			errW := h.d.WriteBAR(hwarch.BAR4, tt.off, buf)
			if tt.ok {
				assert.NoError(t, errR)
				assert.NoError(t, errW)
				return
			}
			assert.ErrorIs(t, errR, hwarch.ErrBAROffset)
			assert.ErrorIs(t, errW, hwarch.ErrBAROffset)
		})
	}
	// The whole 4 KiB BAR4 is the start of HBM channel 0.
	require.NoError(t, h.d.Write32(hwarch.BAR4, 4092, 0xABCD))
	got, _ := h.d.hbm.ReadU32(4092)
	assert.EqualValues(t, 0xABCD, got)
}

func TestClosedDevice(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		h.write(h.ncSem(0, h.geo.BAR0.SemSetOffset, 0), 42)
		require.NoError(t, h.d.Close())
		statsBefore, now := h.d.Stats(), h.d.Now()

		errs := map[string]error{}
		_, errs["Read32"] = h.d.Read32(h.reg, 0)
		errs["Write32"] = h.d.Write32(h.reg, 0, 1)
		errs["ReadBAR"] = h.d.ReadBAR(hwarch.BAR4, 0, make([]uint32, 2))
		errs["WriteBAR"] = h.d.WriteBAR(hwarch.BAR4, 0, []uint32{1})
		errs["Sleep"] = h.d.Sleep(time.Second)
		errs["Close"] = h.d.Close()
		// Closed is reported before any other problem with the access.
		_, errs["Read32 bad bar"] = h.d.Read32(3, 1)
		errs["Write32 misaligned"] = h.d.Write32(h.reg, 2, 1)
		_, errs["Read32 out of range"] = h.d.Read32(h.reg, math.MaxUint64-3)
		for name, err := range errs {
			require.Error(t, err, name)
			assert.ErrorIs(t, err, hwarch.ErrDeviceClosed, name)
			assert.NotErrorIs(t, err, hwarch.ErrBadBAR, name)
			assert.Contains(t, err.Error(), "nd3", name)
		}
		// The state is kept and still observable.
		assert.Equal(t, statsBefore, h.d.Stats())
		assert.Equal(t, now, h.d.Now())
		assert.Equal(t, PhaseReady, h.d.Phase())
		assert.EqualValues(t, 42, h.d.st.NCSync[0].Semaphores[0])
	})
}

func TestUnmappedAccess(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		var want DeviceStats
		for _, off := range unmappedReg(h.geo) {
			if off >= h.d.BARSize(h.reg) {
				continue
			}
			h.write(off, 0x1234_5678)
			want.UnmappedWrites++
			require.Equal(t, bar.UnmappedRead, h.read(off), "%#x", off)
			want.UnmappedReads++
			st := h.d.Stats()
			require.Equal(t, off, st.LastUnmapped)
			require.Equal(t, h.reg, st.LastUnmappedBAR)
		}
		// The gap between a V3/V4 channel's active HBM and the next 64 GiB
		// stride of BAR4 is unmapped too (under QEMU BAR4 has no gap).
		if g != hwarch.Sunda && hwarch.ModeOf(rev) != hwarch.ModeQEMU {
			active := h.geo.HBM[0].ActiveSize
			for _, off := range []uint64{active, 64*hwarch.GiB - 4, 64*hwarch.GiB + active, 256*hwarch.GiB - 4} {
				h.write4(off, 0xFEED)
				want.UnmappedWrites++
				require.Equal(t, bar.UnmappedRead, h.read4(off))
				want.UnmappedReads++
				st := h.d.Stats()
				require.Equal(t, off, st.LastUnmapped)
				require.Equal(t, hwarch.BAR4, st.LastUnmappedBAR)
			}
			require.Zero(t, h.d.hbm.PagesTouched(), "an unmapped BAR4 write must not reach HBM")
		}
		st := h.d.Stats()
		assert.Equal(t, want.UnmappedReads, st.UnmappedReads)
		assert.Equal(t, want.UnmappedWrites, st.UnmappedWrites)
		assert.Zero(t, h.d.regs.PagesTouched(), "an unmapped write must not reach any register")
		assert.Equal(t, st.UnmappedReads, st.Reads)
	})
}

// TestMMIOLatency checks that each access costs exactly its latency.
func TestMMIOLatency(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		lat := bar.DefaultMMIOLatency(g)
		r, w := FromDuration(lat.Read), FromDuration(lat.Write)
		require.Equal(t, r, h.readLatency())

		off := plainAPB(h.geo)[0]
		for i := 1; i <= 10; i++ {
			h.read(off)
			require.Equal(t, Time(i)*r, h.d.Now())
		}
		start := h.d.Now()
		for i := 1; i <= 10; i++ {
			h.write(off, uint32(i))
			require.Equal(t, start+Time(i)*w, h.d.Now())
		}
		start = h.d.Now()
		require.NoError(t, h.d.ReadBAR(hwarch.BAR4, 0, make([]uint32, 16)))
		assert.Equal(t, start+16*r, h.d.Now())
		start = h.d.Now()
		require.NoError(t, h.d.WriteBAR(hwarch.BAR4, 0, make([]uint32, 16)))
		assert.Equal(t, start+16*w, h.d.Now())
		start = h.d.Now()
		h.sleep(1500 * time.Microsecond)
		assert.Equal(t, start+1500*Microsecond, h.d.Now())

		// Unmapped and not-ready accesses cost the same.
		start = h.d.Now()
		h.read(unmappedReg(h.geo)[0])
		assert.Equal(t, start+r, h.d.Now())

		st := h.d.Stats()
		assert.EqualValues(t, 10+16+1, st.Reads)
		assert.EqualValues(t, 10+16, st.Writes)
	})
	t.Run("custom latency", func(t *testing.T) {
		h := newDev(t, DeviceConfig{Generation: hwarch.Cayman, Ready: true,
			MMIO: hwarch.MMIOLatency{Read: 3 * time.Microsecond, Write: 1 * time.Nanosecond}})
		h.read(0)
		h.write(0, 1)
		assert.Equal(t, 3*Microsecond+Nanosecond, h.d.Now())
	})
	t.Run("negative sleep and huge sleep are refused", func(t *testing.T) {
		h := readyDev(t, hwarch.Mariana, 0)
		require.ErrorIs(t, h.d.Sleep(-time.Second), units.ErrRange)
		assert.Zero(t, h.d.Now())
		require.ErrorIs(t, h.d.Sleep(time.Duration(math.MaxInt64)), units.ErrRange)
		assert.Zero(t, h.d.Now(), "a refused sleep does not move the clock")
	})
}

// TestConcurrentSemaphoreIncr hammers one semaphore from many goroutines:
// accesses are serialised, so no increment is lost.
func TestConcurrentSemaphoreIncr(t *testing.T) {
	const goroutines, perG = 32, 1000
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			h := readyDev(t, g, 0)
			incr := h.ncSem(h.geo.NeuronCores-1, h.geo.BAR0.SemIncrOffset, 200)
			read := h.ncSem(h.geo.NeuronCores-1, h.geo.BAR0.SemReadOffset, 200)
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for range goroutines {
				wg.Go(func() {
					for range perG {
						if err := h.d.Write32(h.reg, incr, 1); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			// Readers and observers run alongside.
			for range 2 {
				wg.Go(func() {
					for range 200 {
						if _, err := h.d.Read32(h.reg, read); err != nil {
							errs <- err
							return
						}
						_ = h.d.Stats()
						_ = h.d.Now()
						_ = h.d.Phase()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.EqualValues(t, goroutines*perG, h.read(read))
			assert.EqualValues(t, goroutines*perG, h.d.Stats().Writes)
			assert.Equal(t, Time(goroutines*perG)*h.writeLatency()+Time(2*200+1)*h.readLatency(), h.d.Now())
		})
	}
}

func TestErrorMessages(t *testing.T) {
	h := newDev(t, DeviceConfig{Name: "devX", Generation: hwarch.Sunda, Revision: hwarch.RevisionQEMU, Ready: true})
	_, err := h.d.Read32(hwarch.BAR0, 0x10)
	require.ErrorIs(t, err, hwarch.ErrBadBAR)
	msg := err.Error()
	for _, s := range []string{"devX", "read", "bar 0", "0x10", "BARs present: BAR2 BAR4"} {
		assert.True(t, strings.Contains(msg, s), "%q lacks %q", msg, s)
	}
	err = h.d.WriteBAR(hwarch.BAR2, hwarch.GiB-4, []uint32{1, 2})
	require.ErrorIs(t, err, hwarch.ErrBAROffset)
	assert.Contains(t, err.Error(), "count 2")

	// A device with no BARs at all says so.
	h.d.cfg.BARs = bar.Sizes{}
	_, err = h.d.Read32(0, 0)
	assert.Contains(t, err.Error(), "BARs present: none")
	assert.True(t, errors.Is(err, hwarch.ErrBadBAR))
}

// A V3/V4 QEMU device may come without a BAR4, as the driver tolerates.
func TestQEMUDeviceWithoutBAR4(t *testing.T) {
	d, err := NewDevice(DeviceConfig{Generation: hwarch.Mariana, Revision: hwarch.RevisionQEMU, Ready: true, BARs: bar.Sizes{0: 4 * hwarch.GiB}})
	require.NoError(t, err)
	assert.Zero(t, d.BARSize(hwarch.BAR4))
	_, err = d.Read32(hwarch.BAR4, 0)
	assert.ErrorIs(t, err, hwarch.ErrBadBAR)
}
