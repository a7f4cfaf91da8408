package arch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTPBResetMap(t *testing.T) {
	tests := []struct {
		gen  Generation
		ncs  uint32
		want uint32
		dec  ResetMap
	}{
		{Sunda, 0b01, 0x0701, ResetMap{NCs: 0b01, TopSPs: 0b000111}},
		{Sunda, 0b10, 0x3802, ResetMap{NCs: 0b10, TopSPs: 0b111000}},
		{Sunda, 0b11, 0x3F03, ResetMap{NCs: 0b11, TopSPs: 0b111111}},
		{Cayman, 0b0000_0101, 0x05_0505, ResetMap{NCs: 0b101, TopSPs: 0b11_0011}},
		{Mariana, 0xFF, 0xFF_FFFF, ResetMap{NCs: 0xFF, TopSPs: 0xFFFF}},
		{Mariana, TPBResetMapAll, 0xFF_FFFF, ResetMap{NCs: 0xFF, TopSPs: 0xFFFF}},
		{Mariana, 0x80, 0x80_8080, ResetMap{NCs: 0x80, TopSPs: 0xC000}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%#x", tt.gen, tt.ncs), func(t *testing.T) {
			g := MustGeometry(tt.gen)
			m := g.TPBResetMap(tt.ncs)
			assert.Equal(t, tt.want, m)
			assert.Equal(t, tt.dec, g.DecodeTPBResetMap(m))
		})
	}
}

func TestRegisterBAR(t *testing.T) {
	for _, g := range Generations() {
		for _, mode := range []Mode{ModeSilicon, ModeEMU, ModeQEMU} {
			want := BAR0
			if g != Mariana && mode == ModeQEMU { // driver 2.24.7.0: V2 and V3 under QEMU
				want = BAR2
			}
			assert.Equal(t, want, MustGeometry(g).BAR0.RegisterBAR(mode), "%s %s", g, mode)
		}
	}
}
