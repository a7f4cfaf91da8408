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
