package arch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnectedDevices(t *testing.T) {
	tests := []struct {
		n, i  int
		chain bool
		want  []int
	}{
		{16, 0, false, []int{12, 3, 4, 1}}, // driver-facts §6 / trainium-facts §4
		{16, 5, false, []int{1, 4, 9, 6}},  // trainium-facts §4
		{32, 16, false, []int{28, 19, 20, 17}},
		{12, 0, false, []int{11, 1}},
		{12, 11, false, []int{10, 0}},
		{6, 0, true, []int{1}},
		{6, 5, true, []int{4}},
		{6, 2, true, []int{1, 3}},
		{2, 0, false, []int{1}},
		{2, 1, false, []int{0}},
		{1, 0, false, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_of_%d_chain%v", tt.i, tt.n, tt.chain), func(t *testing.T) {
			got, err := ConnectedDevices(tt.n, tt.i, tt.chain)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := ConnectedDevices(4, 4, false)
	assert.Error(t, err)
}

func TestDeviceIndexOfRoutingID(t *testing.T) {
	for _, dev := range []uint16{DeviceTrn1, DeviceInf2, DeviceTrn2, DeviceTrn3, DeviceTrn3B} {
		seen := map[int]bool{}
		for rid := 0; rid < MaxNeuronDevices; rid++ {
			idx, err := DeviceIndexOfRoutingID(dev, rid)
			require.NoError(t, err)
			assert.False(t, seen[idx], "%#x rid %d: index %d twice", dev, rid, idx)
			seen[idx] = true
			back, err := RoutingIDOfDeviceIndex(dev, idx)
			require.NoError(t, err)
			assert.Equal(t, rid, back)
		}
	}
	idx, _ := DeviceIndexOfRoutingID(DeviceTrn1, 17)
	assert.Equal(t, 20, idx, "trn1 table [1] = 4, + 16")
	idx, _ = DeviceIndexOfRoutingID(DeviceTrn2, 1)
	assert.Equal(t, 3, idx)
	_, err := DeviceIndexOfRoutingID(DeviceTrn2, 64)
	assert.Error(t, err)
	_, err = DeviceIndexOfRoutingID(0x1234, 0)
	assert.ErrorIs(t, err, ErrUnknownDeviceID)
}
