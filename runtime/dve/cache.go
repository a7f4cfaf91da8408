package dve

import "sync"

// The names dve_dynamic_config_init allocates its DMA resources under.
const (
	// QueueName is the queue-bundle name passed to
	// model_dma_engine_and_queue_bundle_alloc.
	QueueName = "qDveTable"
	// VringName is the vring-set name passed to vring_set_allocate; its bytes
	// read little-endian are the integer 0x6C625465764471 the seed cites.
	VringName = "qDveTbl"
)

// Buffer is one table slot of dve_config_dma_state_t: the staged copy in
// device DRAM and its destination. The zero Buffer is the empty slot (sunda's
// control_slow_table = 0).
type Buffer struct {
	Addr uint64 // device address of the staged copy (dmem_alloc(TONGA_DRAM))
	Dest uint64 // destination device address (Dest.Addr)
	Size uint64 // bytes
}

// Empty reports whether the slot holds no table (Size 0).
func (b Buffer) Empty() bool { return b.Size == 0 }

// State mirrors dve_config_dma_state_t, what dve_dynamic_config_init fills for
// one NeuronCore: the table fingerprint, the five table slots (ControlSlowTable
// empty on sunda), and the DMA queue bundle and vring names.
type State struct {
	DVETblHash       [32]byte // dve_tbl_hash, Fingerprint of the tables
	OpcodeTable      Buffer   // opcode_table
	ControlFastTable Buffer   // control_fast_table
	ControlSlowTable Buffer   // control_slow_table (empty on sunda)
	DatapathTable    Buffer   // datapath_table
	BNParamRAM       Buffer   // bn_param_ram
	Queue            string   // queue bundle, QueueName
	Vring            string   // vring set, VringName
	NC               int      // NeuronCore the tables were loaded on
}

// Slot returns the slot of the table named name (one of TableNames), or nil
// for an unknown name; the DMA half fills a State by Dest.Name through it.
func (s *State) Slot(name string) *Buffer {
	switch name {
	case TableOpcode:
		return &s.OpcodeTable
	case TableControlFast:
		return &s.ControlFastTable
	case TableControlSlow:
		return &s.ControlSlowTable
	case TableDatapath:
		return &s.DatapathTable
	case TableParamRAM:
		return &s.BNParamRAM
	}
	return nil
}

// Cache remembers the States of the DVE table sets loaded on each NeuronCore,
// keyed by their fingerprint (dve_tbl_hash): a table set already loaded on a
// core is a hit there, and loading it again can reuse the State instead of
// staging and hashing anew. Sets on different cores are independent. A Cache
// is safe for concurrent use; the zero Cache is not ready, use NewCache.
type Cache struct {
	mu     sync.RWMutex
	states map[int]map[[32]byte]State
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{states: make(map[int]map[[32]byte]State)}
}

// Lookup returns the State stored for fingerprint fp on NeuronCore nc.
func (c *Cache) Lookup(nc int, fp [32]byte) (State, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st, ok := c.states[nc][fp]
	return st, ok
}

// Store records st as loaded on NeuronCore nc under st.DVETblHash, replacing
// any State with the same fingerprint there. The stored copy's NC is set to nc.
func (c *Cache) Store(nc int, st State) {
	st.NC = nc
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.states[nc]
	if m == nil {
		m = make(map[[32]byte]State)
		c.states[nc] = m
	}
	m[st.DVETblHash] = st
}

// Delete forgets fingerprint fp on NeuronCore nc and reports whether it was
// there.
func (c *Cache) Delete(nc int, fp [32]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.states[nc][fp]
	delete(c.states[nc], fp)
	return ok
}

// Forget drops every State of NeuronCore nc (a core reset loses its tables)
// and returns them, in no particular order, so their staged buffers can be
// freed.
func (c *Cache) Forget(nc int) []State {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.states[nc]
	delete(c.states, nc)
	out := make([]State, 0, len(m))
	for _, st := range m {
		out = append(out, st)
	}
	return out
}

// Len returns the number of States stored across all cores.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, m := range c.states {
		n += len(m)
	}
	return n
}
