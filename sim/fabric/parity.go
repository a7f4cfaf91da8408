package fabric

import (
	"errors"
	"fmt"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// Endpoints says what a system's devices add to the network's time
// (docs/fabric.md §Parity mode).
type Endpoints uint8

// The endpoint modes.
const (
	// EndpointsReal is the default: DMA engines with their bandwidth and
	// fixed cost, writes in chunks of ChunkBytes, the endpoint and switch
	// delays of Params.
	EndpointsReal Endpoints = iota
	// EndpointsIdeal is the α-β parity mode: everything that is not
	// network is removed, so the models reduce to the analytical ones of
	// collective-communication research. DMA engines take no time (no fixed
	// cost, unbounded engine, HBM and host bandwidth: dma.Timing.Ideal), a
	// write is one chunk whatever its size, and there is no endpoint (δ) or
	// switch forwarding delay (Params.Validate refuses them): a write of m
	// bytes over h links of latency α and bandwidth B lands h·α + m/B after
	// it starts in the free model, h·(α + m/B) in the aware one. The
	// host's BAR accesses cost IdealMMIO.
	EndpointsIdeal
)

// String returns "real" or "ideal" ("endpoints(7)" for a value that is
// neither).
func (e Endpoints) String() string {
	switch e {
	case EndpointsReal:
		return "real"
	case EndpointsIdeal:
		return "ideal"
	}
	return fmt.Sprintf("endpoints(%d)", uint8(e))
}

// ErrUnknownEndpoints is returned (wrapped) by ParseEndpoints.
var ErrUnknownEndpoints = errors.New("unknown endpoint mode")

// ParseEndpoints reads "real" or "ideal", in any case (units.Word).
func ParseEndpoints(s string) (Endpoints, error) {
	switch units.Word(s) {
	case "real":
		return EndpointsReal, nil
	case "ideal":
		return EndpointsIdeal, nil
	}
	return 0, fmt.Errorf("%w %q: accepted words are real|ideal", ErrUnknownEndpoints, s)
}

// Set implements pflag.Value.
func (e *Endpoints) Set(s string) error {
	v, err := ParseEndpoints(s)
	if err == nil {
		*e = v
	}
	return err
}

// Type implements pflag.Value.
func (e *Endpoints) Type() string { return "endpoints" }

// WithIdealEndpoints returns the parameters in the parity mode: Endpoints
// EndpointsIdeal, and no endpoint (δ) or switch forwarding delay — all the
// mode takes away from Params itself (the DMA engines' time goes with the
// system's DMA timing, which New makes ideal).
func (p Params) WithIdealEndpoints() Params {
	p.Endpoints, p.Endpoint, p.Switch = EndpointsIdeal, 0, 0
	return p
}

// IdealMMIO is the host's BAR access cost in the parity mode: 1 ns a read
// or write, the least a device takes (sim.DeviceConfig's zero means the
// generation's default, 800 ns a read on Trn3). The host's PCIe is not
// network: with the default, the host learns a collective is done only to
// within one read, and its start costs a few accesses, which made the
// parity mode's times jitter by up to 0.8 µs with the phase of the poll
// (docs/fabric.md §Parity mode).
var IdealMMIO = hwarch.MMIOLatency{Read: time.Nanosecond, Write: time.Nanosecond}

// mmio is the BAR access cost of the system's devices: IdealMMIO with
// ideal endpoints, else the zero value (the generation's default).
func (p *Params) mmio() hwarch.MMIOLatency {
	if p.Endpoints == EndpointsIdeal {
		return IdealMMIO
	}
	return hwarch.MMIOLatency{}
}

// validateEndpoints checks the endpoint mode: ideal endpoints leave no
// endpoint or switch delay (they are not α nor m/B).
func (p Params) validateEndpoints() error {
	switch p.Endpoints {
	case EndpointsReal:
		return nil
	case EndpointsIdeal:
		if p.Endpoint != 0 || p.Switch != 0 {
			return fmt.Errorf("fabric: ideal endpoints with an endpoint delay of %d ps and a switch delay of %d ps: the parity mode has neither (Params.WithIdealEndpoints): %w",
				p.Endpoint, p.Switch, ErrParams)
		}
		return nil
	}
	return fmt.Errorf("fabric: endpoint mode %d (real|ideal): %w", uint8(p.Endpoints), ErrParams)
}

// chunk is the size a write of n bytes is cut into in the aware model:
// ChunkBytes, or the whole write with ideal endpoints (at least 1, so a
// write of 0 bytes has no chunks).
func (p *Params) chunk(n int) uint64 {
	if p.Endpoints == EndpointsIdeal {
		return uint64(max(n, 1))
	}
	return uint64(p.ChunkBytes)
}
