package dve

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

const (
	tpbWindow = 0x400_0000 // 64 MiB per NeuronCore
	sbufHalf  = 0x200_0000 // the lower 32 MiB is SBUF
)

func TestDestinations(t *testing.T) {
	wantNames := map[hwarch.Generation][]string{
		hwarch.Sunda:   {TableOpcode, TableControlFast, TableDatapath, TableParamRAM},
		hwarch.Cayman:  {TableOpcode, TableControlFast, TableControlSlow, TableDatapath, TableParamRAM},
		hwarch.Mariana: {TableOpcode, TableControlFast, TableControlSlow, TableDatapath, TableParamRAM},
	}
	for _, g := range hwarch.Generations() {
		at := archFor(t, g)
		sizes, err := Sizes(at)
		require.NoError(t, err)
		for nc := range at.Khal.TPBBases() {
			t.Run(fmt.Sprintf("%s/nc%d", g, nc), func(t *testing.T) {
				base, err := AXIBase(at, nc)
				require.NoError(t, err)
				psum, err := at.Khal.PSUMBase(nc)
				require.NoError(t, err)
				assert.Equal(t, psum-0x200_0000, base, "the PSUM half's base, counted from the TPB window start")
				ds, err := Destinations(at, nc)
				require.NoError(t, err)
				require.Len(t, ds, at.Khal.DVETableCount())
				names := make([]string, len(ds))
				for i, d := range ds {
					names[i] = d.Name
					assert.Equal(t, base+d.Offset, d.Addr, d.Name)
					assert.Equal(t, sizes[d.Name], d.Size, d.Name)
					assert.NotZero(t, d.Size, d.Name)
					assert.Equal(t, d.Addr+d.Size, d.End())
					// Inside the NC's TPB window, above its SBUF half.
					assert.GreaterOrEqual(t, d.Offset, uint64(sbufHalf), d.Name)
					assert.LessOrEqual(t, d.Offset+d.Size, uint64(tpbWindow), d.Name)
				}
				assert.Equal(t, wantNames[g], names, "load order")
				pr := ds[len(ds)-1]
				prOff, prSize := at.Khal.DVEParameterRAM()
				assert.Equal(t, Dest{Name: TableParamRAM, Offset: prOff, Addr: base + prOff, Size: prSize}, pr)

				sorted := append([]Dest(nil), ds...)
				sort.Slice(sorted, func(i, j int) bool { return sorted[i].Offset < sorted[j].Offset })
				for i := 1; i < len(sorted); i++ {
					assert.LessOrEqual(t, sorted[i-1].End(), sorted[i].Addr,
						"%s overlaps %s", sorted[i-1].Name, sorted[i].Name)
				}
			})
		}
		t.Run(g.String()+"/nc out of range", func(t *testing.T) {
			for _, nc := range []int{-1, len(at.Khal.TPBBases())} {
				_, err := Destinations(at, nc)
				assert.ErrorIs(t, err, arch.ErrIndex)
			}
		})
	}
	t.Run("nil arch", func(t *testing.T) {
		_, err := Destinations(nil, 0)
		assert.ErrorIs(t, err, ErrNoArch)
	})
}

func TestDestinationsSeedOffsets(t *testing.T) {
	// seed 001 §3: cayman == mariana {opcode 0x2B82000, control-fast 0x2B80000,
	// control-slow 0x2B81000, datapath 0x2B86000}, param RAM 0x2B87000.
	want := map[string]uint64{
		TableOpcode: 0x2B82000, TableControlFast: 0x2B80000, TableControlSlow: 0x2B81000,
		TableDatapath: 0x2B86000, TableParamRAM: 0x2B87000,
	}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		t.Run(g.String(), func(t *testing.T) {
			ds, err := Destinations(archFor(t, g), 0)
			require.NoError(t, err)
			for _, d := range ds {
				assert.Equal(t, want[d.Name], d.Offset, d.Name)
			}
		})
	}
	t.Run("cayman == mariana", func(t *testing.T) {
		for nc := range archFor(t, hwarch.Cayman).Khal.TPBBases() {
			c, err := Destinations(archFor(t, hwarch.Cayman), nc)
			require.NoError(t, err)
			m, err := Destinations(archFor(t, hwarch.Mariana), nc)
			require.NoError(t, err)
			assert.Equal(t, c, m, "nc %d", nc)
		}
	})
}

func TestSundaImplicitOffsets(t *testing.T) {
	at := archFor(t, hwarch.Sunda)
	_, ok := at.Khal.DVETableOffsets()
	require.False(t, ok, "sunda has no get_dve_table_offsets")
	sz := at.Khal.DVETableSizes()
	prOff, _ := at.Khal.DVEParameterRAM()
	require.Equal(t, uint64(0x2B84000), prOff)

	tests := []struct {
		name       string
		off, size  uint64
		wantOff    uint64
		wantSize   uint64
		wantNextAt uint64
	}{
		{TableOpcode, SundaOpcodeOffset, sz.Opcode, 0x2B80000, 0x2000, SundaControlFastOffset},
		{TableControlFast, SundaControlFastOffset, sz.ControlFast, 0x2B82000, 0x1000, SundaDatapathOffset},
		{TableDatapath, SundaDatapathOffset, sz.Datapath, 0x2B83000, 0x1000, prOff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantOff, tc.off)
			assert.Equal(t, tc.wantSize, tc.size)
			assert.Equal(t, tc.wantNextAt, tc.off+tc.size, "contiguous, no gap or overlap")
		})
	}
	assert.Equal(t, prOff, SundaDatapathOffset+sz.Datapath, "datapath ends exactly at the param RAM")
	ds, err := Destinations(at, 1)
	require.NoError(t, err)
	base, _ := AXIBase(at, 1)
	tpb, _ := at.Khal.TPBBase(1)
	assert.Equal(t, tpb, base, "sunda's PSUM half follows its SBUF half in the device's address space")
	for i := 1; i < len(ds); i++ {
		assert.Equal(t, ds[i-1].End(), ds[i].Addr, "%s then %s", ds[i-1].Name, ds[i].Name)
	}
	assert.Equal(t, base+0x2B80000, ds[0].Addr)
	assert.Equal(t, base+0x2B84400, ds[len(ds)-1].End())
}

func TestTransfers(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			at := archFor(t, g)
			tb := defaults(t, g)
			tr, err := Transfers(at, 1, tb)
			require.NoError(t, err)
			ds, err := Destinations(at, 1)
			require.NoError(t, err)
			require.Len(t, tr, len(ds))
			var fp []byte
			for i, x := range tr {
				assert.Equal(t, ds[i], x.Dest)
				assert.EqualValues(t, x.Size, len(x.Data))
				assert.Equal(t, tb.Get(x.Name), x.Data)
				fp = append(fp, x.Data...)
			}
			// The transfers carry exactly the fingerprinted bytes, in order.
			all := Tables{Opcode: fp}
			assert.Equal(t, Fingerprint(g, tb), Fingerprint(g, all))

			bad := tb.Clone()
			bad.Datapath = bad.Datapath[:8]
			_, err = Transfers(at, 0, bad)
			assert.ErrorIs(t, err, ErrSize)
			_, err = Transfers(at, 99, tb)
			assert.ErrorIs(t, err, arch.ErrIndex)
		})
	}
}
