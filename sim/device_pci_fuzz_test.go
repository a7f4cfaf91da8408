package sim

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

var (
	fuzzPCIOnce    sync.Once
	fuzzPCICases   []pciCase
	fuzzPCIDevices []*Device
)

// FuzzConfigSpace runs a sequence of config reads and writes of random
// width (1, 2, 4 bytes or any length up to the space) at random offsets,
// some outside the space, against a device of one generation × revision.
// An access is refused exactly when it leaves the space; nothing panics;
// after every access the identity, the capability chain and the BAR type
// bits and alignment are intact, and at the end every BAR still sizes to
// its documented size.
//
// Input: byte 0 picks the case; then up to 64 records of 7 bytes: op (bit 0 write,
// bits 1-2 width 1/2/4/long), offset u16 (little-endian, up to 0xFFFF so
// some lie past the space), value u32.
func FuzzConfigSpace(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{7, 5, 0x10, 0, 0xFF, 0xFF, 0xFF, 0xFF, 4, 0x10, 0, 0, 0, 0, 0})
	f.Add([]byte{13, 3, 0x14, 0, 0xFF, 0xFF, 0xFF, 0xFF, 5, 0x20, 0, 0xFF, 0xFF, 0xFF, 0xFF, 1, 0xFE, 0x0F, 1, 2, 3, 4})
	f.Add([]byte{2, 5, 0x44, 0, 1, 0, 0, 0, 7, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 1, 0x00, 0x10, 0, 0, 0, 0})
	fuzzPCIOnce.Do(func() {
		fuzzPCICases = pciCases()
		for _, c := range fuzzPCICases {
			fuzzPCIDevices = append(fuzzPCIDevices, c.newDevice(f))
		}
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		i := int(in[0]) % len(fuzzPCICases)
		c, d := fuzzPCICases[i], fuzzPCIDevices[i]
		d.ResetConfig()
		in = in[1:]
		for n := 0; len(in) >= 7 && n < 64; n++ {
			op, off, v := in[0], uint64(binary.LittleEndian.Uint16(in[1:])), in[3:7]
			in = in[7:]
			width := [...]int{1, 2, 4, 0}[op>>1&3]
			if width == 0 {
				width = int(v[0])<<4 | 1 // 1..4081 bytes
			}
			buf := make([]byte, width)
			for k := range buf {
				buf[k] = v[k%4]
			}
			var err error
			if op&1 == 1 {
				err = d.WriteConfig(off, buf)
			} else {
				err = d.ReadConfig(off, buf)
			}
			inside := off+uint64(width) <= hwarch.ConfigSpaceSize
			if inside && err != nil {
				t.Fatalf("access of %d bytes at %#x refused: %v", width, off, err)
			}
			if !inside && !errors.Is(err, hwarch.ErrConfigAccess) {
				t.Fatalf("access of %d bytes at %#x past the space: err %v", width, off, err)
			}
			if op&1 == 1 {
				checkConfigInvariants(t, d, c) // a read changes nothing
			}
		}
		checkConfigInvariants(t, d, c)
		for b := 0; b < 6; b += 2 {
			lo, hi := uint64(hwarch.CfgBAR0+4*b), uint64(hwarch.CfgBAR0+4*b+4)
			var l, h [4]byte
			_ = d.ReadConfig(lo, l[:])
			_ = d.ReadConfig(hi, h[:])
			_ = d.WriteConfig(lo, []byte{0xFF, 0xFF, 0xFF, 0xFF})
			_ = d.WriteConfig(hi, []byte{0xFF, 0xFF, 0xFF, 0xFF})
			var ml, mh [4]byte
			_ = d.ReadConfig(lo, ml[:])
			_ = d.ReadConfig(hi, mh[:])
			mask := uint64(binary.LittleEndian.Uint32(mh[:]))<<32 | uint64(binary.LittleEndian.Uint32(ml[:])&^0xF)
			var size uint64
			if mask != 0 {
				size = ^mask + 1
			}
			if size != c.bars[b] {
				t.Fatalf("%s: BAR%d sizes to %#x, documented %#x", c.name, b, size, c.bars[b])
			}
			_ = d.WriteConfig(lo, l[:])
			_ = d.WriteConfig(hi, h[:])
		}
	})
}
