package sim

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// This file replays, against sim.Device, what the aws-neuron kernel driver
// 2.24.7.0 does to a device from probe to "reset request … completed": the
// same config-space and BAR accesses in the same order, with time passing on
// the device clock where the driver sleeps, and the same checks and retry
// budgets. The driver's behaviour is written down as data (driverBehaviour,
// each field citing the driver's file:line); the replay is our own code.
// docs/device-model.md "What driver 2.24.7.0 does at probe and reset" lists
// the sequence.

// driverBehaviour is what driver 2.24.7.0 does for one generation × mode.
type driverBehaviour struct {
	apbBAR int // ndhal_pci.apb_bar: v2/neuron_dhal_v2.c 1792/1802/1809, v3/neuron_dhal_v3.c 2188/2202/2214
	// minAPB is the highest register offset the driver's address map
	// reaches (v2/address_map.h 87: APB at 0x3000_0000 and its 16 MiB of
	// blocks; v3/address_map.h 27–32, 110–118, 167–168: TOP_SP 17 ends at
	// 0xF480_0000).
	minAPB uint64
	// qemuRegWrite: the reset starts with a store to the QEMU reset
	// register (v2 160–166 stores 1; v3 339–351 stores the TPB map, which
	// nr_get_tpb_reset_map, v3 301–316, leaves 0 for a device reset).
	qemuRegWrite bool
	qemuRegOne   bool // V2 stores 1 whatever the request; V3 the TPB map
	// mailbox: the reset goes through the MISC RAM handshake
	// (nr_initiate_reset_via_fw, neuron_reset.c 376–432; V2 QEMU does it
	// after the QEMU store, v2 168–174; V3 QEMU does not, v3 339–351).
	mailbox bool
	giveUp  time.Duration // initiate_max_wait_time: v2 28 (120 s), v3 34 (480 s)
	// qemuWait: the completion wait polls the QEMU reset register, sleeping
	// 2 s per read (v2 211–231, v3 384–404); otherwise it reads FW status
	// +0x808 until bit 3 clears (v2 189–209, v3 362–382).
	qemuWait bool
	retries  int // ndhal_reset.retry_count: 5 (neuron_reset.h 17), ×1000 under V2 EMU (v2 1795) and V3 EMU/QEMU (v3 2195, 2183)
	// hbmFromBAR4: under QEMU on V3 every HBM channel is BAR4 size / 4
	// (v3 638–656) and must stay within the 24 GiB the mmap path maps
	// (mmap_get_bar4_offset_v3, v3 1020–1036); otherwise channels are fixed
	// and BAR4 must reach the last (v2 814–824: 32 GiB; v3: 3·64 + 24 GiB).
	hbmFromBAR4 bool
	minBAR4     uint64
}

func behaviourOf(g hwarch.Generation, mode hwarch.Mode) driverBehaviour {
	b := driverBehaviour{retries: 5, mailbox: true}
	if g == hwarch.Sunda {
		b.minAPB, b.giveUp, b.minBAR4 = 0x3100_0000, 120*time.Second, 32*hwarch.GiB
	} else {
		b.minAPB, b.giveUp, b.minBAR4 = 0xF480_0000, 480*time.Second, 3*64*hwarch.GiB+24*hwarch.GiB
	}
	switch {
	case mode == hwarch.ModeQEMU && g == hwarch.Sunda:
		b.apbBAR, b.qemuRegWrite, b.qemuRegOne, b.qemuWait = 2, true, true, true
	case mode == hwarch.ModeQEMU:
		b.apbBAR, b.qemuRegWrite, b.qemuWait, b.mailbox = 2, true, true, false
		b.retries *= 1000
		b.hbmFromBAR4, b.minBAR4 = true, 0
	case mode == hwarch.ModeEMU:
		b.retries *= 1000
	}
	return b
}

// replayAccess is one register access of the replay, for failure messages.
type replayAccess struct {
	at    Time
	write bool
	off   uint64
	val   uint32
}

func (a replayAccess) String() string {
	op := "R"
	if a.write {
		op = "W"
	}
	return fmt.Sprintf("%v %s +%#x %#x", a.at, op, a.off, a.val)
}

// driverReplay drives one device the way the driver does.
type driverReplay struct {
	t    *testing.T
	d    *Device
	geo  *hwarch.Geometry
	b    driverBehaviour
	misc uint64
	log  []replayAccess
}

