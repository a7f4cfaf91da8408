package fabric

import (
	"errors"
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
)

// LinkParams are one direction of a link: its bandwidth in bytes per second
// and its latency in picoseconds (wire, serdes and the forwarding of the
// node at its far end).
type LinkParams struct {
	Bandwidth uint64 // bytes/s
	Latency   uint64 // ps
}

// Model is the network model of a system.
type Model uint8

// The network models (docs/fabric.md §Models).
const (
	// Aware is contention-aware: a transfer crosses its path in chunks,
	// store-and-forward; each link is a FIFO shared by every transfer's
	// chunks.
	Aware Model = iota
	// Free is contention-free: cut-through, hops × latency + bytes / the
	// slowest link's bandwidth, no link is ever busy.
	Free
)

// String returns "aware" or "free".
func (m Model) String() string {
	if m == Free {
		return "free"
	}
	return "aware"
}

// ErrUnknownModel is returned (wrapped) by ParseModel.
var ErrUnknownModel = errors.New("unknown network model")

// ParseModel reads "aware" (contention-aware) or "free" (contention-free),
// in any case (units.Word).
func ParseModel(s string) (Model, error) {
	switch units.Word(s) {
	case "aware", "contention-aware":
		return Aware, nil
	case "free", "contention-free":
		return Free, nil
	}
	return 0, fmt.Errorf("%w %q: accepted words are aware|free", ErrUnknownModel, s)
}

// Set implements pflag.Value.
func (m *Model) Set(s string) error {
	v, err := ParseModel(s)
	if err == nil {
		*m = v
	}
	return err
}

// Type implements pflag.Value.
func (m *Model) Type() string { return "model" }

// Params are every timing and shape parameter of a fabric. Each is named,
// sourced in DefaultParams and overridable.
type Params struct {
	Model      Model
	Endpoints  Endpoints // EndpointsIdeal: the α-β parity mode (docs/fabric.md §Parity mode)
	ChunkBytes int       // store-and-forward unit of the aware model
	Endpoint   uint64    // δ: the fixed delay a write takes to land once its last byte has arrived (ps)
	Switch     uint64    // the forwarding delay of a switch, added to every link that leaves one (ps)

	XY          LinkParams // torus links (Trn1, Trn2 X/Y)
	Z           LinkParams // UltraServer Z ring
	Ring        LinkParams // Inf2 ring and chain
	InServer    LinkParams // Trn3: device ↔ in-server switch
	InterServer LinkParams // Trn3: device ↔ inter-server switch
	Link        LinkParams // α-β topologies (fully-connected, star)

	ServerSize         int // Trn3 devices per server (one in-server switch each)
	PodPorts           int // Trn3 pod ports per device
	MaxLinksPerPodPort int // get_max_links_per_pod_port: cayman 1, mariana 2
	InterServerLinks   int // links of the inter-server group per device
	Folds              int // mesh folds, bounded by get_mesh_max_folds
	MaxFolds           int // get_mesh_max_folds of the system

	// InterRack is a Trn3 Gen1 device's bundle of direct inter-rack
	// links (systems.go, DefaultInterRack).
	InterRack LinkParams
	// SecondLevel is each of a Trn3 Gen2 device's links to its
	// UltraServer's second-level switches (systems.go): by default half of
	// InterServer, the group's bundle split over the two switches.
	SecondLevel LinkParams

	// EFA is the scale-out network of a system of several nodes
	// (Config.Nodes, efa.go, docs/fabric.md §EFA); unused with one node.
	// --link-bw and --link-latency do not reach it: it has its own.
	EFA EFAParams
}

// Picoseconds per nanosecond.
const ns = 1000

// DefaultParams returns the parameters of a generation's real systems
// with the generation's first device (DefaultParamsOf with device 0: on
// sunda a Trn1, not an Inf2).
func DefaultParams(g hwarch.Generation) Params { return DefaultParamsOf(g, 0) }

