package systemtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/sim"
)

func deviceWith(t *testing.T, cfg sim.DeviceConfig) *sim.Device {
	t.Helper()
	if cfg.Generation == hwarch.Invalid {
		cfg.Generation = hwarch.Cayman
	}
	d, err := sim.NewDevice(cfg)
	require.NoError(t, err)
	return d
}

func slowFirmware(mod func(*sim.FirmwareTiming)) sim.FirmwareTiming {
	fw := sim.DefaultFirmwareTiming()
	mod(&fw)
	return fw
}

func TestBringUpFailures(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.DeviceConfig
		want error
		text string
	}{
		{"firmware never boots", sim.DeviceConfig{Firmware: slowFirmware(func(f *sim.FirmwareTiming) { f.Boot = time.Hour })},
			bringup.ErrNotReady, "after 30 retries"},
		{"reset never acknowledged", sim.DeviceConfig{Firmware: slowFirmware(func(f *sim.FirmwareTiming) { f.ResetAck = time.Hour })},
			bringup.ErrResetTimeout, "not acknowledged"},
		{"reset never finishes", sim.DeviceConfig{Firmware: slowFirmware(func(f *sim.FirmwareTiming) { f.DeviceReset = time.Hour })},
			bringup.ErrResetTimeout, "bit 3 after 5 reads"},
		{"QEMU reset never finishes", sim.DeviceConfig{Generation: hwarch.Sunda, Revision: hwarch.RevisionQEMU,
			Firmware: slowFirmware(func(f *sim.FirmwareTiming) { f.QEMUReset = time.Hour })},
			bringup.ErrResetTimeout, "QEMU reset register"},
		{"routing id out of range", sim.DeviceConfig{RoutingID: 70}, bringup.ErrRoutingID, "70"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deviceWith(t, tt.cfg)
			_, err := bringup.BringUp(d, bringup.Options{})
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.text)
		})
	}
}

// A device not acknowledged within the re-trigger time is triggered again,
// as the driver's reset worker does.
func TestBringUpRetriggersLateReset(t *testing.T) {
	d := deviceWith(t, sim.DeviceConfig{Firmware: slowFirmware(func(f *sim.FirmwareTiming) { f.ResetAck = 45 * time.Second })})
	up, err := bringup.BringUp(d, bringup.Options{})
	require.NoError(t, err)
	assert.Contains(t, fmt.Sprint(up.Steps), "2 triggers")
	assert.Equal(t, uint64(2), d.Stats().ResetRequests, "the second trigger joined the running reset")
	assert.Equal(t, uint64(1), d.Stats().DeviceResets)
}

func TestTPBResetThroughTheRuntime(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			d := deviceWith(t, sim.DeviceConfig{Generation: g})
			up, err := bringup.BringUp(d, bringup.Options{})
			require.NoError(t, err)
			geo := up.Geometry
			set := func(nc int) uint64 { return up.VA(geo.BAR0.TPBWindow(nc) + geo.BAR0.SemSetOffset) }
			for nc := 0; nc < geo.NeuronCores; nc++ {
				require.NoError(t, up.CSR.Write(set(nc), 77))
			}
			require.NoError(t, up.ResetTPBs(1))
			assert.Equal(t, uint64(1), d.Stats().TPBResets)
			for nc := 0; nc < geo.NeuronCores; nc++ {
				v, err := up.CSR.Read(set(nc) - 0x400)
				require.NoError(t, err)
				want := uint32(77)
				if nc == 0 {
					want = 0
				}
				assert.Equal(t, want, v, "NC %d", nc)
			}
			assert.Error(t, up.ResetTPBs(0))
			assert.Error(t, up.ResetTPBs(1<<geo.NeuronCores))
		})
	}
}

// The runtime's region table holds 672 entries: exactly 16 V3/V4 devices of
// 42 windows. A 17th device is refused whole.
func TestRegionTableHoldsSixteenBigChips(t *testing.T) {
	table := csr.NewTable(0)
	var dispatch arch.Dispatch
	for rid := 0; rid < 16; rid++ {
		d := deviceWith(t, sim.DeviceConfig{Generation: hwarch.Mariana, RoutingID: uint32(rid), Ready: true})
		_, err := bringup.BringUp(d, bringup.Options{Table: table, Dispatch: &dispatch, NoReset: true})
		require.NoError(t, err, "device %d", rid)
	}
	require.Len(t, table.Regions(), csr.DefaultTableSize)
	d := deviceWith(t, sim.DeviceConfig{Generation: hwarch.Mariana, RoutingID: 16, Ready: true})
	_, err := bringup.BringUp(d, bringup.Options{Table: table, Dispatch: &dispatch, NoReset: true})
	require.ErrorIs(t, err, csr.ErrTableFull)
	assert.Len(t, table.Regions(), csr.DefaultTableSize, "nothing of the 17th device stays registered")

	// One runtime, one chip type.
	v2 := deviceWith(t, sim.DeviceConfig{Generation: hwarch.Sunda, Ready: true})
	_, err = bringup.BringUp(v2, bringup.Options{Dispatch: &dispatch, NoReset: true})
	require.ErrorIs(t, err, arch.ErrAlreadySelected)
}

// smallBAR hides most of the register BAR.
type smallBAR struct{ *sim.Device }

func (s smallBAR) BARSize(int) uint64 { return 1 << 20 }

func TestBringUpRefusesSmallBAR(t *testing.T) {
	_, err := bringup.BringUp(smallBAR{deviceWith(t, sim.DeviceConfig{})}, bringup.Options{})
	require.ErrorIs(t, err, bringup.ErrSmallBAR)
}
