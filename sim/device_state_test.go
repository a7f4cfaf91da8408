package sim

import (
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// continueRun drives a device through a fixed sequence and records what it
// sees: the reset's handshake, semaphores and time.
func continueRun(t *testing.T, d *Device) []uint32 {
	t.Helper()
	geo := d.Geometry()
	misc := geo.BAR0.MiscRAM
	var seen []uint32
	for i := 0; i < 40; i++ {
		v, err := d.Read32(d.RegisterBAR(), misc+hwarch.MiscFWStatus)
		require.NoError(t, err)
		seen = append(seen, v)
		v, err = d.Read32(d.RegisterBAR(), geo.BAR0.TPBWindow(1)+geo.BAR0.SemReadOffset)
		require.NoError(t, err)
		seen = append(seen, v)
		require.NoError(t, d.Write32(d.RegisterBAR(), geo.BAR0.TPBWindow(0)+geo.BAR0.SemIncrOffset, 1))
		require.NoError(t, d.Sleep(10*time.Millisecond))
	}
	seen = append(seen, uint32(d.Now()/Microsecond))
	return seen
}

func TestSnapshotRestoreContinuesExactly(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			d, err := NewDevice(DeviceConfig{Generation: g, RoutingID: 2})
			require.NoError(t, err)
			require.NoError(t, d.Sleep(time.Second))
			geo := d.Geometry()
			bar := d.RegisterBAR()
			require.NoError(t, d.Write32(bar, geo.BAR0.TPBWindow(1)+geo.BAR0.SemSetOffset, 99))
			require.NoError(t, d.Write32(hwarch.BAR4, 0x1000, 0xABCD))
			// Start a TPB reset of NC 1 and snapshot in the middle of it.
			require.NoError(t, d.Write32(bar, geo.BAR0.MiscRAM+hwarch.MiscResetTPBMap, geo.TPBResetMap(2)))
			require.NoError(t, d.Write32(bar, geo.BAR0.MiscRAM+hwarch.MiscResetRequest, hwarch.ResetTypeTPB))
			require.NoError(t, d.Write32(bar, geo.BAR0.MiscRAM+hwarch.MiscTrigger, 1))
			snap := d.Snapshot()

			want := continueRun(t, d)
			restored, err := NewDeviceFromSnapshot(snap)
			require.NoError(t, err)
			assert.Equal(t, want, continueRun(t, restored), "restored run equals the uninterrupted one")
			v, err := restored.Read32(hwarch.BAR4, 0x1000)
			require.NoError(t, err)
			assert.Equal(t, uint32(0xABCD), v)

			// Restore in place rewinds the original device.
			require.NoError(t, d.Restore(snap))
			assert.Equal(t, want, continueRun(t, d))
		})
	}
}