// DefaultParamsOf returns the parameters of the real systems of the
// device of PCI device id dev, of generation g (0: the generation's first
// device, hwarch.DefaultDeviceID; Trn1 and Inf2 are both sunda and differ
// in their links), from trainium-facts §4 and §10 (docs/fabric.md
// §Parameters lists each with its source):
//
//   - XY and Ring, the direct device-to-device links of the torus, the
//     ring and the chain: DirectLink(g, dev), 96 GB/s per direction on
//     Trn1, 96 GiB/s on Inf2, 256 GB/s on Trn2, 128 GB/s on Trn3 (chosen);
//   - Z: 128 GB/s (the UltraServer's 256 GB/s inter-instance over 2);
//   - InServer: 128 GB/s per direction (4 PCIe Gen6 ×8 links = 256 GB/s
//     bidirectional); InterServer: 160 GB/s (5 links = 320 GB/s
//     bidirectional); InterRack: 64 GB/s (2 links = 128 GB/s
//     bidirectional, DefaultInterRack); SecondLevel: 80 GB/s, half of
//     InterServer (a Gen2 device's inter-server bundle over its 2
//     second-level switches; the split is not public: chosen); all Trn3;
//   - latencies: 500 ns per link and 500 ns endpoint delay — chosen so
//     that a hop costs about 1 µs, the low end of the 1–2 µs intra-node
//     collective step (trainium-facts §4); switch forwarding 300 ns (not
//     published; chosen);
//   - chunks of 4 KiB (chosen: the DMA rule of thumb's saturating size,
//     trainium-facts §3);
//   - ServerSize 16, PodPorts 4 (4 NeuronLink ports per chip),
//     InterServerLinks 5; MaxLinksPerPodPort and MaxFolds from the
//     runtime's get_max_links_per_pod_port and get_mesh_max_folds, given by
//     the caller (sim does not import the runtime): see WithSoc.
func DefaultParamsOf(g hwarch.Generation, dev uint16) Params {
	direct := DirectLink(g, dev)
	p := Params{
		Model: Aware, ChunkBytes: 4096, Endpoint: 500 * ns, Switch: 300 * ns,
		XY:          direct,
		Z:           LinkParams{128e9, 500 * ns},
		Ring:        direct,
		InServer:    LinkParams{128e9, 500 * ns},
		InterServer: LinkParams{160e9, 500 * ns},
		Link:        LinkParams{100e9, 500 * ns},
		ServerSize:  16, PodPorts: 4, InterServerLinks: 5, Folds: 1,
	}
	p.InterRack = DefaultInterRack
	p.SecondLevel = LinkParams{p.InterServer.Bandwidth / Gen2Spines, p.InterServer.Latency}
	p.EFA = DefaultEFA(g)
	return p
}

// DirectLink returns one direction of a direct device-to-device link —
// the torus's XY links, the ring's and the chain's — of the device of PCI
// device id dev of generation g (0, or an id that is not g's Inf2: the
// generation's first device), each with 500 ns of latency
// (trainium-facts §4, docs/fabric.md §Parameters):
//
//   - Trn1: 96 GB/s, NeuronLink-v2's 384 GB/s per chip over its 4 links
//     (derived);
//   - Inf2: 96 GiB/s, 192 GiB/s per chip over its 2 links (the per-chip
//     figure is published, the split derived);
//   - Trn2: 256 GB/s, 1,024 GB/s intra-instance over 4 neighbours
//     (derived);
//   - Trn3: 128 GB/s. A Trn3 device has no direct device links (its
//     devices meet on NeuronSwitch-v1), so a ring or torus of Trn3
//     devices gets its in-server bundle's 128 GB/s per direction (4 PCIe
//     Gen6 ×8 links = 256 GB/s bidirectional): chosen, not published.
func DirectLink(g hwarch.Generation, dev uint16) LinkParams {
	switch {
	case g == hwarch.Sunda && dev == hwarch.DeviceInf2:
		return LinkParams{96 << 30, 500 * ns}
	case g == hwarch.Sunda:
		return LinkParams{96e9, 500 * ns}
	case g == hwarch.Mariana:
		return LinkParams{128e9, 500 * ns}
	}
	return LinkParams{256e9, 500 * ns}
}

