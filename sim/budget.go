package sim

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// SetPageBudget makes the host memory charge its resident pages and their
// page table to b (see [Memory.SetBudget]).
func (h *HostMemory) SetPageBudget(b *PageBudget) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.mem.SetBudget(b); err != nil {
		return fmt.Errorf("sim host memory: %w", err)
	}
	return nil
}

// SetPageBudget makes the device's memories — its device memory behind
// BAR4, its register file and its host memory — charge their resident pages
// and the page tables that map them to b, so that the devices of a served
// system share one bound on the memory they hold. A BAR write
// that would pass it is refused whole with an error wrapping
// [ErrPageBudget]; a DMA transfer that would pass it halts its queue with
// udma.ErrMemoryFull, the simulator's own status bit.
func (d *Device) SetPageBudget(b *PageBudget) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range []*Memory{d.hbm, d.regs} {
		if err := m.SetBudget(b); err != nil {
			return fmt.Errorf("sim device %s: %w", d.cfg.Name, err)
		}
	}
	if d.hostMem == nil {
		return nil // another port (a guest's memory) holds no model pages
	}
	if err := d.hostMem.SetPageBudget(b); err != nil {
		return fmt.Errorf("sim device %s: %w", d.cfg.Name, err)
	}
	return nil
}

// reserveWrite reserves the pages a BAR write of src at off will make
// resident, so that a write the budget cannot hold is refused before any
// word lands. It returns the memory to release afterwards (nil: none).
func (d *Device) reserveWrite(b int, off uint64, src []uint32) (*Memory, error) {
	var m *Memory
	var n int64
	switch {
	case b == hwarch.BAR4 && d.hbm.Budget() != nil:
		m = d.hbm
		for i := 0; i < len(src); {
			o := off + 4*uint64(i)
			addr, span, ok := d.bar4.Span(o)
			if !ok {
				i++ // unmapped: the write is dropped
				continue
			}
			k := min(len(src)-i, int(span/4))
			n += m.NewPagesU32(addr, src[i:i+k])
			i += k
		}
	case b == d.regBAR && d.regs.Budget() != nil:
		m = d.regs
		n = m.NewPagesU32(off, src)
	default:
		return nil, nil
	}
	if err := m.Reserve("write", off, n); err != nil {
		return nil, fmt.Errorf("sim device %s: write bar %d offset %#x, %d words: %w", d.cfg.Name, b, off, len(src), err)
	}
	return m, nil
}
