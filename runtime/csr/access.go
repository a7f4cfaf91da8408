package csr

import (
	"fmt"
)

// Layer is the csr_* primitive layer over one region table. A nil table is
// the runtime's "csr_get_regions returned NULL".
type Layer struct {
	Regions *Table
}

// resolve looks up the region of ptrs[0] and checks every pointer against it.
func (l *Layer) resolve(ptrs []uint64) (Region, error) {
	if l == nil || l.Regions == nil {
		return Region{}, &Error{Status: StatusRegion, Err: ErrNoRegions}
	}
	if len(ptrs) == 0 {
		return Region{}, nil
	}
	l.Regions.mu.RLock()
	r, ok := l.Regions.find(ptrs[0])
	l.Regions.mu.RUnlock()
	if !ok {
		return Region{}, &Error{Status: StatusRegion, Addr: ptrs[0], Err: ErrRegionNotFound}
	}
	for _, p := range ptrs {
		if !r.inBounds(p) {
			return Region{}, &Error{Status: StatusRegion, Addr: p, Start: r.Start, End: r.End, Err: ErrInvalidAddress}
		}
	}
	return r, nil
}

// contiguousRun returns how many pointers from i on are consecutive words.
func contiguousRun(ptrs []uint64, i int) int {
	n := 1
	for i+n < len(ptrs) && ptrs[i+n] == ptrs[i+n-1]+4 {
		n++
	}
	return n
}

// barAccess runs fn over the maximal runs of consecutive words of ptrs.
func barAccess(r Region, ptrs []uint64, values []uint32, fn func(bar int, off uint64, words []uint32) error) error {
	for i := 0; i < len(ptrs); {
		n := contiguousRun(ptrs, i)
		off := ptrs[i] - r.Start + r.BAR0Offset
		if err := fn(r.BAR, off, values[i:i+n]); err != nil {
			return &Error{Status: StatusRegion, Addr: ptrs[i], Err: ErrDevice, Cause: err}
		}
		i += n
	}
	return nil
}

func checkLens(ptrs []uint64, values []uint32) error {
	if len(values) < len(ptrs) {
		return fmt.Errorf("csr: %d pointers but room for %d values", len(ptrs), len(values))
	}
	return nil
}

// ReadArray is csr_read_array: one region is resolved from ptrs[0], every
// pointer must lie in [start, end-4] of that region — a batch that straddles
// two windows is refused whole — and then the words are read from the
// region's device (ndl_bar_read on BAR 0).
func (l *Layer) ReadArray(ptrs []uint64, values []uint32) error {
	if err := checkLens(ptrs, values); err != nil {
		return err
	}
	r, err := l.resolve(ptrs)
	if err != nil || len(ptrs) == 0 {
		return err
	}
	return barAccess(r, ptrs, values, r.Device.ReadBAR)
}

// WriteArray is csr_write_array: the same resolution and bounds as
// ReadArray; nothing is written unless every pointer passes.
func (l *Layer) WriteArray(ptrs []uint64, values []uint32) error {
	if err := checkLens(ptrs, values); err != nil {
		return err
	}
	r, err := l.resolve(ptrs)
	if err != nil || len(ptrs) == 0 {
		return err
	}
	return barAccess(r, ptrs, values, r.Device.WriteBAR)
}

// Read is csr_read, a 1-element wrapper over ReadArray.
func (l *Layer) Read(ptr uint64) (uint32, error) {
	var p [1]uint64
	var v [1]uint32
	p[0] = ptr
	err := l.ReadArray(p[:], v[:])
	return v[0], err
}

// Write is csr_write, a 1-element wrapper over WriteArray.
func (l *Layer) Write(ptr uint64, value uint32) error {
	p := [1]uint64{ptr}
	v := [1]uint32{value}
	return l.WriteArray(p[:], v[:])
}

// AXIWrite is axi_write: a burst of words to consecutive addresses from
// start, resolved by one region lookup for start. The whole burst must fit
// the region's [start, end-4]; there is no axi_read.
func (l *Layer) AXIWrite(start uint64, words []uint32) error {
	if len(words) == 0 {
		_, err := l.resolve(nil)
		return err
	}
	r, err := l.resolve([]uint64{start})
	if err != nil {
		return err
	}
	last := start + 4*uint64(len(words)-1)
	if last < start || !r.inBounds(last) {
		return &Error{Status: StatusRegion, Addr: last, Start: r.Start, End: r.End, Err: ErrInvalidAddress}
	}
	if err := r.Device.WriteBAR(r.BAR, start-r.Start+r.BAR0Offset, words); err != nil {
		return &Error{Status: StatusRegion, Addr: start, Err: ErrDevice, Cause: err}
	}
	return nil
}

// RegRead32 is al_reg_read32: one register read through csr_read.
func (l *Layer) RegRead32(addr uint64) (uint32, error) { return l.Read(addr) }

// RegWrite32 is al_reg_write32: one register write through csr_write.
func (l *Layer) RegWrite32(addr uint64, v uint32) error { return l.Write(addr, v) }

// MemWriteBuf is al_mem_write_buf: a buffer of words burst through axi_write.
func (l *Layer) MemWriteBuf(addr uint64, words []uint32) error { return l.AXIWrite(addr, words) }

// MemReadBuf is al_mem_read_buf: a plain loop of single-word csr reads (the
// runtime has no burst read).
func (l *Layer) MemReadBuf(addr uint64, dst []uint32) error {
	for i := range dst {
		v, err := l.Read(addr + 4*uint64(i))
		if err != nil {
			return err
		}
		dst[i] = v
	}
	return nil
}
