package systemtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/dve"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// remoteOutcome is what the runtime's DMA work left behind on one device.
type remoteOutcome struct {
	CopiedBack []byte     // host → device → host
	DVE        dve.Report // the table load
	PSUM, SBUF []byte     // the matmul program's results
	Engines    int        // engines the program ran
	NowPS      uint64     // the device's virtual clock at the end
}

// TestRuntimeOverRemote runs the runtime's DMA work — host ↔ device copies
// with marker completion, the DVE table load and a matmul program staged
// by DMA and started over CSR — on a device served over the remote
// protocol (whose host memory the DMA engines reach through HOST_*
// requests), and on the same kind of device in process. Everything ends the
// same, the virtual clock included: the runtime does the same accesses and
// sleeps either way.
func TestRuntimeOverRemote(t *testing.T) {
	prog, err := asm.Assemble("matmul.s", []byte(matmulProgram))
	require.NoError(t, err)
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			src := pattern(300*1024+20, uint64(g))
			w, x := pattern(128*128*2, 1), pattern(128*512*2, 2)
			for i := 1; i < len(w); i += 2 {
				w[i] &= 0x3F // bf16 of modest exponent: finite products
			}
			for i := 1; i < len(x); i += 2 {
				x[i] &= 0x3F
			}
			run := func(t *testing.T, overRemote bool) remoteOutcome {
				simDev, err := sim.NewDevice(sim.DeviceConfig{Generation: g, Ready: true})
				require.NoError(t, err)
				var dev ndl.Device = simDev
				if overRemote {
					dev = openRemote(t, simDev)
				}
				up, err := bringup.BringUp(dev, bringup.Options{NoReset: true})
				require.NoError(t, err)
				m, err := dma.New(up)
				require.NoError(t, err)
				mem, err := dmem.New(up.Geometry, dmem.Options{ChannelBytes: up.HBMChannelBytes})
				require.NoError(t, err)
				var out remoteOutcome

				geo := up.Geometry
				host := m.Host()
				hbuf, err := host.HostAlloc(uint64(len(src)), 4096)
				require.NoError(t, err)
				require.NoError(t, host.HostWrite(hbuf, src))
				devAddr := geo.HBM[0].Base + 64*hwarch.MiB
				_, err = m.Copy(0, devAddr, geo.HostAddress(hbuf), uint64(len(src)))
				require.NoError(t, err)
				back, err := host.HostAlloc(uint64(len(src)), 4096)
				require.NoError(t, err)
				_, err = m.Copy(0, geo.HostAddress(back), devAddr, uint64(len(src)))
				require.NoError(t, err)
				out.CopiedBack = make([]byte, len(src))
				require.NoError(t, host.HostRead(back, out.CopiedBack))
				require.NoError(t, host.HostFree(hbuf))
				require.NoError(t, host.HostFree(back))

				out.DVE, err = dve.NewLoader(m, mem, arch.MustFor(g, arch.Options{})).Load(geo.NeuronCores-1, nil)
				require.NoError(t, err)

				r := runnerOn(up, m, mem, 1)
				require.NoError(t, r.WriteTile(false, 0, 128, 0, w))
				require.NoError(t, r.WriteTile(false, 0, 128, 0x100, x))
				res, err := r.Run(prog)
				require.NoError(t, err)
				out.Engines = len(res.Engines)
				out.PSUM, out.SBUF = make([]byte, 128*512*4), make([]byte, 128*512*4)
				require.NoError(t, r.ReadTile(true, 0, 128, 0, out.PSUM))
				require.NoError(t, r.ReadTile(false, 0, 128, 0x900, out.SBUF))
				out.NowPS = uint64(simDev.Now())
				return out
			}
			local := run(t, false)
			remote := run(t, true)
			assert.Equal(t, src, local.CopiedBack, "the local copies")
			assert.Equal(t, 2, local.Engines)
			assert.NotEmpty(t, local.DVE.Staged)
			assert.Equal(t, local, remote, "the remote run ends as the local one")
		})
	}
}
