package dma

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// flatHost is host memory as one byte slice from address 0, counting the
// writes it takes.
type flatHost struct {
	mem    []byte
	writes int
}

func (h *flatHost) HostAlloc(size, align uint64) (uint64, error) { return 0, fmt.Errorf("not here") }
func (h *flatHost) HostFree(pa uint64) error                     { return nil }
func (h *flatHost) HostRead(pa uint64, p []byte) error {
	if pa+uint64(len(p)) > uint64(len(h.mem)) {
		return fmt.Errorf("read [%#x, +%d) past %#x", pa, len(p), len(h.mem))
	}
	copy(p, h.mem[pa:])
	return nil
}
func (h *flatHost) HostWrite(pa uint64, p []byte) error {
	if pa+uint64(len(p)) > uint64(len(h.mem)) {
		return fmt.Errorf("write [%#x, +%d) past %#x", pa, len(p), len(h.mem))
	}
	h.writes++
	copy(h.mem[pa:], p)
	return nil
}

// TestFillInChunks: Queue.fill writes a vring of more descriptors than it
// encodes at once (fillChunk), from a tail near the ring's end, as the
// descriptors one by one would be: every slot's address, length, flags
// and phase — the phase turning at the wrap — and the tail and phase
// after; in writes of at most fillChunk descriptors that never cross the
// ring's end.
func TestFillInChunks(t *testing.T) {
	const count = 4 * fillChunk
	for _, tc := range []struct {
		name        string
		tail, pairs int
		tx          bool
	}{
		{"tx wraps", count - 100, 2*fillChunk + 300, true},
		{"rx wraps", count - 100, 2*fillChunk + 300, false},
		{"tx from 0, exact chunks", 0, 2 * fillChunk, true},
		{"rx one", count - 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &flatHost{mem: make([]byte, count*udma.DescriptorSize)}
			qu := &Queue{m: &DMA{host: h}, Name: "q"}
			r := &ring{pa: 0, count: count, tail: uint32(tc.tail), phase: 2}
			v := NewVring("v")
			for i := range tc.pairs {
				require.NoError(t, v.AddReduce(uint64(0x1000+i*64), uint64(0x9000_0000+i*64), uint64(4+i%60*4), udma.Reduce{}))
			}
			require.NoError(t, qu.fill(r, v, tc.tx))
			slot, phase := tc.tail, uint8(2)
			for i, p := range v.pairs {
				d, err := udma.Decode(h.mem[slot*udma.DescriptorSize:])
				require.NoError(t, err, "slot %d", slot)
				want := udma.Descriptor{Addr: p.dst, Meta: p.reduce}
				flags := uint32(0)
				if tc.tx {
					want.Addr, want.Meta, flags = p.src, udma.DefaultMetaCtrl, udma.FlagFirst|udma.FlagLast
				}
				want.LenCtrl, err = udma.LenCtrl(int(p.len), phase, flags)
				require.NoError(t, err)
				require.Equal(t, want, d, "pair %d in slot %d", i, slot)
				if slot++; slot == count {
					slot, phase = 0, 3
				}
			}
			assert.Equal(t, uint32(slot), r.tail, "tail")
			assert.Equal(t, phase, r.phase, "phase")
			first := min(tc.pairs, count-tc.tail)
			wantWrites := (first+fillChunk-1)/fillChunk + (tc.pairs-first+fillChunk-1)/fillChunk
			assert.Equal(t, wantWrites, h.writes, "host writes")
		})
	}
}