func (r *driverReplay) readl(off uint64) uint32 {
	v, err := r.d.Read32(r.b.apbBAR, off)
	require.NoError(r.t, err, "readl BAR%d +%#x", r.b.apbBAR, off)
	r.log = append(r.log, replayAccess{r.d.Now(), false, off, v})
	return v
}

func (r *driverReplay) writel(off uint64, v uint32) {
	require.NoError(r.t, r.d.Write32(r.b.apbBAR, off, v), "writel BAR%d +%#x", r.b.apbBAR, off)
	r.log = append(r.log, replayAccess{r.d.Now(), true, off, v})
}

func (r *driverReplay) sleep(d time.Duration) { require.NoError(r.t, r.d.Sleep(d)) }

// since is how long has passed on the device clock since t0 (the driver's
// ktime; in the served setting device time follows wall time).
func (r *driverReplay) since(t0 Time) time.Duration { return (r.d.Now() - t0).Duration() }

// readInit is a read made while the device is not yet operational
// (fw_io_read_csr_array_direct, neuron_fw_io.c 358–384): up to 15 rounds of
// one second each, reading every millisecond until the value is not
// 0xDEADBEEF.
func (r *driverReplay) readInit(off uint64) (uint32, bool) {
	for range 15 {
		t0 := r.d.Now()
		for {
			if v := r.readl(off); v != hwarch.NotReady {
				return v, true
			}
			r.sleep(time.Millisecond)
			if r.since(t0) >= time.Second {
				break
			}
		}
	}
	return 0, false
}

func (r *driverReplay) cfg16(off uint64) uint16 {
	var p [2]byte
	require.NoError(r.t, r.d.ReadConfig(off, p[:]))
	return binary.LittleEndian.Uint16(p[:])
}

func (r *driverReplay) cfg32(off uint64) uint32 {
	var p [4]byte
	require.NoError(r.t, r.d.ReadConfig(off, p[:]))
	return binary.LittleEndian.Uint32(p[:])
}

func (r *driverReplay) setCfg32(off uint64, v uint32) {
	var p [4]byte
	binary.LittleEndian.PutUint32(p[:], v)
	require.NoError(r.t, r.d.WriteConfig(off, p[:]))
}

// barSize sizes a 64-bit memory BAR as the guest kernel does at
// enumeration (all-ones to both dwords, read the mask back, restore): what
// pci_resource_len then reports to the driver. 0: the BAR is absent.
func (r *driverReplay) barSize(b int) uint64 {
	lo, hi := uint64(hwarch.CfgBAR0+4*b), uint64(hwarch.CfgBAR0+4*b+4)
	l0, h0 := r.cfg32(lo), r.cfg32(hi)
	if l0&0x6 != hwarch.BARMem64 {
		return 0
	}
	r.setCfg32(lo, ^uint32(0))
	r.setCfg32(hi, ^uint32(0))
	mask := uint64(r.cfg32(hi))<<32 | uint64(r.cfg32(lo)&^0xF)
	r.setCfg32(lo, l0)
	r.setCfg32(hi, h0)
	if mask == 0 {
		return 0
	}
	return ^mask + 1
}

