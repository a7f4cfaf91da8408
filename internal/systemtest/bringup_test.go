package systemtest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// backend opens a runtime view of a simulated device: the device itself
// (in-process) or a client of a server that exports it (remote).
type backend struct {
	name string
	open func(t testing.TB, d *sim.Device) ndl.Device
}

var revisions = []struct {
	name string
	rev  uint8
}{{"silicon", 0x00}, {"emu", hwarch.RevisionEMU}, {"qemu", hwarch.RevisionQEMU}}

func newDevice(t testing.TB, g hwarch.Generation, rev uint8, rid uint32) *sim.Device {
	t.Helper()
	d, err := sim.NewDevice(sim.DeviceConfig{Generation: g, Revision: rev, RoutingID: rid})
	require.NoError(t, err)
	return d
}

// forEachSystem runs fn for every backend × generation × revision.
func forEachSystem(t *testing.T, fn func(t *testing.T, g hwarch.Generation, rev uint8, simDev *sim.Device, dev ndl.Device)) {
	for _, be := range backends() {
		for _, g := range hwarch.Generations() {
			for _, r := range revisions {
				t.Run(fmt.Sprintf("%s/%s/%s", be.name, g, r.name), func(t *testing.T) {
					simDev := newDevice(t, g, r.rev, 5)
					fn(t, g, r.rev, simDev, be.open(t, simDev))
				})
			}
		}
	}
}

// TestBringUpEveryGenerationAndRevision is the acceptance suite of the
// device seam: the same bring-up and csr checks on every generation ×
// revision, on the in-process and the remote backend.
func TestBringUpEveryGenerationAndRevision(t *testing.T) {
	forEachSystem(t, func(t *testing.T, g hwarch.Generation, rev uint8, simDev *sim.Device, dev ndl.Device) {
		geo := hwarch.MustGeometry(g)
		mode := hwarch.ModeOf(rev)
		regBAR := geo.BAR0.RegisterBAR(mode)

		// Before the firmware is up, registers read 0xDEADBEEF.
		v, err := dev.Read32(regBAR, geo.BAR0.MiscRAM+hwarch.MiscRoutingID)
		require.NoError(t, err)
		assert.Equal(t, hwarch.NotReady, v, "0xDEADBEEF before ready")

		d, err := bringup.BringUp(dev, bringup.Options{Switch: hwarch.SwitchV1})
		require.NoError(t, err)
		assert.Equal(t, g, d.Generation)
		assert.Equal(t, mode, d.Mode)
		assert.Positive(t, d.ReadyRetries, "bring-up waited through 0xDEADBEEF")
		assert.Equal(t, uint32(5), d.RoutingID, "routing id read")
		require.NotNil(t, d.Tables, "tables selected")
		assert.Equal(t, g, d.Tables.Generation)
		assert.Equal(t, sim.PhaseReady, simDev.Phase())

		// V2 and V3 under QEMU carry their registers on BAR2 (driver
		// 2.24.7.0: v2/neuron_dhal_v2.c 1792, v3/neuron_dhal_v3.c 2188).
		if g != hwarch.Mariana && mode == hwarch.ModeQEMU {
			assert.Equal(t, hwarch.BAR2, d.Policy.RegisterBAR)
			_, err := dev.Read32(hwarch.BAR0, 0)
			assert.ErrorIs(t, err, ndl.ErrBadBAR)
		} else {
			assert.Equal(t, hwarch.BAR0, d.Policy.RegisterBAR)
		}

		st := simDev.Stats()
		switch {
		case g == hwarch.Mariana && mode == hwarch.ModeEMU:
			assert.False(t, d.Reset, "V4 EMU skips reset")
			assert.Zero(t, st.ResetRequests)
		case mode == hwarch.ModeQEMU && g != hwarch.Sunda:
			assert.True(t, d.Reset)
			assert.Equal(t, uint64(1), st.DeviceResets, "the QEMU register resets the whole device")
			assert.Equal(t, uint64(1), st.ResetRequests, "no mailbox reset on V3/V4 QEMU")
		default:
			assert.True(t, d.Reset, "reset completes")
			assert.Equal(t, uint64(1), st.DeviceResets)
		}

		// HBM sizing: BAR4 / 4 per channel on V3/V4 under QEMU.
		for ch, b := range d.HBMChannelBytes {
			if mode == hwarch.ModeQEMU && g != hwarch.Sunda {
				assert.Equal(t, dev.BARSize(hwarch.BAR4)/4, b)
			} else {
				assert.Equal(t, geo.HBM[ch].ActiveSize, b)
			}
		}

		checkCSR(t, d, simDev)
	})
}

