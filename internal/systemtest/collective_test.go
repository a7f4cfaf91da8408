package systemtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/enc"
	rtisa "github.com/neuronsim/neuronsim/runtime/isa"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// collectiveSystem brings a system up with one rank per device (NC 0) and
// buffers of bufBytes per rank from each device's allocator.
func collectiveSystem(t testing.TB, cfg fabric.Config, bufBytes uint64) (*fabric.System, *enc.Executor) {
	t.Helper()
	cfg.Ready = true
	s, err := fabric.New(cfg)
	require.NoError(t, err)
	tables := arch.MustFor(cfg.Generation, arch.Options{Switch: switchOf(cfg.Generation)})
	val := rtisa.New(tables)
	x := &enc.Executor{}
	for i, d := range s.Devices() {
		up, err := bringup.BringUp(d, bringup.Options{NoReset: true, Table: csr.NewTable(0), Switch: switchOf(cfg.Generation)})
		require.NoError(t, err, "device %d", i)
		m, err := dma.New(up)
		require.NoError(t, err)
		mem, err := dmem.New(up.Geometry, dmem.Options{ChannelBytes: up.HBMChannelBytes})
		require.NoError(t, err)
		h, err := mem.Alloc(dmem.Request{Size: bufBytes, Align: 4096, Channel: 0, Name: "collective"})
		require.NoError(t, err)
		blk, err := mem.Info(h)
		require.NoError(t, err)
		x.Ranks = append(x.Ranks, enc.Rank{Device: i, Base: blk.Addr,
			Runner: &program.Runner{Dev: up, DMA: m, Mem: mem, Tables: tables, Validator: val, NC: 0}})
	}
	return s, x
}

// runCollective writes random inputs, runs the schedule on the devices and
// checks the outputs against the CPU reference.
func runCollective(t *testing.T, x *enc.Executor, s *enc.Schedule, d enc.Dtype, seed uint64) enc.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	inputs := make([][]byte, s.Ranks)
	for r := range inputs {
		inputs[r] = make([]byte, s.InputBytes)
		for i := range inputs[r] {
			inputs[r][i] = byte(rng.Uint32())
		}
		if d == enc.Float32 || d == enc.BFloat16 {
			fillFloats(inputs[r], d, rng)
		}
		l := enc.LayoutOf(s, x.Ranks[r].Base)
		require.NoError(t, x.Ranks[r].Runner.DMA.WriteDevice(l.Input, inputs[r]))
	}
	res, err := x.Run(s, d)
	require.NoError(t, err)
	outputs := make([][]byte, s.Ranks)
	for r := range outputs {
		outputs[r] = make([]byte, s.OutputBytes)
		l := enc.LayoutOf(s, x.Ranks[r].Base)
		require.NoError(t, x.Ranks[r].Runner.DMA.ReadDevice(l.Output, outputs[r]))
	}
	require.NoError(t, enc.Verify(s.Op, d, inputs, outputs, enc.Options{}))
	return res
}

// fillFloats puts small random values (no NaN or overflow) in b.
func fillFloats(b []byte, d enc.Dtype, rng *rand.Rand) {
	es := d.Size()
	for i := 0; i+es <= len(b); i += es {
		v := float32(rng.IntN(2001)-1000) / 64
		bits := mathFloat32bits(v)
		if d == enc.BFloat16 {
			b[i], b[i+1] = byte(bits>>16), byte(bits>>24)
			continue
		}
		b[i], b[i+1], b[i+2], b[i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	}
}

// TestCollectivesOnDevices: AllReduce, AllGather and ReduceScatter with
// every algorithm (and AllToAll, Permute) on 32 mariana devices on the v1
// switch and on the 16-device Trn2 torus, with random data reduced by the
// DMA engines, equal the CPU reference: int32 exactly, fp32 and bf16 within
// the documented tolerance.
func TestCollectivesOnDevices(t *testing.T) {
	for _, sys := range []struct {
		gen     hwarch.Generation
		devices int
	}{{hwarch.Mariana, 32}, {hwarch.Cayman, 16}} {
		s, x := collectiveSystem(t, fabric.Config{Generation: sys.gen, Devices: sys.devices}, 8<<20)
		for _, op := range []enc.Op{enc.AllReduce, enc.AllGather, enc.ReduceScatter, enc.AllToAll, enc.Permute} {
			for _, algo := range []enc.Algo{enc.Ring, enc.Mesh, enc.RDH, enc.KangaRing, enc.Hier} {
				for _, d := range []enc.Dtype{enc.Int32, enc.Float32, enc.BFloat16} {
					opt := enc.Options{GroupSize: 4}
					sched, err := enc.Build(op, algo, sys.devices, int64(sys.devices)*1024, d.Size(), opt)
					if err != nil {
						continue // the algorithm does not do this op
					}
					t.Run(fmt.Sprintf("%s/%d/%s/%s/%s", sys.gen, sys.devices, op, algo, d), func(t *testing.T) {
						res := runCollective(t, x, sched, d, uint64(op)<<8|uint64(algo))
						assert.Positive(t, res.TimePS)
					})
				}
			}
		}
		st := s.Stats()
		assert.Zero(t, st.Dropped+st.LandErrors, st.LastError)
	}
}

func mathFloat32bits(f float32) uint32 { return math.Float32bits(f) }
