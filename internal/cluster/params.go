package cluster

import (
	"errors"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// DefaultParams returns the fabric parameters of a generation's first
// device (DefaultParamsOf with device 0).
func DefaultParams(g hwarch.Generation, t *arch.Tables) fabric.Params {
	return DefaultParamsOf(g, 0, t)
}

// DefaultParamsOf returns the fabric parameters of the device of PCI
// device id dev of generation g (0: the generation's first;
// fabric.DefaultParamsOf: an Inf2's ring links are not a Trn1's) with the
// runtime's fabric constants: get_max_links_per_pod_port (0 where the
// generation's leaf aborts) and get_mesh_max_folds.
func DefaultParamsOf(g hwarch.Generation, dev uint16, t *arch.Tables) fabric.Params {
	links, _ := t.Soc.MaxLinksPerPodPort()
	return fabric.DefaultParamsOf(g, dev).WithSoc(links, t.Soc.MeshMaxFolds())
}

// LinkTiming is an override of every link's timing, whatever its kind (the
// torus, Z-ring, ring, in-server, inter-server, inter-rack, Trn3 Gen2
// second-level and α-β links of fabric.Params): the command line's
// --link-latency and --link-bw and a scenario's
// system.timing.link_latency_ns and link_bw_gbs. Each link of the system
// built then has exactly that latency and bandwidth (a Gen2 device's two
// second-level links each the bandwidth given, not half of it). A field
// not Set keeps each kind's own value.
type LinkTiming struct {
	Latency      uint64 // picoseconds
	SetLatency   bool
	Bandwidth    uint64 // bytes per second
	SetBandwidth bool
}

// Apply sets the overrides on every link kind of p.
func (o LinkTiming) Apply(p *fabric.Params) {
	for _, l := range []*fabric.LinkParams{&p.XY, &p.Z, &p.Ring, &p.InServer, &p.InterServer, &p.Link, &p.InterRack, &p.SecondLevel} {
		if o.SetLatency {
			l.Latency = o.Latency
		}
		if o.SetBandwidth {
			l.Bandwidth = o.Bandwidth
		}
	}
}

// ErrIdealNeedsLinks is returned by RunParams for the parity mode without
// both link overrides: its α-β model needs B and α.
var ErrIdealNeedsLinks = errors.New("ideal endpoints (the α-β parity mode) need the link bandwidth and latency, the model's B and α")

// RunParams are the fabric parameters a run of model m on devices of PCI
// device id dev of generation g (0: the generation's first) starts from,
// before its other overrides: with ideal endpoints IdealParams with lt's
// bandwidth and latency (both must be set), otherwise DefaultParamsOf with
// lt applied. The command line, scenarios and sweep grids all build them
// so.
func RunParams(g hwarch.Generation, dev uint16, t *arch.Tables, m fabric.Model, ends fabric.Endpoints, lt LinkTiming) (fabric.Params, error) {
	if ends == fabric.EndpointsIdeal {
		if !lt.SetBandwidth || !lt.SetLatency {
			return fabric.Params{}, ErrIdealNeedsLinks
		}
		return IdealParams(g, t, m, lt.Bandwidth, lt.Latency), nil
	}
	p := DefaultParamsOf(g, dev, t)
	p.Model = m
	lt.Apply(&p)
	return p, nil
}
