package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// TestRingLinksPerProduct: the direct device-to-device links — a ring's,
// a chain's and the torus's XY links — take their device's own figure
// (trainium-facts §4, docs/fabric.md §Parameters): 96 GB/s on Trn1,
// 96 GiB/s on Inf2, 256 GB/s on Trn2 and 128 GB/s (chosen) on Trn3, both
// from DefaultParamsOf and from a system fabric.New builds with no
// parameters, whose device id picks them. Once every ring had Inf2's
// 96 GiB/s, whatever the generation.
func TestRingLinksPerProduct(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    hwarch.Generation
		dev  uint16
		bw   uint64
	}{
		{"trn1", hwarch.Sunda, hwarch.DeviceTrn1, 96e9},
		{"sunda-default-is-trn1", hwarch.Sunda, 0, 96e9},
		{"inf2", hwarch.Sunda, hwarch.DeviceInf2, 96 << 30},
		{"trn2", hwarch.Cayman, hwarch.DeviceTrn2, 256e9},
		{"cayman-default", hwarch.Cayman, 0, 256e9},
		{"trn3", hwarch.Mariana, hwarch.DeviceTrn3, 128e9},
		{"trn3-second-id", hwarch.Mariana, hwarch.DeviceTrn3B, 128e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParamsOf(tc.g, tc.dev)
			assert.Equal(t, tc.bw, p.Ring.Bandwidth, "ring")
			assert.Equal(t, tc.bw, p.XY.Bandwidth, "xy")
			assert.Equal(t, DirectLink(tc.g, tc.dev), p.Ring)
			for _, k := range []struct {
				kind Kind
				n    int
			}{{KindRing, 8}, {KindChain, 6}, {KindTorus2D, 16}} {
				s, err := New(Config{Generation: tc.g, DeviceID: tc.dev, Devices: k.n, Kind: k.kind, TimingOnly: true})
				require.NoError(t, err, k.kind)
				links := s.Topology().Links
				require.NotEmpty(t, links)
				for _, l := range links {
					assert.Equal(t, tc.bw, l.Params.Bandwidth, "%s link %d→%d", k.kind, l.From, l.To)
				}
			}
		})
	}
	assert.Equal(t, DefaultParamsOf(hwarch.Sunda, 0), DefaultParams(hwarch.Sunda), "DefaultParams is the generation's first device's")
}
