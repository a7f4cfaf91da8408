package systemtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/dve"
)

// TestDVELoadEndToEnd runs the DVE loader through runtime/csr → ndl → sim
// on every generation and reads the device back: every destination holds
// its table's exact bytes, sunda stages 4 buffers and nothing where a
// control-slow table would go, and a second identical load moves nothing.
func TestDVELoadEndToEnd(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			simDev, up, m := dmaDevice(t, g, 0)
			mem, err := dmem.New(up.Geometry, dmem.Options{ChannelBytes: up.HBMChannelBytes})
			require.NoError(t, err)
			l := dve.NewLoader(m, mem, arch.MustFor(g, arch.Options{}))
			geo := up.Geometry
			nc := geo.NeuronCores - 1
			tables, err := dve.DefaultBins(g)
			require.NoError(t, err)

			rep, err := l.Load(nc, nil)
			require.NoError(t, err)
			require.False(t, rep.CacheHit)
			want := 5
			if g == hwarch.Sunda {
				want = 4
			}
			assert.Len(t, rep.Staged, want, "tables + param RAM")
			assert.Equal(t, dve.Fingerprint(g, tables), rep.State.DVETblHash)
			assert.Equal(t, g == hwarch.Sunda, rep.State.ControlSlowTable.Empty())

			// Read every destination back through csr_read (al_mem_read_buf).
			tpb := up.VA(geo.BAR0.TPBWindow(nc))
			tpbDev, err := dve.AXIBase(arch.MustFor(g, arch.Options{}), nc)
			require.NoError(t, err)
			var lo, hi uint64 = ^uint64(0), 0
			for _, d := range rep.Staged {
				got := make([]uint32, d.Size/4)
				require.NoError(t, up.CSR.MemReadBuf(tpb+d.Offset, got))
				data := tables.Get(d.Name)
				require.Len(t, data, int(d.Size))
				for i, w := range got {
					if w != uint32(data[4*i])|uint32(data[4*i+1])<<8|uint32(data[4*i+2])<<16|uint32(data[4*i+3])<<24 {
						t.Fatalf("%s word %d: device holds %#x", d.Name, i, w)
					}
				}
				assert.Equal(t, tpbDev+d.Offset, d.Addr)
				lo, hi = min(lo, d.Offset), max(hi, d.Offset+d.Size)
			}
			// Nothing else in the DVE tile's table area was touched: every
			// word from 4 KiB below the lowest table to 4 KiB past the highest
			// is either a staged table's or still zero (on sunda there is no
			// control-slow destination at all).
			staged := func(off uint64) bool {
				for _, d := range rep.Staged {
					if off >= d.Offset && off < d.Offset+d.Size {
						return true
					}
				}
				return false
			}
			around := make([]uint32, (hi-lo+0x2000)/4)
			require.NoError(t, up.CSR.MemReadBuf(tpb+lo-0x1000, around))
			for i, v := range around {
				if off := lo - 0x1000 + 4*uint64(i); !staged(off) && v != 0 {
					t.Fatalf("TPB+%#x holds %#x but no table was staged there", off, v)
				}
			}
			if g == hwarch.Sunda {
				assert.Equal(t, uint64(0x2B8_0000), lo)
				assert.Equal(t, uint64(0x2B8_4400), hi, "4 tables and the param RAM, back to back")
			} else {
				cs := rep.State.ControlSlowTable
				assert.Equal(t, tpbDev+0x2B8_1000, cs.Dest)
			}
			v, err := up.CSR.Read(tpb + geo.BAR0.SemReadOffset + 4*dve.CompletionSemaphore)
			require.NoError(t, err)
			assert.Equal(t, uint32(1), v, "the event-accel descriptor incremented the completion semaphore")

			// A second identical load is a cache hit that moves nothing.
			before := simDev.Stats()
			rep2, err := l.Load(nc, nil)
			require.NoError(t, err)
			assert.True(t, rep2.CacheHit)
			assert.Zero(t, rep2.Bytes)
			assert.Equal(t, before, simDev.Stats(), "no register or memory access at all")

			// Another table set replaces it, then the defaults load again.
			other := tables.Clone()
			other.Opcode[0] ^= 0xFF
			rep3, err := l.Load(nc, &other)
			require.NoError(t, err)
			assert.False(t, rep3.CacheHit)
			rep4, err := l.Load(nc, nil)
			require.NoError(t, err)
			assert.False(t, rep4.CacheHit, "the core now holds the other set")
		})
	}
}