// WithSoc sets the runtime's fabric constants: get_max_links_per_pod_port
// (0 when the generation's leaf aborts, as sunda's does) and
// get_mesh_max_folds.
func (p Params) WithSoc(maxLinksPerPodPort, meshMaxFolds int) Params {
	p.MaxLinksPerPodPort, p.MaxFolds = maxLinksPerPodPort, meshMaxFolds
	return p
}

// ErrParams marks parameters that cannot describe a fabric.
var ErrParams = errors.New("invalid fabric parameters")

// Validate checks the parameters for kind k: positive bandwidths and chunk
// size, the pod-port link budget of a switched fabric
// (InterServerLinks ≤ PodPorts × MaxLinksPerPodPort when the latter is
// known), Folds within MaxFolds, and ideal endpoints without endpoint or
// switch delays, and the EFA parameters by themselves (EFAParams.Validate).
func (p Params) Validate(k Kind) error {
	if p.ChunkBytes < 64 || p.ChunkBytes > 1<<30 {
		return fmt.Errorf("fabric: chunk of %d bytes (64..1 GiB): %w", p.ChunkBytes, ErrParams)
	}
	for _, l := range []struct {
		name   string
		p      LinkParams
		needBW bool // inter-rack and second-level only on the kinds that have them, below
	}{{"xy", p.XY, true}, {"z", p.Z, true}, {"ring", p.Ring, true}, {"in-server", p.InServer, true},
		{"inter-server", p.InterServer, true}, {"link", p.Link, true}, {"inter-rack", p.InterRack, false},
		{"second-level", p.SecondLevel, false}} {
		if l.needBW && l.p.Bandwidth == 0 {
			return fmt.Errorf("fabric: %s link bandwidth 0: %w", l.name, ErrParams)
		}
		if _, err := units.LatencyPS("fabric: "+l.name+" link latency", l.p.Latency); err != nil {
			return fmt.Errorf("%w: %w", err, ErrParams)
		}
	}
	for _, d := range []struct {
		name string
		ps   uint64
	}{{"fabric: switch latency", p.Switch}, {"fabric: endpoint delay", p.Endpoint}} {
		if _, err := units.LatencyPS(d.name, d.ps); err != nil {
			return fmt.Errorf("%w: %w", err, ErrParams)
		}
	}
	if k == KindTrn3Gen1 && p.InterRack.Bandwidth == 0 {
		return fmt.Errorf("fabric %s: inter-rack link bandwidth 0: %w", k, ErrParams)
	}
	if k == KindTrn3Gen2 && p.SecondLevel.Bandwidth == 0 {
		return fmt.Errorf("fabric %s: second-level link bandwidth 0: %w", k, ErrParams)
	}
	if k.switchedTrn3() && p.MaxLinksPerPodPort > 0 && p.InterServerLinks > p.PodPorts*p.MaxLinksPerPodPort {
		return fmt.Errorf("fabric %s: %d inter-server links per device exceed the pod-port budget of %d ports × %d links (get_max_links_per_pod_port): %w",
			k, p.InterServerLinks, p.PodPorts, p.MaxLinksPerPodPort, ErrParams)
	}
	if err := p.validateEndpoints(); err != nil {
		return err
	}
	if err := p.EFA.Validate(); err != nil {
		return err
	}
	if p.Folds < 1 || (p.MaxFolds > 0 && p.Folds > p.MaxFolds) {
		return fmt.Errorf("fabric: %d mesh folds (1..%d, get_mesh_max_folds): %w", p.Folds, p.MaxFolds, ErrParams)
	}
	return nil
}