// probe is neuron_pci_probe (neuron_pci.c 187–328) up to the reset request:
// enable, bus master, the architecture from the device id and revision, the
// BARs, and the routing id. It returns the routing id, or an error naming
// what the driver would report.
func (r *driverReplay) probe(wantID uint16, wantRev uint8) (uint32, error) {
	t := r.t
	require.Equal(t, hwarch.VendorAmazon, r.cfg16(hwarch.CfgVendorID))
	require.Equal(t, wantID, r.cfg16(hwarch.CfgDeviceID))
	var rev [1]byte
	require.NoError(t, r.d.ReadConfig(hwarch.CfgRevision, rev[:]))
	require.Equal(t, wantRev, rev[0], "PCI_REVISION_ID (neuron_pci.c 167)")
	// pci_enable_device (207) sets memory decode, pci_set_master (213) bus mastering.
	cmd := r.cfg16(hwarch.CfgCommand) | hwarch.CmdMemorySpace | hwarch.CmdBusMaster
	require.NoError(t, r.d.WriteConfig(hwarch.CfgCommand, binary.LittleEndian.AppendUint16(nil, cmd)))
	require.Equal(t, cmd, r.cfg16(hwarch.CfgCommand)&cmd)

	// The APB BAR must exist and hold the driver's map (a missing or short
	// one fails the reservation, neuron_pci.c 224–233, or faults later).
	apb := r.barSize(r.b.apbBAR)
	require.GreaterOrEqual(t, apb, r.b.minAPB, "BAR%d (APB) must cover the driver's register map", r.b.apbBAR)
	// BAR4 (neuron_pci.c 244–252; dram_bar_size, v3 1239).
	bar4 := r.barSize(hwarch.BAR4)
	if r.b.hbmFromBAR4 {
		ch := bar4 / 4
		// The 16 MiB firmware carve-out at the start of every channel
		// (v3 690–720) and the 1 GiB small pool at its end
		// (neuron_mempool.c 64) must leave room for allocations.
		assert.Greater(t, ch, 16*hwarch.MiB+hwarch.GiB, "BAR4/4 = %#x per HBM channel under QEMU (v3 638–656)", ch)
		assert.LessOrEqual(t, ch, 24*hwarch.GiB, "a channel past V3_HBM_ACTIVE_SIZE is not mmappable (v3 1020–1036)")
	} else {
		assert.GreaterOrEqual(t, bar4, r.b.minBAR4, "BAR4 must reach the last HBM channel")
	}

	// fw_io_setup (260, neuron_fw_io.c 498–539) touches no register: it
	// allocates the FW-IO buffers and registers the readless window.
	// get_device_id (268; v2 1070–1093, v3 1323–1346): up to 20 tries, a
	// second apart, of MISC RAM +0x24 until it is not 0xDEADBEEF.
	var rid uint32
	ok := false
	for range 20 {
		if v, got := r.readInit(r.misc + hwarch.MiscRoutingID); got && v != hwarch.NotReady {
			rid, ok = v, true
			break
		}
		r.sleep(time.Second)
	}
	if !ok {
		return 0, fmt.Errorf("Could not retrieve device index (read timeout) after %v", r.d.Now())
	}
	if rid >= hwarch.MaxNeuronDevices {
		return 0, fmt.Errorf("Invalid device index %d", rid)
	}
	return rid, nil
}

// ncMapDevice is the nc_map of a whole-device reset (NEURON_NC_MAP_DEVICE,
// share/neuron_driver_shared.h 51).
const ncMapDevice = 0xFFFF_FFFF

// tpbResetMap is the map the driver builds for a reset of nc_map
// (nr_get_tpb_reset_map): empty for a device reset; per NC on V2 bit n and
// bits 8+j for its three TOP_SPs (v2/neuron_dhal_v2.c 119–137), on V3 bits
// n, 8+n (SDMA group) and 16+n (TOP_SP group) (v3/neuron_dhal_v3.c 301–316).
func (r *driverReplay) tpbResetMap(ncMap uint32) uint32 {
	var m uint32
	if ncMap == ncMapDevice {
		return 0
	}
	for nc := range 8 { // MAX_NC_PER_DEVICE
		if ncMap&(1<<nc) == 0 {
			continue
		}
		m |= 1 << nc
		if r.geo.Generation == hwarch.Sunda {
			for j := 3 * nc; j < 3*nc+3; j++ { // V2_TS_PER_DEVICE / V2_NC_PER_DEVICE = 3
				m |= 1 << (8 + j)
			}
		} else {
			m |= 1<<(nc+8) | 1<<(nc+16)
		}
	}
	return m
}

// reset is the reset worker for one request of nc_map ncMap
// (neuron_reset.c 69–190): initiate, wait for completion. The probe's
// request is the whole device (neuron_pci.c 125); NC_RESET asks for NCs.
// It returns an error naming the step the driver would report as failed.
func (r *driverReplay) reset(ncMap uint32) error {
	qemuReg := r.geo.BAR0.QEMUResetReg
	m := r.tpbResetMap(ncMap)
	if r.b.qemuRegWrite {
		v := m
		if r.b.qemuRegOne {
			v = 1
		}
		r.writel(qemuReg, v)
	}
	if r.b.mailbox {
		if err := r.mailboxReset(ncMap, m); err != nil {
			return err
		}
	}
	for i := range r.b.retries {
		var busy bool
		if r.b.qemuWait {
			busy = r.readl(qemuReg) != 0
			r.sleep(2 * time.Second)
		} else {
			st, ok := r.readInit(r.misc + hwarch.MiscFWStatus)
			busy = !ok || st&hwarch.FWStatusResetActive != 0
		}
		if !busy {
			return nil
		}
		r.sleep(time.Duration(i) * 100 * time.Millisecond)
	}
	return fmt.Errorf("reset request was initiated, but failed to complete (%d tries)", r.b.retries)
}

