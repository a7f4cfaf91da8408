package sim

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestAdvanceTo(t *testing.T) {
	boot := FromDuration(DefaultFirmwareTiming().Boot)
	tests := []struct {
		name    string
		pre     Time // advance to this first
		to      Time
		want    Time
		phase   Phase
		wantErr error
	}{
		{"before boot", 0, boot - 1, boot - 1, PhaseBooting, nil},
		{"boot falls due", 0, boot, boot, PhaseReady, nil},
		{"far past boot", 0, 10 * boot, 10 * boot, PhaseReady, nil},
		{"backwards is a no-op", 2 * boot, boot / 2, 2 * boot, PhaseReady, nil},
		{"same time", boot / 2, boot / 2, boot / 2, PhaseBooting, nil},
		{"the latest time", 0, MaxTime, MaxTime, PhaseReady, nil},
		{"past the latest time", boot / 2, MaxTime + 1, boot / 2, PhaseBooting, ErrTimeOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDevice(DeviceConfig{Generation: hwarch.Cayman})
			require.NoError(t, err)
			if tt.pre > 0 {
				_, err := d.AdvanceTo(tt.pre)
				require.NoError(t, err)
			}
			now, err := d.AdvanceTo(tt.to)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, now)
			assert.Equal(t, tt.want, d.Now())
			assert.Equal(t, tt.phase, d.Phase())
		})
	}
}

// TestAdvanceToSystem: the devices of a system share one clock, so moving
// one moves all, and each one's boot event runs.
func TestAdvanceToSystem(t *testing.T) {
	e, mu := NewEngine(), new(sync.Mutex)
	var devs []*Device
	for i := range 2 {
		d, err := NewWiredDevice(DeviceConfig{Generation: hwarch.Cayman, Name: []string{"a", "b"}[i], RoutingID: uint32(i)}, Wiring{Engine: e, Lock: mu})
		require.NoError(t, err)
		devs = append(devs, d)
	}
	_, err := devs[0].AdvanceTo(FromDuration(time.Second))
	require.NoError(t, err)
	for _, d := range devs {
		assert.Equal(t, FromDuration(time.Second), d.Now())
		assert.Equal(t, PhaseReady, d.Phase())
	}
	_, err = devs[1].AdvanceTo(MaxTime + 1)
	assert.True(t, errors.Is(err, ErrTimeOverflow))
}

// busyDevice returns a device of generation g in the middle of work: booted,
// a semaphore and a word of device memory written, a TPB reset of
// NeuronCore 1 started, and a chain of 200 test events, each at 1 ms after
// the last and with a second one at its own time, that note when they ran
// in *ran.
func busyDevice(t *testing.T, g hwarch.Generation, ran *[]Time) *Device {
	t.Helper()
	d, err := NewDevice(DeviceConfig{Generation: g, RoutingID: 2})
	require.NoError(t, err)
	require.NoError(t, d.Sleep(time.Second))
	geo, bar := d.Geometry(), d.RegisterBAR()
	require.NoError(t, d.Write32(bar, geo.BAR0.TPBWindow(1)+geo.BAR0.SemSetOffset, 99))
	require.NoError(t, d.Write32(hwarch.BAR4, 0x1000, 0xABCD))
	require.NoError(t, d.Write32(bar, geo.BAR0.MiscRAM+hwarch.MiscResetTPBMap, geo.TPBResetMap(2)))
	require.NoError(t, d.Write32(bar, geo.BAR0.MiscRAM+hwarch.MiscResetRequest, hwarch.ResetTypeTPB))
	require.NoError(t, d.Write32(bar, geo.BAR0.MiscRAM+hwarch.MiscTrigger, 1))
	var tick HandlerID
	tick, err = d.engine.Register("test.tick", HandlerFunc(func(e *Engine, n uint64) {
		*ran = append(*ran, e.Now()|Time(n&1)<<62)
		if n%2 == 0 && n < 400 {
			require.NoError(t, e.After(0, tick, n+1))
			require.NoError(t, e.After(Millisecond, tick, n+2))
		}
	}))
	require.NoError(t, err)
	require.NoError(t, d.engine.After(0, tick, 0))
	return d
}

// TestSleepUntilInSlicesEqualsOneSleep: running the clock to a time in
// slices of one event (the remote server's SLEEP, which lets other clients
// in between them) runs the same events and leaves the device in the same
// state, clock included, as one Sleep of the whole time; and the device
// behaves the same afterwards.
func TestSleepUntilInSlicesEqualsOneSleep(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			const dur = 3 * time.Second
			var ranWhole, ranSliced []Time
			whole, sliced := busyDevice(t, g, &ranWhole), busyDevice(t, g, &ranSliced)
			require.Equal(t, whole.Snapshot(), sliced.Snapshot(), "the same start")

			require.NoError(t, whole.Sleep(dur))
			start, err := sliced.ClockPS()
			require.NoError(t, err)
			to := start + uint64(FromDuration(dur))
			slices := 0
			for done := false; !done; slices++ {
				require.Less(t, slices, 1_000_000, "the slices end")
				done, err = sliced.SleepUntil(to, 1)
				require.NoError(t, err)
			}
			assert.Greater(t, slices, 400, "one event a slice")
			assert.Len(t, ranSliced, 401)
			assert.Equal(t, ranWhole, ranSliced, "the same events at the same times, in the same order")
			assert.Equal(t, Time(to), sliced.Now())
			assert.Equal(t, whole.Snapshot(), sliced.Snapshot(), "the same state, clock and events")
			assert.Equal(t, continueRun(t, whole), continueRun(t, sliced), "and the same run after it")
		})
	}
}

// TestSleepUntilRefuses: a time past MaxTime, and a closed device, are
// refused without running anything; a time before the clock runs what is
// due now and leaves the clock alone.
func TestSleepUntilRefuses(t *testing.T) {
	var ran []Time
	d := busyDevice(t, hwarch.Cayman, &ran)
	before, pending := d.Now(), d.engine.Pending()
	_, err := d.SleepUntil(uint64(MaxTime)+1, 10)
	require.ErrorIs(t, err, ErrTimeOverflow)
	assert.Equal(t, before, d.Now())
	assert.Equal(t, pending, d.engine.Pending(), "nothing ran")

	done, err := d.SleepUntil(uint64(before)-1, 0)
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, before, d.Now(), "time never goes back")

	require.NoError(t, d.Close())
	_, err = d.SleepUntil(uint64(before)+1, 10)
	require.ErrorIs(t, err, hwarch.ErrDeviceClosed)
}