func TestSnapshotRestoreRefusesBadState(t *testing.T) {
	d, err := NewDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	geo := d.Geometry()
	require.NoError(t, d.Write32(0, geo.BAR0.TPBWindow(0)+geo.BAR0.SemSetOffset, 5))
	good := d.Snapshot()
	tests := []struct {
		name    string
		corrupt func(s *DeviceSnapshot)
	}{
		{"too few NCs", func(s *DeviceSnapshot) { s.State.NCSync = s.State.NCSync[:2] }},
		{"too many TOP_SPs", func(s *DeviceSnapshot) { s.State.TopSPSync = append(s.State.TopSPSync, s.State.TopSPSync[0]) }},
		{"bad phase", func(s *DeviceSnapshot) { s.State.Phase = 9 }},
		{"event of 2", func(s *DeviceSnapshot) { s.State.NCSync[0].Events[3] = 2 }},
		{"unknown handler", func(s *DeviceSnapshot) {
			s.Engine.Queue = append(s.Engine.Queue, Event{At: s.Engine.Now, Handler: 77})
			s.Engine.NextSeq++
		}},
		{"page outside memory", func(s *DeviceSnapshot) { s.HBM.Pages[1<<40] = &Page{} }},
		{"bad config", func(s *DeviceSnapshot) { s.Config.Generation = 9 }},
		// Issue 13, items 7 and 12.
		{"clock 2^64-1", func(s *DeviceSnapshot) { s.Engine.Now = math.MaxUint64 }},
		{"reset until 2^64-1", func(s *DeviceSnapshot) { s.State.Reset = ResetState{Active: true, Until: math.MaxUint64} }},
		{"details of no reset", func(s *DeviceSnapshot) { s.State.Reset = ResetState{Acked: true} }},
		{"device-reset phase without a reset", func(s *DeviceSnapshot) { s.State.Phase = PhaseDeviceReset }},
		{"DMA engine state 7", func(s *DeviceSnapshot) { s.DMA.Engines[1].State = 7 }},
		{"DMA HostBandwidth 0", func(s *DeviceSnapshot) { s.Config.DMA.HostBandwidth = 0 }},
		{"TPB engine end 2^64-1", func(s *DeviceSnapshot) { s.Cores[1].Engines[0].End = math.MaxUint64 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := d.Snapshot()
			s := d.Snapshot()
			s.HBM.Pages = map[uint64]*Page{}
			tt.corrupt(&s)
			_, err := NewDeviceFromSnapshot(s)
			require.ErrorIs(t, err, ErrInvalidState)
			if s.Config == d.Config() {
				require.ErrorIs(t, d.Restore(s), ErrInvalidState)
			}
			after := d.Snapshot()
			v, err := d.Read32(0, geo.BAR0.TPBWindow(0)+geo.BAR0.SemReadOffset)
			require.NoError(t, err)
			assert.Equal(t, uint32(5), v, "a refused restore leaves the device alone")
			assert.Equal(t, before.Engine, after.Engine, "the events are left alone")
			assert.Equal(t, before.DMA, after.DMA, "the DMA state is left alone")
			assert.Equal(t, before.Cores, after.Cores, "the cores are left alone")
		})
	}
	other, err := NewDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true, RoutingID: 1})
	require.NoError(t, err)
	require.ErrorIs(t, other.Restore(good), ErrInvalidState, "another device's snapshot")
}

// TestSnapshotCarriesNoWiring: a device's configuration, which its snapshot
// carries, is a plain value: no pointer, interface, map, slice, function or
// channel anywhere in it, so no host port, engine or lock can travel inside a
// snapshot (issue 15 item 6: DeviceConfig held Host, Engine and Lock). A
// device wired to a system's engine says so in its snapshot, which is then
// refused alone.
func TestSnapshotCarriesNoWiring(t *testing.T) {
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		switch ty.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.UnsafePointer:
			t.Errorf("%s is a %s: live wiring, not configuration", path, ty.Kind())
		case reflect.Struct:
			for i := range ty.NumField() {
				walk(path+"."+ty.Field(i).Name, ty.Field(i).Type)
			}
		case reflect.Array:
			walk(path+"[]", ty.Elem())
		}
	}
	walk("DeviceSnapshot.Config", reflect.TypeFor[DeviceConfig]())

	e, mu := NewEngine(), new(sync.Mutex)
	d, err := NewWiredDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true}, Wiring{Engine: e, Lock: mu})
	require.NoError(t, err)
	assert.True(t, d.InSystem())
	s := d.Snapshot()
	assert.True(t, s.System)
	_, err = NewDeviceFromSnapshot(s)
	require.ErrorIs(t, err, ErrSystemDevice)
	require.ErrorIs(t, d.Restore(s), ErrSystemDevice)

	alone, err := NewDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	assert.False(t, alone.InSystem())
	s = alone.Snapshot()
	assert.False(t, s.System)
	_, err = NewWiredDeviceFromSnapshot(s, Wiring{Engine: e, Lock: mu})
	require.ErrorIs(t, err, ErrSystemDevice, "a device of a system is built by its system")
}
