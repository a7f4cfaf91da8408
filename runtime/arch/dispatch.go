package arch

import (
	"errors"
	"fmt"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Errors of the arch layer. Each is returned wrapped with the generation,
// the seed symbol and the offending value.
var (
	// ErrNotSelected: a table was asked for before the arch was selected.
	ErrNotSelected = errors.New("arch tables not selected")
	// ErrAlreadySelected: a second, different arch selection (the runtime assumes one chip type per host).
	ErrAlreadySelected = errors.New("arch tables already selected for another generation")
	// ErrTPBIndex: a per-TPB accessor got device_tpb_idx ≥ num_tpb.
	ErrTPBIndex = errors.New("device_tpb_idx out of range")
	// ErrIndex: a table index past the end (the runtime's leaf asserts).
	ErrIndex = errors.New("index out of range")
	// ErrLeafAborts: the runtime's leaf for this generation asserts or aborts instead of returning.
	ErrLeafAborts = errors.New("not supported on this generation (the runtime's leaf aborts)")
	// ErrInvalidQueueID: get_rel_queue_idx found no match (NRT_INVALID).
	ErrInvalidQueueID = errors.New("queue id not in the queue-index table (NRT_INVALID)")
	// ErrNotMapped: a device address lies in no window the table knows.
	ErrNotMapped = errors.New("address not in any APB SE window")
)

// Options are the runtime facts the tables depend on besides the generation.
type Options struct {
	// Switch is the NeuronSwitch family (nrt_is_neuron_switch_v1_family);
	// it changes mariana's get_max_devs and get_mesh_max_folds.
	Switch hwarch.SwitchFamily
}

// Tables are the three dispatch tables of one generation plus its geometry.
type Tables struct {
	Generation hwarch.Generation
	Options    Options
	Geometry   *hwarch.Geometry
	Tdrv       *Tdrv
	Soc        *Soc
	Khal       *Khal
}

// For builds the tables of generation g. An invalid generation is an error
// wrapping hwarch.ErrUnknownGeneration (arch_init's "default: error").
func For(g hwarch.Generation, opts Options) (*Tables, error) {
	geo, err := hwarch.GeometryOf(g)
	if err != nil {
		return nil, fmt.Errorf("arch_init: %w", err)
	}
	return &Tables{
		Generation: g,
		Options:    opts,
		Geometry:   geo,
		Tdrv:       tdrvTables[g],
		Soc:        newSoc(g, opts.Switch),
		Khal:       khalTables[g],
	}, nil
}

// MustFor is For for a generation known to be valid (one of
// hwarch.Generations()); it panics otherwise and must not see user input.
func MustFor(g hwarch.Generation, opts Options) *Tables {
	t, err := For(g, opts)
	if err != nil {
		panic(err)
	}
	return t
}

// Dispatch holds the arch selection of one runtime instance, like
// tdrv_arch_ops_init and arch_init: the generation is chosen once from the PCI
// identity and every later question is answered from that choice. It is safe
// for concurrent use.
type Dispatch struct {
	mu       sync.Mutex
	selected *Tables
	identity hwarch.PCIIdentity
}

// Select chooses the tables from a device's PCI identity. Selecting again with
// an identity of the same generation and options returns the same tables; a
// different one is ErrAlreadySelected. A foreign vendor or unknown device id
// is an error and selects nothing.
func (d *Dispatch) Select(id hwarch.PCIIdentity, opts Options) (*Tables, error) {
	g, err := id.Generation()
	if err != nil {
		return nil, fmt.Errorf("arch select %s: %w", id, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.selected != nil {
		if d.selected.Generation == g && d.selected.Options == opts {
			return d.selected, nil
		}
		return nil, fmt.Errorf("arch select %s (%s): %w %s (%s, switch %s)", id, g, ErrAlreadySelected,
			d.selected.Generation, d.identity, d.selected.Options.Switch)
	}
	t, err := For(g, opts)
	if err != nil {
		return nil, err
	}
	d.selected, d.identity = t, id
	return t, nil
}

// Tables returns the selected tables, or ErrNotSelected.
func (d *Dispatch) Tables() (*Tables, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.selected == nil {
		return nil, ErrNotSelected
	}
	return d.selected, nil
}

// Selected reports whether a selection has been made.
func (d *Dispatch) Selected() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.selected != nil
}
