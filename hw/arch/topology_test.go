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

// TestRingNeighboursAnyLength: a ring or chain of a multiple of 16 devices
// is still a ring or chain — the previous and next device — not the
// torus table ConnectedDevices gives for such counts (issue 13, item 1).
func TestRingNeighboursAnyLength(t *testing.T) {
	for _, n := range []int{1, 2, 3, 15, 16, 17, 32, 48, 64} {
		for _, chain := range []bool{false, true} {
			links := 0
			for i := range n {
				got, err := RingNeighbours(n, i, chain)
				require.NoError(t, err)
				var want []int
				switch {
				case chain:
					if i > 0 {
						want = append(want, i-1)
					}
					if i < n-1 {
						want = append(want, i+1)
					}
				case n == 2:
					want = []int{1 - i}
				case n > 2:
					want = []int{(i + n - 1) % n, (i + 1) % n}
				}
				assert.Equal(t, want, got, "device %d of %d, chain %v", i, n, chain)
				links += len(got)
			}
			want := 2 * n
			switch {
			case n == 1:
				want = 0
			case chain || n == 2:
				want = 2 * (n - 1)
			}
			assert.Equal(t, want, links, "%d devices, chain %v: directed links", n, chain)
		}
	}
	for _, bad := range [][2]int{{0, 0}, {4, 4}, {4, -1}} {
		_, err := RingNeighbours(bad[0], bad[1], false)
		assert.Error(t, err)
	}
	assert.True(t, ChainTable(6), "inf2.24xl: a chain")
	assert.False(t, ChainTable(12), "inf2.48xl: a ring")
	_, err := TorusNeighbours(12, 0)
	assert.Error(t, err, "a torus needs a multiple of 16 devices")
	nb, err := TorusNeighbours(16, 0)
	require.NoError(t, err)
	assert.Equal(t, []int{12, 3, 4, 1}, nb)
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

// TestWhatIfRoutingID (issue 16): in a what-if system the first 64 devices
// keep the driver's routing ids and every device past them has its index
// (its fabric-window device number) as routing id; the two maps are
// inverse up to MaxFabricDevices and refuse what the fabric window cannot
// name.
func TestWhatIfRoutingID(t *testing.T) {
	for _, dev := range []uint16{DeviceTrn1, DeviceInf2, DeviceTrn2, DeviceTrn3} {
		for _, idx := range []int{0, 1, 17, 63, 64, 65, 143, 1023, 4095, MaxFabricDevices - 1} {
			rid, err := WhatIfRoutingID(dev, idx)
			require.NoError(t, err, "%#x index %d", dev, idx)
			if idx < MaxNeuronDevices {
				want, err := RoutingIDOfDeviceIndex(dev, idx)
				require.NoError(t, err)
				assert.Equal(t, want, rid, "%#x index %d: the driver's routing id", dev, idx)
			} else {
				assert.Equal(t, idx, rid, "%#x index %d: past 64, the index", dev, idx)
			}
			back, err := WhatIfDeviceIndex(dev, rid)
			require.NoError(t, err)
			assert.Equal(t, idx, back)
		}
		_, err := WhatIfRoutingID(dev, MaxFabricDevices)
		assert.ErrorIs(t, err, ErrFabricAddress)
		_, err = WhatIfDeviceIndex(dev, MaxFabricDevices)
		assert.ErrorIs(t, err, ErrFabricAddress)
		_, err = RoutingIDOfDeviceIndex(dev, 64)
		assert.ErrorContains(t, err, "WhatIfRoutingID", "the driver's map refuses index 64 and names the what-if one")
	}
}
