package systemtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// fabricSystem builds a system and brings every device up through the
// runtime, one region table for each (a table holds 16 V3/V4 devices).
func fabricSystem(t testing.TB, cfg fabric.Config) (*fabric.System, []*dma.DMA) {
	t.Helper()
	cfg.Ready = true
	s, err := fabric.New(cfg)
	require.NoError(t, err)
	var ms []*dma.DMA
	for i, d := range s.Devices() {
		up, err := bringup.BringUp(d, bringup.Options{NoReset: true, Table: csr.NewTable(0), Switch: switchOf(cfg.Generation)})
		require.NoError(t, err, "device %d", i)
		m, err := dma.New(up)
		require.NoError(t, err)
		ms = append(ms, m)
	}
	return s, ms
}

// switchOf is the switch family a system of g has by default (the rule of
// the commands and scenario files).
func switchOf(g hwarch.Generation) hwarch.SwitchFamily {
	return hwarch.DefaultSwitchFamily(g)
}

// TestFabricWriteLandsOnTheNeighbour: a DMA copy of device 0 into a
// neighbour window (B0_s, V3/V4) or the fabric window lands in the other
// device's HBM after the fabric's time, on every generation and both
// network models.
func TestFabricWriteLandsOnTheNeighbour(t *testing.T) {
	for _, tc := range []struct {
		gen     hwarch.Generation
		devices int
	}{{hwarch.Sunda, 16}, {hwarch.Cayman, 16}, {hwarch.Mariana, 32}} {
		for _, model := range []fabric.Model{fabric.Aware, fabric.Free} {
			t.Run(fmt.Sprintf("%s/%s", tc.gen, model), func(t *testing.T) {
				p := fabric.DefaultParams(tc.gen)
				p.Model = model
				s, ms := fabricSystem(t, fabric.Config{Generation: tc.gen, Devices: tc.devices, Params: &p})
				geo := hwarch.MustGeometry(tc.gen)
				const n = 100*1024 + 8
				src := geo.HBM[0].Base + 16*hwarch.MiB
				data := pattern(n, 11)
				require.NoError(t, ms[0].WriteDevice(src, data))

				type dest struct {
					name string
					dev  int
					addr uint64
				}
				var dests []dest
				at := geo.HBM[0].Base + 32*hwarch.MiB
				if len(geo.NeighbourWindows) > 0 && tc.gen != hwarch.Mariana {
					nb := s.Topology().Neighbours[0]
					dests = append(dests, dest{"B0_3", nb[3], geo.NeighbourWindows[3] + at})
				}
				far, err := hwarch.FabricAddress(tc.devices-1, at)
				require.NoError(t, err)
				dests = append(dests, dest{"fabric window", tc.devices - 1, far})
				for _, d := range dests {
					before := s.Now()
					_, err := ms[0].Copy(0, d.addr, src, n)
					require.NoError(t, err, "%s: %+v", d.name, s.Stats())
					s.Advance(100 * sim.Microsecond)
					got := make([]byte, n)
					require.NoError(t, ms[d.dev].ReadDevice(at, got))
					require.True(t, bytes.Equal(data, got), "%s: device %d holds the bytes", d.name, d.dev)
					assert.Greater(t, s.Now(), before)
				}
				st := s.Stats()
				assert.Equal(t, uint64(len(dests)*2), st.Transfers, "two descriptors of at most 64 KiB each")
				assert.Equal(t, st.Transfers, st.Landed)
				assert.Zero(t, st.Dropped+st.LandErrors, st.LastError)
			})
		}
	}
}

// TestFabricLinkDown: with the link to the neighbour down, the copy's queue
// halts with the neighbour error and nothing lands; brought back up, the
// next copy lands.
func TestFabricLinkDown(t *testing.T) {
	s, ms := fabricSystem(t, fabric.Config{Generation: hwarch.Cayman, Devices: 16})
	geo := hwarch.MustGeometry(hwarch.Cayman)
	at := geo.HBM[0].Base + 32*hwarch.MiB
	right := s.Topology().Neighbours[0][3]
	id, ok := s.LinkBetween(0, right)
	require.True(t, ok)
	require.NoError(t, s.SetLinkDown(id, true))
	require.NoError(t, ms[0].WriteDevice(at, pattern(4096, 3)))
	_, err := ms[0].Copy(0, geo.NeighbourWindows[3]+at+4096, at, 4096)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "halted")
	eng, q, err := udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	qs, err := s.Device(0).DMAQueue(eng, q)
	require.NoError(t, err)
	assert.NotZero(t, qs.Status&udma.ErrNeighbour, "status %#x", qs.Status)
}

// TestFabricReducingWrite: an fp32 add-write across the fabric is combined
// with the destination's values when it lands; a local one at once.
func TestFabricReducingWrite(t *testing.T) {
	s, ms := fabricSystem(t, fabric.Config{Generation: hwarch.Mariana, Devices: 32})
	geo := hwarch.MustGeometry(hwarch.Mariana)
	at := geo.HBM[0].Base + 32*hwarch.MiB
	const n = 1 << 17 // 32 Ki floats: two descriptors
	a, b := make([]float32, n/4), make([]float32, n/4)
	for i := range a {
		a[i], b[i] = float32(i), float32(2*i)+0.5
	}
	require.NoError(t, ms[0].WriteDevice(at, f32bytes(a)))
	require.NoError(t, ms[20].WriteDevice(at, f32bytes(b)))
	require.NoError(t, ms[0].WriteDevice(at+n, f32bytes(b)))
	add := udma.Reduce{Op: udma.ReduceAdd, Dtype: isa.FP32}
	q, err := ms[0].AllocQueue("reduce", 0, 64)
	require.NoError(t, err)
	far, err := hwarch.FabricAddress(20, at)
	require.NoError(t, err)
	v := dma.NewVring("reduce")
	require.NoError(t, v.AddReduce(at, far, n, add))  // into device 20
	require.NoError(t, v.AddReduce(at, at+n, n, add)) // locally
	require.NoError(t, q.Run(v))
	require.NoError(t, q.Wait(100000))
	s.Advance(50 * sim.Microsecond)
	want := make([]float32, n/4)
	for i := range want {
		want[i] = a[i] + b[i]
	}
	for _, c := range []struct {
		dev  int
		addr uint64
	}{{20, at}, {0, at + n}} {
		got := make([]byte, n)
		require.NoError(t, ms[c.dev].ReadDevice(c.addr, got))
		assert.Equal(t, f32bytes(want), got, "device %d", c.dev)
	}
	assert.Error(t, v.AddReduce(at, far, 6, add), "not whole fp32 elements")
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
