package stack

import (
	"bytes"
	"encoding/binary"

	"github.com/neuronsim/neuronsim/runtime/dve"
)

// DVELoad is a timed DVE table load on one NC (dve.Loader.Load).
type DVELoad struct {
	Report dve.Report
	TimePS uint64 // device time the load took
}

// LoadDVE loads tables on NC nc with l (a loader of this stack: DVELoader)
// and times the load on the device's clock.
func (s *Stack) LoadDVE(l *dve.Loader, nc int, tables *dve.Tables) (DVELoad, error) {
	if err := s.CheckCore(nc); err != nil {
		return DVELoad{}, err
	}
	since, err := s.Clock()
	if err != nil {
		return DVELoad{}, err
	}
	rep, err := l.Load(nc, tables)
	if err != nil {
		return DVELoad{}, err
	}
	took, err := since()
	if err != nil {
		return DVELoad{}, err
	}
	return DVELoad{Report: rep, TimePS: took}, nil
}

// VerifyDVE reads every destination a load staged back through csr_read
// and reports whether each holds its table of t.
func (s *Stack) VerifyDVE(nc int, rep dve.Report, t *dve.Tables) (bool, error) {
	up := s.Up
	tpb := up.VA(up.Geometry.BAR0.TPBWindow(nc))
	for _, d := range rep.Staged {
		words := make([]uint32, d.Size/4)
		if err := up.CSR.MemReadBuf(tpb+d.Offset, words); err != nil {
			return false, err
		}
		got := make([]byte, d.Size)
		for i, w := range words {
			binary.LittleEndian.PutUint32(got[4*i:], w)
		}
		if !bytes.Equal(got, t.Get(d.Name)) {
			return false, nil
		}
	}
	return true, nil
}