// checkCSR runs the csr_* checks on a brought-up device: every registered
// window's last word is reachable and end−3 is refused, a straddling batch
// changes nothing, semaphores behave per NC, TOP_SPs are reachable.
func checkCSR(t *testing.T, d *bringup.Device, simDev *sim.Device) {
	t.Helper()
	l := d.CSR
	for _, r := range d.Table.Regions() {
		_, err := l.Read(r.End - 4)
		require.NoError(t, err, "csr_read of %s end-4", r.Name)
		_, err = l.Read(r.End - 3)
		var cerr *csr.Error
		require.ErrorAs(t, err, &cerr, "csr_read of %s end-3", r.Name)
		assert.Equal(t, -2, cerr.Status)
		assert.True(t, errors.Is(err, csr.ErrInvalidAddress) || errors.Is(err, csr.ErrRegionNotFound), "%s end-3: %v", r.Name, err)
	}
	assert.Zero(t, simDev.Stats().UnmappedReads, "every window the runtime registers is decoded by the device")

	// A two-word batch that straddles two adjacent windows fails whole.
	regions := d.Table.Regions()
	for i := 0; i+1 < len(regions); i++ {
		a, b := regions[i], regions[i+1]
		if a.End != b.Start {
			continue
		}
		before := simDev.Stats().Writes
		err := l.WriteArray([]uint64{a.End - 4, b.Start}, []uint32{0x11, 0x22})
		require.ErrorIs(t, err, csr.ErrInvalidAddress, "%s|%s", a.Name, b.Name)
		assert.Equal(t, before, simDev.Stats().Writes, "the straddling batch wrote nothing")
		break
	}

	geo := d.Geometry
	for nc := 0; nc < geo.NeuronCores; nc++ {
		base := d.VA(geo.BAR0.TPBWindow(nc))
		sem := func(bank uint64, i int) uint64 { return base + bank + 4*uint64(i) }
		i := 3 + nc
		require.NoError(t, l.Write(sem(geo.BAR0.SemSetOffset, i), 10))
		require.NoError(t, l.Write(sem(geo.BAR0.SemIncrOffset, i), 5))
		require.NoError(t, l.Write(sem(geo.BAR0.SemDecrOffset, i), 20))
		v, err := l.Read(sem(geo.BAR0.SemReadOffset, i))
		require.NoError(t, err)
		assert.Equal(t, int32(-5), int32(v), "NC %d semaphore %d: 10 + 5 - 20", nc, i)
		require.NoError(t, l.Write(sem(geo.BAR0.EventsOffset, i), 1))
		v, err = l.Read(sem(geo.BAR0.EventsOffset, i))
		require.NoError(t, err)
		assert.Equal(t, uint32(1), v, "NC %d event %d", nc, i)
	}
	for ts := 0; ts < geo.TopSPs; ts++ {
		set := d.VA(geo.BAR0.TopSPWindow(ts)) + 0x1400
		require.NoError(t, l.Write(set, uint32(100+ts)), "TOP_SP %d", ts)
		v, err := l.Read(set - 0x400)
		require.NoError(t, err)
		assert.Equal(t, uint32(100+ts), v, "TOP_SP %d semaphore 0", ts)
	}
}
