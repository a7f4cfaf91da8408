package csr

import (
	"fmt"

	"github.com/neuronsim/neuronsim/runtime/ndl"
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
	found, ok := l.Regions.find(ptrs[0])
	var r Region
	if ok {
		r = *found
	}
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

// resolveOne is resolve for a single pointer without building a slice: the
// region's device, BAR and the pointer's offset in that BAR.
func (l *Layer) resolveOne(ptr uint64) (dev ndl.Device, bar int, off uint64, err error) {
	if l == nil || l.Regions == nil {
		return nil, 0, 0, &Error{Status: StatusRegion, Err: ErrNoRegions}
	}
	l.Regions.mu.RLock()
	r, ok := l.Regions.find(ptr)
	if ok && r.inBounds(ptr) {
		dev, bar, off = r.Device, r.BAR, ptr-r.Start+r.BAR0Offset
	} else if ok {
		err = &Error{Status: StatusRegion, Addr: ptr, Start: r.Start, End: r.End, Err: ErrInvalidAddress}
	} else {
		err = &Error{Status: StatusRegion, Addr: ptr, Err: ErrRegionNotFound}
	}
	l.Regions.mu.RUnlock()
	return dev, bar, off, err
}

// contiguousRun returns how many pointers from i on are consecutive words.
func contiguousRun(ptrs []uint64, i int) int {
	n := 1
	for i+n < len(ptrs) && ptrs[i+n] == ptrs[i+n-1]+4 {
		n++
	}
	return n
}

// barAccess reads or writes the maximal runs of consecutive words of ptrs.
func barAccess(r Region, ptrs []uint64, values []uint32, write bool) error {
	for i := 0; i < len(ptrs); {
		n := contiguousRun(ptrs, i)
		off := ptrs[i] - r.Start + r.BAR0Offset
		var err error
		if write {
			err = r.Device.WriteBAR(r.BAR, off, values[i:i+n])
		} else {
			err = r.Device.ReadBAR(r.BAR, off, values[i:i+n])
		}
		if err != nil {
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
	return barAccess(r, ptrs, values, false)
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
	return barAccess(r, ptrs, values, true)
}

// Read is csr_read, a 1-element ReadArray: the same lookup, bounds and
// errors, done without building slices so that a register read does not
// allocate.
func (l *Layer) Read(ptr uint64) (uint32, error) {
	dev, bar, off, err := l.resolveOne(ptr)
	if err != nil {
		return 0, err
	}
	v, err := dev.Read32(bar, off)
	if err != nil {
		return 0, &Error{Status: StatusRegion, Addr: ptr, Err: ErrDevice, Cause: err}
	}
	return v, nil
}

// Write is csr_write, a 1-element WriteArray (see Read).
func (l *Layer) Write(ptr uint64, value uint32) error {
	dev, bar, off, err := l.resolveOne(ptr)
	if err != nil {
		return err
	}
	if err := dev.Write32(bar, off, value); err != nil {
		return &Error{Status: StatusRegion, Addr: ptr, Err: ErrDevice, Cause: err}
	}
	return nil
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
