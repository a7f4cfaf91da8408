package cluster

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestLinkTiming: an override reaches every link kind of fabric.Params —
// found by reflection, so a kind added later and missed by Apply fails
// here — and leaves what it does not set, and everything that is not a
// link, as it was.
func TestLinkTiming(t *testing.T) {
	base := DefaultParams(hwarch.Mariana, arch.MustFor(hwarch.Mariana, arch.Options{Switch: hwarch.SwitchV1}))
	lp := reflect.TypeFor[fabric.LinkParams]()
	tests := []struct {
		name string
		o    LinkTiming
	}{
		{"none", LinkTiming{Latency: 7, Bandwidth: 9}},
		{"latency", LinkTiming{Latency: 0, SetLatency: true}},
		{"bandwidth", LinkTiming{Bandwidth: 42e9, SetBandwidth: true}},
		{"both", LinkTiming{Latency: 123_500, SetLatency: true, Bandwidth: 17e9, SetBandwidth: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			tt.o.Apply(&p)
			got, was := reflect.ValueOf(&p).Elem(), reflect.ValueOf(&base).Elem()
			kinds := 0
			for i := range got.NumField() {
				f := got.Type().Field(i)
				if f.Type != lp {
					assert.Equal(t, was.Field(i).Interface(), got.Field(i).Interface(), "%s is not a link", f.Name)
					continue
				}
				kinds++
				l, b := got.Field(i).Interface().(fabric.LinkParams), was.Field(i).Interface().(fabric.LinkParams)
				want := b
				if tt.o.SetLatency {
					want.Latency = tt.o.Latency
				}
				if tt.o.SetBandwidth {
					want.Bandwidth = tt.o.Bandwidth
				}
				assert.Equal(t, want, l, "link kind %s", f.Name)
			}
			require.Equal(t, 8, kinds, "fabric.Params' link kinds")
		})
	}
}

// TestIdealParamsEveryLink: the parity mode's parameters give every link
// kind the one α and B (found by reflection, so a kind added later is
// covered; the Trn3 Gen1 inter-rack links were once left at their
// defaults).
func TestIdealParamsEveryLink(t *testing.T) {
	p := IdealParams(hwarch.Mariana, arch.MustFor(hwarch.Mariana, arch.Options{Switch: hwarch.SwitchV1}), fabric.Aware, 50<<30, 500_000)
	v := reflect.ValueOf(p)
	kinds := 0
	for i := range v.NumField() {
		if l, ok := v.Field(i).Interface().(fabric.LinkParams); ok {
			kinds++
			assert.Equal(t, fabric.LinkParams{Bandwidth: 50 << 30, Latency: 500_000}, l, v.Type().Field(i).Name)
		}
	}
	assert.Equal(t, 8, kinds)
	assert.Equal(t, fabric.Aware, p.Model)
}

// TestLinkTimingEveryBuiltLink: with the override, every link of every
// system of the catalogue, as the topology builds it, has exactly the B
// and α given — the two second-level links of a Trn3 Gen2 device too,
// which once got B/2 each (the builder split the inter-server bundle over
// them) — and without it the Gen2 second-level links keep their default,
// half the inter-server bundle each.
func TestLinkTimingEveryBuiltLink(t *testing.T) {
	const bw, alpha = 10e9, 700_000
	for _, spec := range fabric.Systems {
		t.Run(spec.Name, func(t *testing.T) {
			tables := arch.MustFor(spec.Generation, arch.Options{Switch: spec.Switch()})
			p, err := RunParams(spec.Generation, 0, tables, fabric.Aware, fabric.EndpointsReal,
				LinkTiming{Latency: alpha, SetLatency: true, Bandwidth: bw, SetBandwidth: true})
			require.NoError(t, err)
			topo, err := fabric.Build(spec.Kind, spec.Generation, spec.Devices, p)
			require.NoError(t, err)
			require.NotEmpty(t, topo.Links)
			for id, l := range topo.Links {
				require.Equal(t, fabric.LinkParams{Bandwidth: bw, Latency: alpha}, l.Params, "link %d (%s)", id, l.Group)
			}
		})
	}
	p := DefaultParams(hwarch.Mariana, arch.MustFor(hwarch.Mariana, arch.Options{Switch: hwarch.SwitchV1}))
	topo, err := fabric.Build(fabric.KindTrn3Gen2, hwarch.Mariana, 144, p)
	require.NoError(t, err)
	for _, l := range topo.Links {
		if l.Group == "inter-server" {
			require.EqualValues(t, 80e9, l.Params.Bandwidth, "half the 160 GB/s inter-server bundle to each second-level switch")
		}
	}
}

// TestRunParams: real endpoints are DefaultParams in the model with the
// link overrides applied; ideal endpoints are IdealParams with the
// overrides' B and α, and are refused without either.
func TestRunParams(t *testing.T) {
	tables := arch.MustFor(hwarch.Cayman, arch.Options{})
	lt := LinkTiming{Latency: 700_000, SetLatency: true, Bandwidth: 40e9, SetBandwidth: true}
	got, err := RunParams(hwarch.Cayman, 0, tables, fabric.Free, fabric.EndpointsReal, lt)
	require.NoError(t, err)
	want := DefaultParams(hwarch.Cayman, tables)
	want.Model = fabric.Free
	lt.Apply(&want)
	assert.Equal(t, want, got)

	got, err = RunParams(hwarch.Cayman, 0, tables, fabric.Aware, fabric.EndpointsIdeal, lt)
	require.NoError(t, err)
	assert.Equal(t, IdealParams(hwarch.Cayman, tables, fabric.Aware, 40e9, 700_000), got)

	for _, half := range []LinkTiming{{Latency: 1, SetLatency: true}, {Bandwidth: 1, SetBandwidth: true}, {}} {
		_, err := RunParams(hwarch.Cayman, 0, tables, fabric.Aware, fabric.EndpointsIdeal, half)
		assert.ErrorIs(t, err, ErrIdealNeedsLinks, "%+v", half)
	}
}

// TestRunParamsDevice: RunParams takes the device's own direct links — an
// Inf2's ring is 96 GiB/s, a Trn1's 96 GB/s, a Trn2's 256 GB/s, a Trn3's
// 128 GB/s — and a cluster built without parameters takes its DeviceID's.
func TestRunParamsDevice(t *testing.T) {
	for _, tc := range []struct {
		g   hwarch.Generation
		dev uint16
		bw  uint64
	}{
		{hwarch.Sunda, hwarch.DeviceTrn1, 96e9},
		{hwarch.Sunda, hwarch.DeviceInf2, 96 << 30},
		{hwarch.Cayman, 0, 256e9},
		{hwarch.Mariana, 0, 128e9},
	} {
		tables := arch.MustFor(tc.g, arch.Options{})
		p, err := RunParams(tc.g, tc.dev, tables, fabric.Aware, fabric.EndpointsReal, LinkTiming{})
		require.NoError(t, err)
		assert.Equal(t, tc.bw, p.Ring.Bandwidth, "%s %#x ring", tc.g, tc.dev)
		assert.Equal(t, tc.bw, p.XY.Bandwidth, "%s %#x xy", tc.g, tc.dev)
		c, err := New(Config{Generation: tc.g, DeviceID: tc.dev, Devices: 4, Kind: fabric.KindRing, TimingOnly: true})
		require.NoError(t, err)
		for _, l := range c.System.Topology().Links {
			assert.Equal(t, tc.bw, l.Params.Bandwidth, "%s %#x: cluster's ring link", tc.g, tc.dev)
		}
	}
}
