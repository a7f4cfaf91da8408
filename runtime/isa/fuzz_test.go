package isa_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

// FuzzValidator: no input panics any entry point; IsValid and Debug agree
// (and so do IsValidEngineInstruction and DebugEngineInstruction);
// FinalInstValidityCheck's verdict matches the per-record answers.
func FuzzValidator(f *testing.F) {
	for _, g := range gens {
		for _, b := range validMix(g, hwisa.NumEngines) {
			f.Add(b)
		}
	}
	f.Add(enc(dveTranspose()))
	f.Add([]byte{})
	f.Add([]byte{0xBD})
	f.Add(make([]byte, 63))
	f.Add(make([]byte, 128))
	f.Fuzz(func(t *testing.T, data []byte) {
		var seed uint64
		if len(data) >= 8 {
			seed = binary.LittleEndian.Uint64(data)
		}
		steered := make([]byte, hwisa.RecordSize)
		copy(steered, data)
		steer(rand.New(rand.NewPCG(seed, uint64(len(data)))), steered)
		hal := uint32(len(data)) % 7
		if len(data) > 1 {
			hal = uint32(data[1]) % 7
		}
		for _, g := range gens {
			v := validators[g]
			agree(t, v, data)
			agree(t, v, steered)
			if len(data) >= hwisa.RecordSize {
				agree(t, v, data[:hwisa.RecordSize])
			}
			checkBlock(t, v, data, hal)
			checkBlock(t, v, append(steered, data...), hal)
		}
	})
}

func checkBlock(t *testing.T, v *isa.Validator, blk []byte, hal uint32) {
	t.Helper()
	err := v.FinalInstValidityCheck(blk, hal)
	if len(blk)%hwisa.RecordSize != 0 {
		if !errors.Is(err, isa.ErrBlockSize) {
			t.Fatalf("block of %d bytes: %v", len(blk), err)
		}
		return
	}
	first := -1
	for off := 0; off < len(blk); off += hwisa.RecordSize {
		if !v.IsValidEngineInstruction(hal, blk[off:off+hwisa.RecordSize]) {
			first = off
			break
		}
	}
	if first < 0 {
		if err != nil {
			t.Fatalf("every record is valid but FinalInstValidityCheck = %v", err)
		}
		return
	}
	var ie *isa.InvalidError
	if !errors.As(err, &ie) || !errors.Is(err, isa.ErrInvalidInstruction) {
		t.Fatalf("record at %d is invalid but FinalInstValidityCheck = %v", first, err)
	}
	rec := blk[first : first+hwisa.RecordSize]
	if ie.Offset != first || ie.Opcode != rec[0] || ie.Reason != v.DebugEngineInstruction(hal, rec) || ie.Reason.OK {
		t.Fatalf("InvalidError %+v for the record at %d", ie, first)
	}
}