// mailboxReset is nr_initiate_reset_via_fw (neuron_reset.c 376–432,
// fw_io_initiate_reset neuron_fw_io.c 415–431): for a TPB reset the map to
// +0x1D8 and type 2, for a device reset type 1, to +0x1EC; 1 to the trigger
// +0x800; then every 100 ms an init read of +0x1EC until it is 0,
// triggering again after 30 s (device) or 10 s (TPB), giving up after the
// budget.
func (r *driverReplay) mailboxReset(ncMap, m uint32) error {
	typ, retrig := hwarch.ResetTypeDevice, 30*time.Second
	if ncMap != ncMapDevice {
		typ, retrig = hwarch.ResetTypeTPB, 10*time.Second
	}
	trigger := func() {
		if typ == hwarch.ResetTypeTPB {
			r.writel(r.misc+hwarch.MiscResetTPBMap, m)
		}
		r.writel(r.misc+hwarch.MiscResetRequest, typ)
		r.writel(r.misc+hwarch.MiscTrigger, 1)
	}
	t0 := r.d.Now()
	trigger()
	next := retrig
	for r.since(t0) < r.b.giveUp {
		r.sleep(100 * time.Millisecond)
		if v, ok := r.readInit(r.misc + hwarch.MiscResetRequest); ok && v == 0 {
			return nil
		}
		if r.since(t0) > next {
			trigger()
			next = r.since(t0) + retrig
		}
	}
	return fmt.Errorf("reset request failed: +0x1EC not acknowledged in %v", r.b.giveUp)
}

// replayDriver probes and resets a device as driver 2.24.7.0 does and
// returns the replay and the first step that failed as the driver would
// report it.
func replayDriver(t *testing.T, cfg DeviceConfig) (*driverReplay, error) {
	t.Helper()
	d, err := NewDevice(cfg)
	require.NoError(t, err)
	g, mode := d.Geometry().Generation, hwarch.ModeOf(cfg.Revision)
	r := &driverReplay{t: t, d: d, geo: d.Geometry(), b: behaviourOf(g, mode), misc: d.Geometry().BAR0.MiscRAM}
	rid, err := r.probe(d.Identity().Device, cfg.Revision)
	if err != nil {
		return r, err
	}
	assert.Equal(t, cfg.RoutingID, rid)
	if err := r.reset(ncMapDevice); err != nil {
		return r, fmt.Errorf("%w; last accesses: %v", err, r.log[max(0, len(r.log)-8):])
	}
	return r, nil
}

// driverProducts are the devices driver 2.24.7.0 knows (neuron_pci.c 31–42)
// beyond Inf1; Trn3 is not among them.
var driverProducts = []struct {
	name string
	id   uint16
}{{"trn1", 0x7164}, {"inf2", 0x7264}, {"trn2", 0x7364}}

// TestDriverReplay runs driver 2.24.7.0's probe, ready wait and reset
// against the model for Trn1, Inf2 and Trn2 under every revision, with a
// device that boots as the model's firmware does (0xDEADBEEF until Boot has
// passed) — the default boot, and one that takes 30 s, past one round of
// the driver's init read.
func TestDriverReplay(t *testing.T) {
	boots := []struct {
		name string
		boot time.Duration
	}{{"default-boot", 0}, {"30s-boot", 30 * time.Second}}
	for _, p := range driverProducts {
		for _, rv := range testRevisions {
			for _, bt := range boots {
				t.Run(p.name+"/"+rv.name+"/"+bt.name, func(t *testing.T) {
					fw := DefaultFirmwareTiming()
					if bt.boot > 0 {
						fw.Boot = bt.boot
					}
					r, err := replayDriver(t, DeviceConfig{DeviceID: p.id, Revision: rv.rev, RoutingID: 5, Firmware: fw})
					require.NoError(t, err)
					d := r.d
					after := d.Stats()
					// The driver asked for a device reset; the device did one.
					assert.EqualValues(t, 1, after.DeviceResets, "the device reset the driver asked for ran")
					assert.Equal(t, PhaseReady, d.Phase())
					assert.Zero(t, after.UnmappedReads+after.UnmappedWrites, "every register the driver touched is decoded")
					// After "reset … completed" the driver inits the DMA
					// engines (ndmar_init_ncs, neuron_ring.c 557–575): the
					// registers answer.
					sem := r.readl(r.geo.BAR0.TPBWindow(0) + r.geo.BAR0.SemReadOffset)
					assert.NotEqual(t, hwarch.NotReady, sem)
					t.Logf("%d register accesses, reset done at %v", len(r.log), d.Now())
				})
			}
		}
	}
}

// TestDriverReplayTPBReset: after probe, the NC_RESET path
// (nr_start_ncs with an nc_map, neuron_reset.c 247–304) resets NC 1 with
// the map the driver builds, and the model resets exactly what that map
// covers: NC 1's semaphores clear, NC 0's stay — except on V2 under QEMU,
// where the driver stores 1 to the QEMU reset register whatever the request
// (v2/neuron_dhal_v2.c 160–166) and the model resets the whole device.
func TestDriverReplayTPBReset(t *testing.T) {
	for _, p := range driverProducts {
		for _, rv := range testRevisions {
			t.Run(p.name+"/"+rv.name, func(t *testing.T) {
				r, err := replayDriver(t, DeviceConfig{DeviceID: p.id, Revision: rv.rev, RoutingID: 2})
				require.NoError(t, err)
				sem := func(nc int) uint64 { return r.geo.BAR0.TPBWindow(nc) + r.geo.BAR0.SemReadOffset }
				set := func(nc int) uint64 { return r.geo.BAR0.TPBWindow(nc) + r.geo.BAR0.SemSetOffset }
				r.writel(set(0), 7)
				r.writel(set(1), 9)
				require.Equal(t, uint32(9), r.readl(sem(1)))
				before := r.d.Stats()
				require.NoError(t, r.reset(1<<1))
				after := r.d.Stats()
				assert.Zero(t, r.readl(sem(1)), "NC 1 was reset")
				if r.b.qemuRegOne {
					assert.Zero(t, r.readl(sem(0)), "V2 QEMU: the QEMU register resets the device")
					assert.Equal(t, before.DeviceResets+1, after.DeviceResets)
					return
				}
				assert.Equal(t, uint32(7), r.readl(sem(0)), "NC 0 was not in the map")
				assert.Equal(t, before.TPBResets+1, after.TPBResets)
				assert.Equal(t, before.DeviceResets, after.DeviceResets)
			})
		}
	}
}

// TestDriverReplayBudgets: the replay fails where the driver would — a
// firmware that boots after the driver's 20 routing-id tries (each up to
// 15 s of init reads, then 1 s), a device reset that outlasts the driver's
// five FW status reads (0.6 s after the acknowledgement is seen), a V2 QEMU
// reset register that stays set past its five reads — and the model's
// default firmware times fit inside every budget (TestDriverReplay).
func TestDriverReplayBudgets(t *testing.T) {
	slow := func(f func(*FirmwareTiming)) FirmwareTiming {
		fw := DefaultFirmwareTiming()
		f(&fw)
		return fw
	}
	tests := []struct {
		name string
		cfg  DeviceConfig
		msg  string
	}{
		{"boot past the routing-id budget", DeviceConfig{DeviceID: 0x7364, Firmware: slow(func(f *FirmwareTiming) { f.Boot = 400 * time.Second })}, "Could not retrieve device index"},
		{"routing id 64", DeviceConfig{DeviceID: 0x7164, RoutingID: 64}, "Invalid device index 64"},
		{"Trn2 device reset past the status reads", DeviceConfig{DeviceID: 0x7364, Firmware: slow(func(f *FirmwareTiming) { f.DeviceReset = 2 * time.Second })}, "failed to complete"},
		{"Inf2 QEMU reset past its five reads", DeviceConfig{DeviceID: 0x7264, Revision: hwarch.RevisionQEMU, Firmware: slow(func(f *FirmwareTiming) { f.QEMUReset = 12 * time.Second })}, "failed to complete"},
		{"Trn2 acknowledgement past 480 s", DeviceConfig{DeviceID: 0x7364, Revision: hwarch.RevisionEMU, Firmware: slow(func(f *FirmwareTiming) { f.ResetAck = 500 * time.Second })}, "not acknowledged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := replayDriver(t, tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}
